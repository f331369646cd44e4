//! Trials in the HTML report (docs/trials.md): the table of figures (`Table`), and a
//! flaky contract cell's trials side by side: one case whose trials disagree, a passing
//! trial's timeline beside a failing trial's, so what the agent did differently shows at
//! a glance.

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

/// A contract's cells, or a chaos or mutation run's prompts or variants, with trials,
/// the flaky ones first, in the terminal's words.
#[derive(Serialize)]
pub(super) struct Table {
    heads: (&'static str, &'static str),
    rows: Vec<Row>,
    estimator: &'static str,
}

#[derive(Serialize)]
struct Row {
    first: String,
    second: String,
    figures: String,
    flaky: bool,
}

/// The table of `s`'s rows with trials, and the line saying the run's scoring hides a
/// pass^k of 0 (shown with the section's warnings); `None` without trials.
pub(super) fn table(s: &Section<'_>) -> Option<(Table, Option<String>)> {
    let rows = crate::report::trials_rows::of(s)?;
    let hidden = rows
        .hidden
        .as_ref()
        .map(|line| text::line(&format!("the {} are {line}", rows.what), 500));
    let table = Table {
        heads: rows.heads,
        rows: rows
            .rows
            .iter()
            .map(|r| Row {
                first: text::line(r.first, 60),
                second: text::line(r.second, 100),
                figures: crate::run::trials_figures(r.trials, s.trials),
                flaky: r.trials.flaky,
            })
            .collect(),
        estimator: crate::run::ESTIMATOR,
    };
    Some((table, hidden))
}
