//! Plain-text renderings of run reports for the terminal: the contract matrix (✓ pass,
//! ✗ fail, ? not tested, · not applicable), what each scenario's chaos did and what the
//! agent did with it (its cases' outcome classes, and the worst case's reason), failures
//! with their reasons, the chaos-only prompts, and the verdict line with the pass mark and
//! why the run did not pass.

use std::fmt::Write as _;

use super::cases::CaseResult;
use super::coverage::Coverage;
use super::saved::TrialsInfo;
use super::verdict::{Judgement, RunVerdict};
use super::{ChaosReport, ContractReport};
use crate::checks::Verdict;
use crate::checks::spec::OutcomeClass;

/// The contract report: matrix, scenarios, failures, warnings, verdict.
/// `color`: ANSI colours for the marks (a terminal).
pub fn summary(r: &ContractReport, color: bool) -> String {
    summary_of(r, color, None)
}

/// The contract report, its trials figures shown as `measure` says (`ci`'s contract
/// carries no measure of its own: `ci` passes its run's), else as the report's.
pub fn summary_of(r: &ContractReport, color: bool, measure: Option<&TrialsInfo>) -> String {
    let mut out = format!("contract {:?}: {} agent calls", r.contract, r.agent_calls);
    // Cases whose setup failed (a reset, a restart) never called the agent: said, so that
    // the count is not read as one call per case.
    let uncalled = r.cases.iter().filter(|c| c.attempts == 0).count();
    if uncalled > 0 {
        let _ = write!(
            out,
            " ({uncalled} of {} cases never reached the agent: their setup failed)",
            r.cases.len()
        );
    }
    out.push_str("\n\n");
    matrix(r, color, &mut out);
    scenarios(&r.coverage, &mut out);
    outcomes(&r.coverage, &r.cases, &mut out);
    super::trials_shown::cells(r, measure, &mut out);
    for c in &r.cells {
        let (mark, reason) = match &c.verdict {
            Verdict::Fail(reason) => ("✗", reason.as_str()),
            Verdict::NotTested(reason) => ("? not tested:", reason.as_str()),
            Verdict::Pass(_) | Verdict::NotApplicable(_) => continue,
        };
        let _ = write!(
            out,
            "\n{mark} {} under {} ({}): {reason}",
            c.invariant, c.scenario, c.severity
        );
    }
    warnings(&r.warnings, &mut out);
    spent(r.usage.as_deref(), &mut out);
    out.push_str(&verdict_line(r.score.value, r.min_score, &r.judgement));
    out
}

fn matrix(r: &ContractReport, color: bool, out: &mut String) {
    let width = r.cells.iter().map(|c| c.invariant.len()).max().unwrap_or(9);
    let width = width.max(9);
    let _ = write!(out, "  {:<width$}", "invariant");
    for s in &r.scenarios {
        let _ = write!(out, "  {s}");
    }
    out.push('\n');
    let mut ids: Vec<&str> = vec![];
    for c in &r.cells {
        if !ids.contains(&c.invariant.as_str()) {
            ids.push(&c.invariant);
        }
    }
    for id in ids {
        let _ = write!(out, "  {id:<width$}");
        for s in &r.scenarios {
            let verdict = r
                .cells
                .iter()
                .find(|c| c.invariant == id && &c.scenario == s)
                .map(|c| &c.verdict);
            let (mark, ansi) = match verdict {
                Some(Verdict::Pass(_)) => ("✓", "32"),
                Some(Verdict::Fail(_)) => ("✗", "31"),
                Some(Verdict::NotTested(_)) => ("?", "33"),
                Some(Verdict::NotApplicable(_)) | None => ("·", "2"),
            };
            let pad = " ".repeat(s.chars().count().saturating_sub(1));
            if color {
                let _ = write!(out, "  \x1b[{ansi}m{mark}\x1b[0m{pad}");
            } else {
                let _ = write!(out, "  {mark}{pad}");
            }
        }
        out.push('\n');
    }
}

/// One line per scenario: cases judged, exchanges, faults fired (or never fired).
fn scenarios(coverage: &[Coverage], out: &mut String) {
    let width = coverage.iter().map(|c| c.scenario.len()).max().unwrap_or(0);
    out.push_str("\nscenarios:\n");
    for c in coverage {
        let _ = write!(
            out,
            "  {:<width$}  {} of {} cases judged, {} exchanges",
            c.scenario, c.judged, c.cases, c.exchanges
        );
        let fired: Vec<String> = c
            .rules
            .iter()
            .map(|r| match r.applied {
                0 => format!("{} ({}) never fired", r.stats.rule, r.stats.mode),
                n => format!("{} ({}) ×{n}", r.stats.rule, r.stats.mode),
            })
            .collect();
        if !fired.is_empty() {
            let _ = write!(out, "; faults: {}", fired.join(", "));
        }
        if c.not_tested.is_some() {
            out.push_str("  [NOT TESTED]");
        }
        out.push('\n');
    }
    let outside: usize = coverage.iter().map(|c| c.outside_cases).sum();
    if outside > 0 {
        let _ = writeln!(
            out,
            "  ({outside} exchanges belonged to no case, e.g. between cases or an exporter's \
             uploads: reported in the JSON, judged in none)"
        );
    }
}

/// What the agent did with faults: one line per scenario with outcome classes (counts,
/// worst first), and the reason of its first case of the worst class that carried bad
/// data on or made it up (`propagated`, `fabricated`).
fn outcomes(coverage: &[Coverage], cases: &[CaseResult], out: &mut String) {
    let with: Vec<&Coverage> = coverage.iter().filter(|c| !c.outcomes.is_empty()).collect();
    if with.is_empty() {
        return;
    }
    out.push_str("\nwhat the agent did with faults:\n");
    for c in with {
        let counts: Vec<String> = c
            .outcomes
            .iter()
            .map(|(class, n)| format!("{n} {}", class.as_str().replace('_', " ")))
            .collect();
        let _ = writeln!(out, "  {}: {}", c.scenario, counts.join(", "));
        let worst = [OutcomeClass::Propagated, OutcomeClass::Fabricated]
            .into_iter()
            .find_map(|class| {
                cases.iter().find_map(|k| {
                    let o = k.outcome.as_ref().filter(|o| o.class == class)?;
                    (k.scenario == c.scenario).then_some((k, o))
                })
            });
        if let Some((k, o)) = worst {
            let _ = writeln!(
                out,
                "    {} {:?}: {}",
                o.class,
                crate::text::cut(&k.prompt, 60),
                shown(&o.reason, 160)
            );
        }
    }
}

/// Text from the agent on one terminal line: control characters (escape sequences
/// included) shown as spaces, cut to `chars`.
fn shown(s: &str, chars: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::text::cut(&flat, chars)
}

/// The run's tokens and cost, when it saw an LLM answer.
fn spent(usage: Option<&crate::cost::RunUsage>, out: &mut String) {
    if let Some(line) = usage.and_then(crate::cost::RunUsage::summary_line) {
        let _ = write!(out, "\n{line}");
    }
}

fn warnings(list: &[String], out: &mut String) {
    for w in list {
        let _ = write!(out, "\nwarning: {w}");
    }
}

/// `score 87.0/100 (pass mark 70): PASS`, then why it is not a pass, one reason a line.
pub fn verdict_line(score: f64, min_score: f64, j: &Judgement) -> String {
    verdict_line_of("score", score, min_score, j)
}

/// The verdict line with the score named `what` (`ci`: `overall`). A run that is not
/// tested or an error shows no number (`NOT TESTED, no score: …`).
pub fn verdict_line_of(what: &str, score: f64, min_score: f64, j: &Judgement) -> String {
    let mut out = match j.verdict.no_score() {
        Some(why) => format!("\n\n{}, {why}\n", j.verdict.label()),
        None => format!(
            "\n\n{what} {score:.1}/100 (pass mark {min_score}): {}\n",
            j.verdict.label()
        ),
    };
    for r in &j.reasons {
        let _ = writeln!(out, "  - {r}");
    }
    if j.verdict != RunVerdict::Pass && j.verdict != RunVerdict::Fail {
        out.push_str(
            "  (exit 2: the run could not judge the agent; fix the above and run again)\n",
        );
    }
    out
}

/// The mark and reason of the first check of a case that did not pass.
fn first_problem(checks: &[Verdict]) -> (&'static str, &str) {
    let why = checks.iter().find_map(|v| match v {
        Verdict::Fail(r) => Some(("✗", r.as_str())),
        Verdict::NotTested(r) => Some(("? not judged:", r.as_str())),
        Verdict::Pass(_) | Verdict::NotApplicable(_) => None,
    });
    why.unwrap_or(("✗", "failed"))
}

/// The terminal summary of a mutation run: per type, then the failed variants. Its trials
/// figures shown as `measure` says (`ci` passes its run's, which its phase does not
/// carry), else as the report's.
pub fn mutation_summary(r: &super::MutationReport, measure: Option<&TrialsInfo>) -> String {
    // Variants, not trials (`types` counts a variant once, passed when all its trials did).
    let judged: usize = r.types.iter().map(|t| t.judged).sum();
    let passed: usize = r.types.iter().map(|t| t.passed).sum();
    let sent: usize = r.types.iter().map(|t| t.sent).sum();
    let under = r
        .chaos
        .as_deref()
        .map(|c| format!(" under {c:?}"))
        .unwrap_or_default();
    let mut out = format!(
        "mutation run{under}: {passed} of {judged} judged variants passed ({sent} sent, seed {})\n",
        r.seed
    );
    for t in &r.types {
        let dropped: usize = t.dropped.values().sum();
        let _ = write!(
            out,
            "  {:<28} {:>3}/{:<3} passed  (weight {}",
            t.kind.name(),
            t.passed,
            t.judged,
            t.weight
        );
        if dropped > 0 {
            let _ = write!(out, ", {dropped} dropped");
        }
        out.push_str(")\n");
    }
    if r.over_cap > 0 {
        let _ = writeln!(
            out,
            "  {} more variants left out by mutations.max_per_run",
            r.over_cap
        );
    }
    scenarios(&r.coverage, &mut out);
    outcomes(&r.coverage, &r.cases, &mut out);
    let measure = measure.or_else(|| r.run.as_ref().and_then(|i| i.trials.as_ref()));
    super::trials_shown::units(&r.trials, measure, "variants", &mut out);
    for m in r.mutants.iter().filter(|m| !m.passed) {
        let (mark, why) = first_problem(&m.checks);
        let shown: String = m.variant.text.chars().take(80).collect();
        let trial = m.trial.map(|t| format!(" trial {t}")).unwrap_or_default();
        let _ = write!(out, "\n{mark} [{}]{trial} {shown:?}: {why}", m.variant.kind);
    }
    warnings(&r.warnings, &mut out);
    spent(r.usage.as_deref(), &mut out);
    out.push_str(&verdict_line(r.score, r.min_score, &r.judgement));
    out
}

/// The chaos-only report: prompts, what the chaos did, failures, warnings, verdict; its
/// trials figures shown as `measure` says (as a mutation run's).
pub fn chaos_summary(r: &ChaosReport, measure: Option<&TrialsInfo>) -> String {
    let passed = r.prompts.iter().filter(|p| p.passed).count();
    let judged = r.prompts.iter().filter(|p| p.judged).count();
    let mut out = format!(
        "chaos run under {:?}: {passed} of {judged} judged prompts passed ({} prompts)\n",
        r.chaos,
        r.prompts.len()
    );
    scenarios(&r.coverage, &mut out);
    outcomes(&r.coverage, &r.cases, &mut out);
    let measure = measure.or_else(|| r.run.as_ref().and_then(|i| i.trials.as_ref()));
    super::trials_shown::units(&r.trials, measure, "prompts", &mut out);
    for p in r.prompts.iter().filter(|p| !p.passed) {
        let (mark, why) = first_problem(&p.checks);
        let _ = write!(out, "\n{mark} {:?}: {why}", p.prompt);
    }
    warnings(&r.warnings, &mut out);
    spent(r.usage.as_deref(), &mut out);
    out.push_str(&verdict_line(r.score, r.min_score, &r.judgement));
    out
}

/// The replay report: one line per session (its verdict, what the incident was, the
/// checks that failed or why it was not judged, the calls no recorded answer met).
pub fn replay_summary(r: &super::ReplayReport) -> String {
    let judged = r.sessions.iter().filter(|s| s.verdict.judged()).count();
    let passed = r.sessions.iter().filter(|s| s.verdict.passed()).count();
    let mut out = format!(
        "replay run: {passed} of {judged} judged sessions passed ({} sessions)\n",
        r.sessions.len()
    );
    for s in &r.sessions {
        let _ = write!(
            out,
            "\n{:<10} {} ({} of {} recorded answers used)",
            s.verdict.label(),
            s.id,
            s.served,
            s.recorded
        );
        if let Some(e) = &s.expected_failure {
            let _ = write!(out, "\n    incident: {e}");
        }
        for why in &s.reasons {
            let _ = write!(out, "\n    {why}");
        }
        for m in &s.misses {
            let _ = write!(out, "\n    no recorded answer: {m}");
        }
    }
    warnings(&r.warnings, &mut out);
    out.push_str(&verdict_line(r.score, r.min_score, &r.judgement));
    out
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
