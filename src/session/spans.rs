//! A finished run's report as the spans `otel` exports: the run (kind, contract or profile,
//! verdict, score, seed) and each case (phase, scenario, trial, its final verdict as the
//! store keeps it, its outcome class), each with its real start and end.

use crate::checks::Verdict as Check;
use crate::otel::{CaseSpan, RunSpan};
use crate::run::{CaseResult, Report};
use crate::store::Verdict;

/// The spans of `report`, a run made with `seed`.
pub(super) fn run_span(report: &Report, seed: u64) -> RunSpan {
    let now = crate::exchange::now_unix_ms();
    let (started_ms, ended_ms) = match report.info() {
        Some(i) => (
            i.started_at_ms,
            i.started_at_ms + i.duration_ms.max(0.0) as u64,
        ),
        None => (now, now),
    };
    let mut cases: Vec<CaseSpan> = crate::store::case_verdicts(report)
        .into_iter()
        .map(|(kind, case, v)| {
            let verdict = match v {
                Verdict::Pass => "passed",
                Verdict::Fail => "failed",
                Verdict::NotApplicable | Verdict::NotTested => "not_tested",
            };
            case_span(kind.as_str(), case, verdict, started_ms)
        })
        .collect();
    let contract = match report {
        Report::Contract(r) => Some(r),
        Report::Ci(r) => r.contract.as_ref(),
        Report::Chaos(_) | Report::Mutation(_) | Report::Replay(_) => None,
    };
    for case in contract.iter().flat_map(|r| &r.cases) {
        cases.push(case_span(
            "contract",
            case,
            contract_verdict(case),
            started_ms,
        ));
    }
    let name = match report {
        Report::Contract(r) => Some(r.contract.clone()),
        Report::Chaos(r) => Some(r.chaos.clone()),
        Report::Mutation(_) | Report::Replay(_) | Report::Ci(_) => None,
    };
    let verdict = report.verdict().as_str().to_string();
    RunSpan {
        kind: report.kind().as_str().to_string(),
        name,
        started_ms,
        ended_ms: ended_ms.max(started_ms),
        verdict,
        score: Some(report.score()),
        seed,
        cases,
    }
}

/// A contract case's own verdict: failed when an invariant failed on it, passed when one
/// passed and none failed, else not tested.
fn contract_verdict(case: &CaseResult) -> &'static str {
    let checks = || case.checks.iter().map(|c| &c.verdict);
    if checks().any(|v| matches!(v, Check::Fail(_))) {
        "failed"
    } else if checks().any(|v| matches!(v, Check::Pass(_))) {
        "passed"
    } else {
        "not_tested"
    }
}

fn case_span(phase: &str, case: &CaseResult, verdict: &str, run_start: u64) -> CaseSpan {
    let traffic = case.traffic.as_deref().unwrap_or_default();
    let (started_ms, ended_ms) = match case.times {
        (0, _) => {
            // Not run by `run_case` (a wire-level mutation, a replay session): from its
            // first exchange, or the run's start, for as long as it took.
            let start = traffic
                .iter()
                .map(|e| e.timings.started_at_ms)
                .min()
                .unwrap_or(run_start);
            (start, start + case.latency_ms.max(0.0) as u64)
        }
        // From its prompt to its answer or its last call's end, whichever is later (a
        // late call after the answer stays inside its case's span).
        (start, answered) => {
            let last = traffic
                .iter()
                .map(|e| e.timings.started_at_ms + e.timings.total_ms.max(0.0) as u64)
                .max()
                .unwrap_or(answered);
            (start, answered.max(last))
        }
    };
    let outcome = case.outcome.as_ref().map(|o| o.class.as_str().to_string());
    CaseSpan {
        // The trace its tie gave it, also when its window held no traffic (its held late
        // calls are still its own); else its traffic's (cases not run by `run_case`).
        trace: case
            .trace_id
            .as_deref()
            .map(str::to_string)
            .or_else(|| traffic.iter().find_map(|e| e.trace_id.clone())),
        scenario: case.scenario.clone(),
        phase: phase.to_string(),
        trial: case.trial,
        verdict: match case.not_judged {
            Some(_) => "not_judged".into(),
            None => verdict.to_string(),
        },
        outcome,
        not_judged: case.not_judged.clone(),
        started_ms,
        ended_ms,
    }
}
