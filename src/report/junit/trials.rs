//! Trials in JUnit (docs/trials.md): a contract cell's consistency as its testcase's
//! properties, and when its trials disagree each failing trial as a Surefire
//! `flakyFailure`, which rerun-aware readers show as flaky; a chaos or mutation case's
//! testcase carries its prompt's or variant's figures, the same on each of its trials.

use crate::checks::Verdict;
use crate::report::view::{CaseView, Section};
use crate::run::Consistency;

/// A cell's trials: its consistency figures, and when they disagree the failing trials'
/// reasons (`flakyFailure`).
pub(super) fn of(
    s: &Section<'_>,
    cell: &crate::run::CellResult,
) -> (Vec<(&'static str, String)>, Vec<String>) {
    let Some(t) = &cell.consistency else {
        return (vec![], vec![]);
    };
    let properties = properties(s, t);
    if !t.flaky {
        return (properties, vec![]);
    }
    let failing = s
        .cases
        .iter()
        .filter(|c| c.case.scenario == cell.scenario)
        .flat_map(|c| {
            c.checks.iter().filter_map(move |(inv, v)| match v {
                Verdict::Fail(why) if *inv == cell.invariant => Some(format!(
                    "trial {} of {:?}: {why}",
                    c.case.trial.unwrap_or(1),
                    c.case.prompt
                )),
                Verdict::Fail(_)
                | Verdict::Pass(_)
                | Verdict::NotApplicable(_)
                | Verdict::NotTested(_) => None,
            })
        })
        .collect();
    (properties, failing)
}

/// A chaos or mutation case's properties: its prompt's or variant's figures (the report's
/// `trials` entry of its scenario or type and its text); none without trials.
pub(super) fn of_case(s: &Section<'_>, c: &CaseView<'_>) -> Vec<(String, String)> {
    let unit = c
        .mutation
        .as_ref()
        .map_or(c.case.scenario.as_str(), |m| &m.0);
    let found = s
        .units
        .iter()
        .find(|u| u.scenario == unit && u.prompt == c.case.prompt);
    let Some(u) = found else {
        return vec![];
    };
    properties(s, &u.consistency)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Figures as properties: trials, passes, pass^1, pass^k and pass@k at every trial, the
/// estimator, and the run's `scoring.k` when it is below the trials.
fn properties(s: &Section<'_>, t: &Consistency) -> Vec<(&'static str, String)> {
    let n = t.pass_hat_k.len();
    let mut properties = vec![
        ("trials", t.trials.to_string()),
        ("passed", t.passed.to_string()),
        ("flaky", t.flaky.to_string()),
        ("pass^1", format!("{:.4}", t.pass_hat(1).unwrap_or(0.0))),
        (
            "pass^k",
            format!("{:.4}", t.pass_hat_k.last().copied().unwrap_or(0.0)),
        ),
        ("k", n.to_string()),
        (
            "pass@k",
            format!("{:.4}", t.pass_at_k.last().copied().unwrap_or(0.0)),
        ),
        ("estimator", "unbiased: pass^k = C(c,k)/C(n,k)".into()),
    ];
    if let Some(k) = crate::run::shown_k(t, s.trials).filter(|k| *k as usize != n) {
        // The run scores by `scoring.k`, not every trial: that pass^k too.
        let at = |v: &[f64]| format!("{:.4}", v.get(k as usize - 1).copied().unwrap_or(0.0));
        properties.push(("scoring.k", k.to_string()));
        properties.push(("pass^scoring.k", at(&t.pass_hat_k)));
    }
    properties
}
