//! Markdown for `$GITHUB_STEP_SUMMARY` and pull-request comments: the verdict and why,
//! the scores, what failed (contract cells, chaos and mutation cases, each with the outcome
//! class of its case) and what the agent did with faults (outcome classes per scenario),
//! kept under 1 MiB (GitHub's limit for a step summary): rows past a cap are counted, not
//! listed. Text from the agent is escaped so it cannot become markup, HTML or a table
//! cell break.

use std::fmt::Write;

use super::outcomes::{self, APART, VERDICTS};
use super::text::{inert, line};
use super::view::{CaseView, Overview, Section};
use crate::checks::Verdict;
use crate::run::RunVerdict;
use crate::text::{Quotes, xml_entity};

/// Rows listed per table; the rest are counted.
pub(super) const MAX_ROWS: usize = 50;
/// Characters of one table cell.
const CELL_CHARS: usize = 300;

pub fn render(o: &Overview<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## flakestorm {}: {} {} — {}\n",
        o.kind,
        icon(o.verdict),
        o.verdict.label(),
        scored(o.verdict, o.score, Some(o.min_score))
    );
    for r in o.reasons {
        let _ = writeln!(out, "- {}", inline(r));
    }
    if !o.reasons.is_empty() {
        out.push('\n');
    }
    if !o.phases.is_empty() {
        out.push_str("| phase | score | weight | verdict |\n|---|---:|---:|---|\n");
        for p in &o.phases {
            let _ = match (
                p.score.filter(|_| p.verdict.is_none_or(RunVerdict::judged)),
                p.skipped,
            ) {
                (None, None) => writeln!(
                    out,
                    "| {} | no score | {} | {} |",
                    p.name,
                    p.weight,
                    p.verdict.map_or("", RunVerdict::label)
                ),
                (Some(s), _) => writeln!(
                    out,
                    "| {} | {s:.1} | {} | {} |",
                    p.name,
                    p.weight,
                    p.verdict.map_or("", RunVerdict::label)
                ),
                (None, Some(why)) => writeln!(
                    out,
                    "| {} | – | {} | skipped: {} |",
                    p.name,
                    p.weight,
                    cell(why)
                ),
            };
        }
        out.push('\n');
    }
    for s in &o.sections {
        section(&mut out, s, o.sections.len() > 1);
    }
    let mut facts = vec![];
    if let Some(i) = o.info {
        if let Some(a) = &i.agent {
            facts.push(format!("agent {}", escape(&inert(a))));
        }
        facts.push(format!("flakestorm {}", i.flakestorm));
        facts.push(super::text::duration(i.duration_ms));
    }
    if let Some(s) = o.sections.first() {
        facts.push(format!("seed {}", s.seed));
    }
    if let Some(d) = o.config_digest {
        facts.push(format!("config `{}`", short(d)));
    }
    let _ = writeln!(out, "<sub>{}</sub>", facts.join(" · "));
    out
}

fn section(out: &mut String, s: &Section<'_>, heading: bool) {
    if heading {
        let _ = writeln!(
            out,
            "### {} — {} {} {}\n",
            s.phase,
            scored(s.judgement.verdict, s.score, None),
            icon(s.judgement.verdict),
            s.judgement.verdict.label()
        );
        for r in &s.judgement.reasons {
            let _ = writeln!(out, "- {}", inline(r));
        }
        if !s.judgement.reasons.is_empty() {
            out.push('\n');
        }
    }
    if s.phase == crate::run::RunKind::Contract {
        contract_cells(out, s);
        super::markdown_trials::table(out, s);
    } else {
        failed_cases(out, s);
        super::markdown_trials::table(out, s);
    }
    outcome_table(out, s);
    if let Some(u) = s.usage {
        super::usage::markdown(out, u);
    }
}

/// "What the agent did with faults": per scenario with chaos, its cases per outcome class
/// (the five verdict classes with their shares, then those counted apart).
fn outcome_table(out: &mut String, s: &Section<'_>) {
    let rows: Vec<_> = s
        .coverage
        .iter()
        .filter(|c| !c.outcomes.is_empty())
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("**What the agent did with faults** (cases per outcome class)\n\n| scenario |");
    for c in VERDICTS.iter().chain(&APART) {
        let _ = write!(out, " {} |", outcomes::word(*c));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(VERDICTS.len() + APART.len()));
    out.push('\n');
    for c in rows.iter().take(MAX_ROWS) {
        let n = |class| c.outcomes.get(&class).copied().unwrap_or(0);
        let _ = write!(out, "| {} |", cell(&c.scenario));
        for (class, pct) in VERDICTS.iter().zip(outcomes::shares(&c.outcomes)) {
            let _ = match n(*class) {
                0 => write!(out, " – |"),
                k => write!(out, " {k} ({pct}%) |"),
            };
        }
        for class in APART {
            let _ = write!(out, " {} |", n(class));
        }
        out.push('\n');
    }
    more(out, rows.len());
}

/// ` (first failed case: `fabricated` why)`: the outcome class of the first case the
/// cell's invariant failed, when it has one; its reason only when the cell's does not
/// already say it (an `outcome` invariant's does).
fn first_failed(s: &Section<'_>, c: &crate::run::CellResult, why: &str) -> String {
    let failed = |k: &&CaseView<'_>| {
        k.case.scenario == c.scenario
            && k.checks
                .iter()
                .any(|(inv, v)| *inv == c.invariant && matches!(v, Verdict::Fail(_)))
    };
    let Some(o) = s
        .cases
        .iter()
        .find(failed)
        .and_then(|k| k.case.outcome.as_ref())
    else {
        return String::new();
    };
    match why.contains(&o.reason) {
        true => format!(" (first failed case: `{}`)", o.class),
        false => format!(
            " (first failed case: `{}` {})",
            o.class,
            escape(&line(&o.reason, CELL_CHARS))
        ),
    }
}

/// `` `fabricated` why; `` for a case with an outcome class; empty without.
fn class_of(c: &CaseView<'_>) -> String {
    c.case.outcome.as_ref().map_or_else(String::new, |o| {
        format!("`{}` {}; ", o.class, escape(&line(&o.reason, CELL_CHARS)))
    })
}

/// A contract's failed and untested cells, as a table.
fn contract_cells(out: &mut String, s: &Section<'_>) {
    let bad: Vec<_> = s
        .cells
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail(_) | Verdict::NotTested(_)))
        .collect();
    let judged = s.cells.iter().filter(|c| c.verdict.judged()).count();
    let _ = writeln!(
        out,
        "{} of {judged} judged cells failed ({} cells, {} not tested).\n",
        bad.iter()
            .filter(|c| matches!(c.verdict, Verdict::Fail(_)))
            .count(),
        s.cells.len(),
        bad.iter()
            .filter(|c| matches!(c.verdict, Verdict::NotTested(_)))
            .count()
    );
    if bad.is_empty() {
        return;
    }
    out.push_str("| scenario | invariant | severity | verdict | why |\n|---|---|---|---|---|\n");
    for c in bad.iter().take(MAX_ROWS) {
        let (label, why) = match &c.verdict {
            Verdict::Fail(w) => ("❌ fail", w),
            Verdict::NotTested(w) => ("⚠️ not tested", w),
            Verdict::Pass(w) | Verdict::NotApplicable(w) => ("", w),
        };
        let trials = c.consistency.as_ref().map_or_else(String::new, |t| {
            format!(
                " ({}{})",
                if t.flaky { "flaky: " } else { "" },
                crate::run::trials_figures(t, s.trials)
            )
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {label} | {}{trials}{} |",
            cell(&c.scenario),
            cell(&c.invariant),
            c.severity,
            cell(why),
            first_failed(s, c, why).replace('|', "\\|")
        );
    }
    more(out, bad.len());
}

/// The sessions that could not run, and the failed cases, as a table.
fn failed_cases(out: &mut String, s: &Section<'_>) {
    for (id, why) in &s.unrun {
        let _ = writeln!(
            out,
            "- ⚠️ session {} could not run: {}",
            cell(id),
            inline(why)
        );
    }
    if !s.unrun.is_empty() {
        out.push('\n');
    }
    let failed: Vec<_> = s.cases.iter().filter(|c| c.passed == Some(false)).collect();
    let judged = s.cases.iter().filter(|c| c.passed.is_some()).count();
    let _ = writeln!(
        out,
        "{} of {judged} judged cases failed ({} cases).\n",
        failed.len(),
        s.cases.len()
    );
    // Why some were not judged (a config error, chaos that never reached the agent).
    let unjudged = s.cases.iter().filter(|c| c.passed.is_none());
    if let Some(why) = unjudged.clone().find_map(|c| c.case.not_judged.as_deref()) {
        let n = unjudged.count();
        let _ = writeln!(out, "⚠️ {n} not judged, e.g.: {}\n", inline(why));
    }
    if failed.is_empty() {
        return;
    }
    out.push_str("| input | why |\n|---|---|\n");
    for c in failed.iter().take(MAX_ROWS) {
        let why: Vec<String> = c
            .checks
            .iter()
            .filter_map(|(label, v)| match v {
                Verdict::Fail(w) => Some(format!("{label}: {w}")),
                Verdict::Pass(_) | Verdict::NotApplicable(_) | Verdict::NotTested(_) => None,
            })
            .collect();
        let mut input = match &c.mutation {
            Some((kind, _)) => format!("`{kind}` {}", cell(&c.case.prompt)),
            None => cell(&c.case.prompt),
        };
        if let Some(t) = c.case.trial {
            let _ = write!(input, " (trial {t})");
        }
        let _ = writeln!(
            out,
            "| {input} | {}{} |",
            class_of(c).replace('|', "\\|"),
            cell(&why.join("; "))
        );
    }
    more(out, failed.len());
}

pub(super) fn more(out: &mut String, n: usize) {
    if n > MAX_ROWS {
        let _ = writeln!(
            out,
            "\n…and {} more (the JSON and HTML reports list them all).",
            n - MAX_ROWS
        );
    }
    out.push('\n');
}

/// `87.5/100 (pass mark 70)`, or why a run not tested or in error has no score.
fn scored(v: RunVerdict, score: f64, min_score: Option<f64>) -> String {
    match (v.no_score(), min_score) {
        (Some(why), _) => why.to_string(),
        (None, Some(m)) => format!("{score:.1}/100 (pass mark {m})"),
        (None, None) => format!("{score:.1}/100"),
    }
}

fn icon(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "✅",
        RunVerdict::Fail => "❌",
        RunVerdict::NotTested | RunVerdict::Error => "⚠️",
    }
}

/// `sha256:abcdef…` → its first 12 hex digits.
fn short(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    hex.chars().take(12).collect()
}

/// Text in a table cell: one line, clipped, escaped, pipes kept inside the cell.
pub(super) fn cell(s: &str) -> String {
    escape(&line(s, CELL_CHARS)).replace('|', "\\|")
}

/// Text in a list item.
pub(super) fn inline(s: &str) -> String {
    escape(&line(s, CELL_CHARS * 3))
}

/// Markdown and HTML punctuation made literal: GitHub renders inline HTML in summaries.
/// A pair of backticks stays a code span (`` `cites-source` `` renders as code, as
/// flakestorm's reasons mean it): nothing inside a code span is markup, so its text goes in
/// as it is. A lone backtick, or a pair with nothing between, is escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('`') {
        literal(&rest[..open], &mut out);
        let after = &rest[open + 1..];
        match after.find('`').filter(|&close| close > 0) {
            Some(close) => {
                out.push('`');
                out.push_str(&after[..close]);
                out.push('`');
                rest = &after[close + 1..];
            }
            None => {
                out.push_str("\\`");
                rest = after;
            }
        }
    }
    literal(rest, &mut out);
    out
}

/// Text outside code spans: Markdown punctuation backslash-escaped, HTML's as entities.
fn literal(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => match xml_entity(c, Quotes::None) {
                Some(e) => out.push_str(e),
                None => out.push(c),
            },
        }
    }
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
