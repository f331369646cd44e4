//! The HTML report: one self-contained page (inline CSS and SVG, no scripts, nothing
//! fetched) built with minijinja from `view::Overview`. This module turns the view into
//! the page's context (texts made inert and capped, numbers formatted, the contract
//! heatmap, resilience profile, timelines and next steps computed); templates/report.html
//! lays it out, and auto-escapes every value (the template's name ends in `.html`).

mod advice;
mod cases;
mod cells;
mod coverage;
mod failures;
mod heatmap;
mod marks;
mod profile;
mod timeline;
mod trials;

use std::collections::HashMap;
use std::sync::LazyLock;

use minijinja::Environment;
use serde::Serialize;

use super::text::{self, CAP};
use super::view::{CaseView, Overview, Section};
use crate::checks::Verdict;
use crate::run::RunVerdict;
use cases::{CaseCtx, case};
use cells::{CellCtx, cell, cell_anchor};
use heatmap::{Heatmap, heatmap};
/// A call in a few words (`tool web_search`, `LLM openai`), as the timeline labels it.
pub use timeline::target as target_name;

/// The timeline's drawing (an SVG macro), shared with the web view's live cases.
const TIMELINE_ALONE: &str = concat!(
    include_str!("templates/timeline.html"),
    "{{ timeline_svg(t) }}"
);
const TEMPLATE: &str = concat!(
    include_str!("templates/timeline.html"),
    include_str!("templates/report.html")
);

/// Compiled once; an error here is a bug in the template, reported by `render`.
static ENV: LazyLock<Result<Environment<'static>, String>> = LazyLock::new(|| {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .map_err(|e| format!("the HTML report template's syntax: {e}"))?;
    env.set_syntax(syntax);
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| format!("the HTML report template: {e}"))?;
    env.add_template("timeline.html", TIMELINE_ALONE)
        .map_err(|e| format!("the timeline template: {e}"))?;
    Ok(env)
});

/// One case's timeline on its own (the web view's live cases), drawn by the report's own
/// macro: `None` when there are no calls.
pub fn timeline_svg(exchanges: &[std::sync::Arc<crate::exchange::Exchange>]) -> Option<String> {
    let t = timeline::of(exchanges, &marks::Marks::default())?;
    let env = ENV.as_ref().ok()?;
    let template = env.get_template("timeline.html").ok()?;
    template
        .render(minijinja::context! { t => minijinja::value::Serde(t) })
        .ok()
}

/// The page for `overview`.
pub fn render(overview: &Overview<'_>) -> Result<String, String> {
    let env = ENV.as_ref().map_err(Clone::clone)?;
    let template = env
        .get_template("report.html")
        .map_err(|e| format!("the HTML report template: {e}"))?;
    template
        .render(minijinja::value::Serde(page(overview)))
        .map_err(|e| format!("rendering the HTML report: {e}"))
}

#[derive(Serialize)]
struct Page {
    kind: &'static str,
    verdict: &'static str,
    class: &'static str,
    reasons: Vec<String>,
    score: String,
    min_score: String,
    /// A run not tested or in error shows this instead of its score.
    no_score: Option<&'static str>,
    seeds: String,
    config_digest: Option<String>,
    agent: Option<String>,
    version: Option<String>,
    started: Option<String>,
    duration: Option<String>,
    phases: Vec<PhaseCtx>,
    sections: Vec<SectionCtx>,
    cap: usize,
}

#[derive(Serialize)]
struct PhaseCtx {
    name: &'static str,
    score: Option<String>,
    /// 0–100, the bar's width.
    bar: String,
    weight: String,
    verdict: Option<&'static str>,
    class: &'static str,
    skipped: Option<String>,
    /// A phase not tested or in error: no score, and why.
    no_score: Option<&'static str>,
}

#[derive(Serialize)]
struct SectionCtx {
    phase: &'static str,
    name: Option<String>,
    seed: u64,
    score: String,
    min_score: String,
    no_score: Option<&'static str>,
    verdict: &'static str,
    class: &'static str,
    reasons: Vec<String>,
    warnings: Vec<String>,
    coverage: Vec<coverage::CoverageCtx>,
    /// The run's LLM tokens and cost in one line (contract runs).
    usage: Option<String>,
    heatmap: Option<Heatmap>,
    /// What the agent did with the faults, per scenario and fault family.
    profile: Option<profile::Profile>,
    /// Cells, prompts or variants with trials: their figures and the estimator.
    trials: Option<trials::Table>,
    cells: Vec<CellCtx>,
    groups: Vec<Group>,
    passed: usize,
    failed: usize,
    not_judged: usize,
    /// The first failed case's anchor.
    first_failed: Option<String>,
    /// The first failed case with its timeline, beside the matrix.
    first: Option<failures::First>,
    /// Contract runs: the failures by cause across the cells, most cases first.
    causes: Vec<failures::Cause>,
}

#[derive(Serialize)]
struct Link {
    label: String,
    href: String,
    /// A case's outcome class (CSS class and words), shown beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    badge: Option<(&'static str, &'static str)>,
}

#[derive(Serialize)]
struct Group {
    #[serde(skip)]
    name: String,
    scenario: String,
    anchor: String,
    /// Failed cases: a group with none starts collapsed.
    failed: usize,
    cases: Vec<CaseCtx>,
}

fn verdict_class(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "pass",
        RunVerdict::Fail => "fail",
        RunVerdict::NotTested => "nt",
        RunVerdict::Error => "err",
    }
}

/// Class, mark and word for a check's or cell's verdict.
fn verdict_look(v: &Verdict) -> (&'static str, &'static str, &'static str) {
    match v {
        Verdict::Pass(_) => ("pass", "✓", "pass"),
        Verdict::Fail(_) => ("fail", "✗", "fail"),
        Verdict::NotApplicable(_) => ("na", "–", "not applicable"),
        Verdict::NotTested(_) => ("nt", "?", "not tested"),
    }
}

fn reason(v: &Verdict) -> &str {
    match v {
        Verdict::Pass(r) | Verdict::Fail(r) | Verdict::NotApplicable(r) | Verdict::NotTested(r) => {
            r
        }
    }
}

fn score(x: f64) -> String {
    format!("{x:.1}")
}

fn inert_all(items: &[String]) -> Vec<String> {
    items.iter().map(|s| text::line(s, 500)).collect()
}

fn page(o: &Overview<'_>) -> Page {
    let mut seeds: Vec<u64> = o.sections.iter().map(|s| s.seed).collect();
    seeds.dedup();
    Page {
        kind: o.kind,
        verdict: o.verdict.label(),
        class: verdict_class(o.verdict),
        reasons: inert_all(o.reasons),
        score: score(o.score),
        min_score: score(o.min_score),
        no_score: o.verdict.no_score(),
        seeds: seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        config_digest: o.config_digest.map(|d| text::line(d, 100)),
        agent: o
            .info
            .and_then(|i| i.agent.as_deref())
            .map(|a| text::line(a, 200)),
        version: o.info.map(|i| text::line(&i.flakestorm, 40)),
        started: o.info.map(|i| text::utc(i.started_at_ms)),
        duration: o.info.map(|i| text::duration(i.duration_ms)),
        phases: o
            .phases
            .iter()
            .map(|p| PhaseCtx {
                name: p.name,
                score: p
                    .score
                    .filter(|_| p.verdict.is_none_or(RunVerdict::judged))
                    .map(score),
                bar: format!("{:.0}", p.score.unwrap_or(0.0).clamp(0.0, 100.0)),
                weight: format!("{:.2}", p.weight),
                verdict: p.verdict.map(RunVerdict::label),
                class: p.verdict.map_or("skip", verdict_class),
                skipped: p.skipped.map(|s| text::line(s, 300)),
                no_score: p.verdict.and_then(RunVerdict::no_score),
            })
            .collect(),
        sections: o.sections.iter().map(section).collect(),
        cap: CAP,
    }
}

fn section(s: &Section<'_>) -> SectionCtx {
    // Cases grouped by scenario, scenarios in the order their first case ran.
    let mut groups: Vec<Group> = vec![];
    for (i, cv) in s.cases.iter().enumerate() {
        let name = cv.case.scenario.as_str();
        let at = match groups.iter().position(|g| g.name == name) {
            Some(at) => at,
            None => {
                groups.push(Group {
                    name: name.to_string(),
                    scenario: text::line(name, 100),
                    anchor: format!("{}-s{}", s.phase, groups.len()),
                    failed: 0,
                    cases: vec![],
                });
                groups.len() - 1
            }
        };
        groups[at].failed += usize::from(cv.passed == Some(false));
        groups[at].cases.push(case(s, cv, i));
    }
    let anchors: HashMap<&str, String> = groups
        .iter()
        .map(|g| (g.name.as_str(), g.anchor.clone()))
        .collect();
    let count = |p: Option<bool>| s.cases.iter().filter(|c| c.passed == p).count();
    let heatmap = (!s.cells.is_empty()).then(|| heatmap(s, &anchors));
    let (trials, hidden) = trials::table(s).map_or((None, None), |(t, h)| (Some(t), h));
    SectionCtx {
        phase: s.phase.as_str(),
        name: s.name.map(|n| text::line(n, 100)),
        seed: s.seed,
        score: score(s.score),
        min_score: score(s.min_score),
        no_score: s.judgement.verdict.no_score(),
        verdict: s.judgement.verdict.label(),
        class: verdict_class(s.judgement.verdict),
        reasons: inert_all(&s.judgement.reasons),
        warnings: inert_all(s.warnings)
            .into_iter()
            .chain(
                s.unrun.iter().map(|(id, why)| {
                    text::line(&format!("session `{id}` could not run: {why}"), 500)
                }),
            )
            .chain(hidden)
            .collect(),
        coverage: coverage::of(s),
        usage: coverage::run_usage(s),
        cells: s
            .cells
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Fail(_) | Verdict::NotTested(_)))
            .map(|c| cell(s, c))
            .collect(),
        heatmap,
        profile: profile::of(s),
        trials,
        groups,
        passed: count(Some(true)),
        failed: count(Some(false)),
        not_judged: count(None),
        first_failed: s
            .cases
            .iter()
            .position(|c| c.passed == Some(false))
            .map(|i| CaseView::anchor(s.phase, i)),
        first: failures::first(s),
        causes: match s.cells.is_empty() {
            true => vec![],
            false => failures::causes(s, |_| true, |_| true),
        },
    }
}

#[cfg(test)]
mod tests;
