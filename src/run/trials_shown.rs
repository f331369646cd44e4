//! Trials in words, the same in the terminal and every report format (docs/trials.md):
//! which pass^k a line shows beside pass^1 (none when each case ran once), pass@k beside
//! it, the estimator named, and the one line that says when `scoring.consistency: mean`
//! hides a pass^k of 0. Also the terminal's blocks of trials.

use std::fmt::Write as _;

use super::saved::TrialsInfo;
use super::{CaseTrials, Consistency, ContractReport};
use crate::config::ConsistencyScore;

/// The estimators, named once wherever figures are shown.
pub const ESTIMATOR: &str = "for a case run n times with c passes, pass^k = C(c,k)/C(n,k) is \
     the unbiased estimator of the chance that k trials all pass (τ-bench's convention, not \
     \"the first k trials all passed\") and pass@k = 1 − C(n−c,k)/C(n,k) of the chance that \
     at least one does; a cell's figures are the mean of its cases'";

/// The k shown beside pass^1: the run's `scoring.k` under `pass_k`, else every trial;
/// `None` when the figures have one trial per case (pass^1 is all there is).
pub fn shown_k(t: &Consistency, info: Option<&TrialsInfo>) -> Option<u32> {
    let n = t.pass_hat_k.len() as u32;
    let k = info.and_then(|i| i.k).unwrap_or(n).min(n);
    (k > 1).then_some(k)
}

/// `17 of 24 trials passed, pass^1 0.71, pass^8 0.33, pass@8 0.99`, or with one trial
/// per case `1 of 1 trials passed, pass^1 1.00`.
pub fn figures(t: &Consistency, info: Option<&TrialsInfo>) -> String {
    let mut out = format!(
        "{} of {} trials passed, pass^1 {:.2}",
        t.passed,
        t.trials,
        t.pass_hat(1).unwrap_or(0.0)
    );
    if let Some(k) = shown_k(t, info) {
        let at = t.pass_at_k.get(k as usize - 1).copied().unwrap_or(0.0);
        let hat = t.pass_hat(k).unwrap_or(0.0);
        let _ = write!(out, ", pass^{k} {hat:.2}, pass@{k} {at:.2}");
    }
    out
}

/// One line when the run scores by pass^1 (`scoring.consistency: mean`) while some of
/// `items` (a label and its figures) pass sometimes but have a pass^n of 0: their score
/// does not show that no case of theirs passed all its trials.
pub fn hidden_zero<'a>(
    items: impl IntoIterator<Item = (String, &'a Consistency)>,
    info: Option<&TrialsInfo>,
) -> Option<String> {
    let mean = info.is_some_and(|i| i.consistency == ConsistencyScore::Mean);
    let hidden: Vec<(String, usize)> = items
        .into_iter()
        .filter(|(_, t)| t.pass_hat_k.len() > 1 && t.pass_hat(1).unwrap_or(0.0) > 0.0)
        .filter(|(_, t)| t.pass_hat_k.last().is_some_and(|p| *p == 0.0))
        .map(|(label, t)| (label, t.pass_hat_k.len()))
        .collect();
    let (label, n) = hidden.first().filter(|_| mean)?;
    let has = match hidden.len() {
        1 => "1 of them has".to_string(),
        many => format!("{many} of them have"),
    };
    Some(format!(
        "scored by pass^1 (scoring.consistency: mean), which hides that {has} a pass^n of \
         0.00, no case passing all its n trials (e.g. {label}: pass^{n} 0.00): \
         scoring.consistency: pass_k scores by pass^k"
    ))
}

/// The run's trials measure, when the report carries it.
fn info(r: &ContractReport) -> Option<&TrialsInfo> {
    r.run.as_ref().and_then(|i| i.trials.as_ref())
}

/// The terminal's block for a contract with trials: the flaky cells first, then every
/// cell's figures, the flaky cases by name, the estimator, and the hidden-zero line.
/// `measure`: the run's (`ci` passes its own, which its contract does not carry).
pub(super) fn cells(r: &ContractReport, measure: Option<&TrialsInfo>, out: &mut String) {
    let mut with: Vec<&super::CellResult> =
        r.cells.iter().filter(|c| c.consistency.is_some()).collect();
    if with.is_empty() {
        return;
    }
    let measure = measure.or_else(|| info(r));
    with.sort_by_key(|c| !c.consistency.as_ref().is_some_and(|t| t.flaky));
    let _ = writeln!(out, "\nconsistency over trials:\n  ({ESTIMATOR})");
    for c in &with {
        let Some(t) = &c.consistency else { continue };
        let _ = writeln!(
            out,
            "  {}{} under {}: {}",
            if t.flaky { "FLAKY " } else { "" },
            c.invariant,
            c.scenario,
            figures(t, measure)
        );
    }
    for t in r.trials.iter().filter(|t| t.consistency.flaky) {
        let _ = writeln!(
            out,
            "  flaky case: {:?} under {}: {} of {} trials passed",
            t.prompt, t.scenario, t.consistency.passed, t.consistency.trials
        );
    }
    let labelled = with.iter().filter_map(|c| {
        let t = c.consistency.as_ref()?;
        Some((format!("`{}` under `{}`", c.invariant, c.scenario), t))
    });
    if let Some(line) = hidden_zero(labelled, measure) {
        let _ = writeln!(out, "  note: the cells are {line}");
    }
}

/// The units (prompts, variants) whose trials disagreed, first in a chaos or mutation
/// summary, and the hidden-zero line over all of them.
/// `what`: what the units are (`prompts`, `variants`).
pub(super) fn units(
    trials: &[CaseTrials],
    measure: Option<&TrialsInfo>,
    what: &str,
    out: &mut String,
) {
    let flaky: Vec<&CaseTrials> = trials.iter().filter(|t| t.consistency.flaky).collect();
    for t in &flaky {
        let shown: String = t.prompt.chars().take(80).collect();
        let _ = write!(
            out,
            "\nFLAKY {shown:?}: {}",
            figures(&t.consistency, measure)
        );
    }
    if !flaky.is_empty() {
        let _ = write!(out, "\n  ({ESTIMATOR})");
    }
    let labelled = trials.iter().map(|t| {
        let shown: String = t.prompt.chars().take(60).collect();
        (format!("{shown:?}"), &t.consistency)
    });
    if let Some(line) = hidden_zero(labelled, measure) {
        let _ = write!(out, "\nnote: the {what} are {line}");
    }
}

#[cfg(test)]
#[path = "trials_shown_tests.rs"]
mod tests;
