//! A contract's cells as JUnit testcases: one per invariant and scenario, timed by the
//! scenario's cases, its failure's body listing each case the invariant failed with the
//! answer and the case's outcome class (the first one's heads the message).

use std::fmt::Write;

use super::{Case, Outcome, classes, outcome, trials};
use crate::checks::Verdict;
use crate::report::text::clip;
use crate::report::view::Section;

/// Contract: one testcase per cell, timed by its scenario's cases.
pub(super) fn of(s: &Section<'_>) -> Vec<Case> {
    s.cells
        .iter()
        .map(|cell| {
            let seconds = s
                .cases
                .iter()
                .filter(|c| c.case.scenario == cell.scenario)
                .map(|c| c.case.latency_ms)
                .sum::<f64>()
                / 1000.0;
            let (body, tag) = failing(s, cell);
            let (figures, flaky) = trials::of(s, cell);
            let mut properties = classes::cell_properties(cell);
            properties.extend(figures.into_iter().map(|(k, v)| (k.to_string(), v)));
            // The scenario's tokens and cost, on each of its cells.
            let mut spent = s.usage.iter().flat_map(|u| &u.scenarios);
            if let Some(u) = spent.find(|u| u.scenario == cell.scenario) {
                let p = crate::report::usage::properties(&u.spent);
                properties.extend(p.into_iter().map(|(k, v)| (format!("scenario.{k}"), v)));
            }
            let mut verdict = outcome(&cell.verdict, body);
            if let (Outcome::Failure { message, .. }, Some(tag)) = (&mut verdict, tag) {
                message.insert_str(0, &tag);
            }
            Case {
                classname: format!("contract.{}", cell.scenario),
                name: format!("{} [{}]", cell.invariant, cell.severity),
                seconds,
                outcome: verdict,
                properties,
                flaky,
            }
        })
        .collect()
}

/// A cell's failing cases, each with its reason, answer and outcome class; and the first
/// one's class tag, which heads the failure's message.
fn failing(s: &Section<'_>, cell: &crate::run::CellResult) -> (String, Option<String>) {
    let mut body = String::new();
    let mut tag = None;
    for c in s.cases.iter().filter(|c| c.case.scenario == cell.scenario) {
        for (_, v) in c.checks.iter().filter(|(inv, _)| *inv == cell.invariant) {
            let Verdict::Fail(why) = v else { continue };
            let class = classes::tag(c.case.outcome.as_ref());
            let _ = writeln!(body, "{class}{:?}: {why}", c.case.prompt);
            let _ = match (&c.case.answer, &c.case.error) {
                (Some(a), _) => writeln!(body, "  answer: {}", clip(a, 500)),
                (None, Some(e)) => writeln!(body, "  error: {e}"),
                (None, None) => Ok(()),
            };
            if let Some(o) = &c.case.outcome {
                classes::body(&mut body, o, "  ");
            }
            tag.get_or_insert(class);
        }
    }
    (body, tag)
}
