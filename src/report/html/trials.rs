//! A flaky contract cell's trials side by side (docs/trials.md): one case whose trials
//! disagree, a passing trial's timeline beside a failing trial's, so what the agent did
//! differently shows at a glance.

use serde::Serialize;

use super::marks;
use super::timeline::{self, Timeline};
use crate::checks::Verdict;
use crate::report::text;
use crate::report::view::{CaseView, Section};
use crate::run::CellResult;

#[derive(Serialize)]
pub(super) struct Pair {
    prompt: String,
    passed: Side,
    failed: Side,
}

#[derive(Serialize)]
struct Side {
    label: String,
    href: String,
    /// The trial's outcome class (CSS class and words), when it has one.
    badge: Option<(&'static str, &'static str)>,
    timeline: Option<Timeline>,
}

/// The first prompt of a flaky cell with a passing and a failing trial.
pub(super) fn pair(s: &Section<'_>, c: &CellResult) -> Option<Pair> {
    c.consistency.as_ref().filter(|t| t.flaky)?;
    let verdict_of = |cv: &CaseView<'_>| {
        cv.checks
            .iter()
            .find(|(label, _)| *label == c.invariant)
            .map(|(_, v)| matches!(v, Verdict::Pass(_)))
    };
    let mine: Vec<(usize, &CaseView<'_>)> = s
        .cases
        .iter()
        .enumerate()
        .filter(|(_, cv)| cv.case.scenario == c.scenario)
        .collect();
    let side = |i: usize, cv: &CaseView<'_>, word: &str| Side {
        label: format!("trial {} ({word})", cv.case.trial.unwrap_or(1)),
        href: CaseView::anchor(s.phase, i),
        badge: crate::report::outcomes::badge(cv.case.outcome.as_ref()),
        timeline: cv
            .case
            .traffic
            .as_deref()
            .and_then(|t| timeline::of(t, &marks::of(cv.case.outcome.as_ref()))),
    };
    for (i, failing) in mine.iter().filter(|(_, cv)| verdict_of(cv) == Some(false)) {
        let passing = mine
            .iter()
            .find(|(_, cv)| cv.case.prompt == failing.case.prompt && verdict_of(cv) == Some(true));
        if let Some((j, passing)) = passing {
            return Some(Pair {
                prompt: text::line(&failing.case.prompt, 100),
                passed: side(*j, passing, "passed"),
                failed: side(*i, failing, "failed"),
            });
        }
    }
    None
}

/// A contract's cells with trials, the flaky ones first, in the terminal's words.
#[derive(Serialize)]
pub(super) struct Table {
    rows: Vec<Row>,
    estimator: &'static str,
}

#[derive(Serialize)]
struct Row {
    invariant: String,
    scenario: String,
    figures: String,
    flaky: bool,
}

/// The table of `s`'s cells with trials, and the line saying the run's scoring hides a
/// pass^k of 0 (shown with the section's warnings); `None` without trials.
pub(super) fn table(s: &Section<'_>) -> Option<(Table, Option<String>)> {
    let mut with: Vec<&CellResult> = s.cells.iter().filter(|c| c.consistency.is_some()).collect();
    with.sort_by_key(|c| !c.consistency.as_ref().is_some_and(|t| t.flaky));
    let rows: Vec<Row> = with
        .iter()
        .filter_map(|c| {
            let t = c.consistency.as_ref()?;
            Some(Row {
                invariant: text::line(&c.invariant, 60),
                scenario: text::line(&c.scenario, 60),
                figures: crate::run::trials_figures(t, s.trials),
                flaky: t.flaky,
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let labelled = with.iter().filter_map(|c| {
        let t = c.consistency.as_ref()?;
        Some((format!("`{}` under `{}`", c.invariant, c.scenario), t))
    });
    let hidden = crate::run::hidden_zero(labelled, s.trials)
        .map(|line| text::line(&format!("the cells are {line}"), 500));
    let estimator = crate::run::ESTIMATOR;
    Some((Table { rows, estimator }, hidden))
}
