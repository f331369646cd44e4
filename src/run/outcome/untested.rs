//! The run-level reasons outcome classes give for a run being not tested (`verdict`):
//! cases whose call went around the proxy, and cases the wire allowed no class whose
//! outcome checks were therefore not tested. Pure.

use crate::run::cases::CaseResult;

/// Why the run tested less than it claims, because of its cases' outcomes.
pub(in crate::run) fn untested(cases: &[CaseResult]) -> Vec<String> {
    bypassed(cases)
        .into_iter()
        .chain(undecided(cases))
        .collect()
}

/// Cases a call went around the proxy in (design.md §6): their faults were not tested.
fn bypassed(cases: &[CaseResult]) -> Option<String> {
    let around: Vec<&CaseResult> = cases
        .iter()
        .filter(|c| c.outcome.as_ref().is_some_and(|o| o.bypassed))
        .collect();
    let first = around.first()?;
    let why = first.outcome.as_ref().map_or("", |o| o.reason.as_str());
    Some(format!(
        "{} case(s) made a call around the proxy, so the fault they were meant to meet was \
         not tested; the first ({:?} under `{}`): {why}",
        around.len(),
        first.prompt,
        first.scenario
    ))
}

/// Cases whose outcome check could not be tested because the wire allowed no class: a
/// cell they belong to may pass on its other cases, but the run tested less than it claims.
fn undecided(cases: &[CaseResult]) -> Option<String> {
    use crate::checks::spec::OutcomeClass;
    let open: Vec<&CaseResult> = cases
        .iter()
        .filter(|c| {
            let class = c.outcome.as_ref().map(|o| o.class);
            let untested = c.checks.iter().any(|k| k.verdict.is_not_tested());
            class == Some(OutcomeClass::Undecided) && untested
        })
        .collect();
    let first = open.first()?;
    let why = first.outcome.as_ref().map_or("", |o| o.reason.as_str());
    Some(format!(
        "{} case(s) could not be classified, so their outcome checks were not tested; the \
         first ({:?} under `{}`): {why}",
        open.len(),
        first.prompt,
        first.scenario
    ))
}
