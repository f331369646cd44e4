//! A failed or not-tested contract cell under the matrix: its reason, next steps, and its
//! cases; a failed cell's grouped by cause (`failures`), a few named and the rest counted,
//! so a cell that 300 cases failed stays a few lines.

use serde::Serialize;

use super::advice::{self, Facts};
use super::failures::{self, Cause, SHOWN};
use super::{Link, reason, text, trials, verdict_look};
use crate::checks::Verdict;
use crate::report::view::{CaseView, Section};
use crate::run::CellResult;

/// A failed or not-tested cell, with its next steps and its cases.
#[derive(Serialize)]
pub(super) struct CellCtx {
    pub(super) anchor: String,
    invariant: String,
    scenario: String,
    severity: String,
    verdict: &'static str,
    class: &'static str,
    reason: String,
    steps: Vec<String>,
    /// A failed cell: its failing cases by cause.
    causes: Vec<Cause>,
    /// A not-tested cell: its scenario's first cases, and how many more.
    cases: Vec<Link>,
    more: usize,
    /// A flaky cell: a passing and a failing trial of one case, timelines side by side.
    pair: Option<trials::Pair>,
}

/// The anchor of the detail of `cell` (failed and not-tested cells have one).
pub(super) fn cell_anchor(s: &Section<'_>, c: &CellResult) -> String {
    let i = s.invariants.iter().position(|x| *x == c.invariant);
    let j = s.scenarios.iter().position(|x| *x == c.scenario);
    format!(
        "{}-cell-{}-{}",
        s.phase,
        i.unwrap_or(usize::MAX),
        j.unwrap_or(usize::MAX)
    )
}

pub(super) fn cell(s: &Section<'_>, c: &CellResult) -> CellCtx {
    let (class, _, word) = verdict_look(&c.verdict);
    let failed = matches!(c.verdict, Verdict::Fail(_));
    let mine = |cv: &&CaseView<'_>| cv.case.scenario == c.scenario;
    // The first case the invariant failed gives the next steps.
    let first = s.cases.iter().filter(mine).find_map(|cv| {
        let failures: Vec<&str> = cv
            .checks
            .iter()
            .filter(|(label, v)| *label == c.invariant && matches!(v, Verdict::Fail(_)))
            .map(|(_, v)| reason(v))
            .collect();
        (!failures.is_empty()).then_some((cv, failures))
    });
    let steps = match (&c.verdict, first) {
        (Verdict::Fail(_), Some((cv, failures))) => {
            advice::next_steps(&Facts::of(cv.case, failures, s.coverage))
        }
        (Verdict::Fail(r), None) => advice::next_steps(&Facts {
            answer: None,
            error: None,
            failures: vec![r],
            calls: None,
            silent: None,
        }),
        _ => vec![],
    };
    let causes = match failed {
        true => failures::causes(s, |sc| sc == c.scenario, |inv| inv == c.invariant),
        false => vec![],
    };
    let all: Vec<Link> = match failed {
        true => vec![],
        false => s
            .cases
            .iter()
            .enumerate()
            .filter(|(_, cv)| cv.case.scenario == c.scenario)
            .map(|(i, cv)| failures::link(s, cv, i))
            .collect(),
    };
    let more = all.len().saturating_sub(SHOWN);
    CellCtx {
        anchor: cell_anchor(s, c),
        invariant: text::line(&c.invariant, 60),
        scenario: text::line(&c.scenario, 60),
        severity: c.severity.to_string(),
        verdict: word,
        class,
        reason: text::line(reason(&c.verdict), 500),
        steps,
        causes,
        cases: all.into_iter().take(SHOWN).collect(),
        more,
        pair: trials::pair(s, c),
    }
}
