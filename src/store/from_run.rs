//! From the run types to the store's records: what a run command calls from its progress
//! hook (`CaseRecord::from_result`), when its cells are judged (`CellRecord::from_cell`)
//! and when it ends (`ended`). The only place `store` reads `run`'s types.

use serde_json::{Value, json};

use super::record::{CaseRecord, CellRecord, RunKind, RunStatus, Verdict};
use crate::checks;
use crate::exchange::{Exchange, Outcome};
use crate::run::{CaseResult, CellResult, Judgement, RunVerdict};

impl Verdict {
    pub fn from_check(v: &checks::Verdict) -> Verdict {
        match v {
            checks::Verdict::Pass(_) => Verdict::Pass,
            checks::Verdict::Fail(_) => Verdict::Fail,
            checks::Verdict::NotApplicable(_) => Verdict::NotApplicable,
            checks::Verdict::NotTested(_) => Verdict::NotTested,
        }
    }
}

fn reason(v: &checks::Verdict) -> &str {
    match v {
        checks::Verdict::Pass(r)
        | checks::Verdict::Fail(r)
        | checks::Verdict::NotApplicable(r)
        | checks::Verdict::NotTested(r) => r,
    }
}

impl CaseRecord {
    /// A case as it ends, not yet judged (unless it could not be: then `not_tested`).
    pub fn from_result(phase: RunKind, c: &CaseResult) -> CaseRecord {
        let error = c.not_judged.clone().or_else(|| c.error.clone());
        let exchanges = c
            .traffic
            .as_ref()
            .map_or(Value::Null, |t| t.iter().map(|e| summary(e)).collect());
        CaseRecord {
            phase,
            scenario: c.scenario.clone(),
            input: c.prompt.clone(),
            answer: c.answer.clone(),
            error,
            verdict: c.not_judged.as_ref().map(|_| Verdict::NotTested),
            checks: Value::Array(vec![]),
            faults: serde_json::to_value(&c.faults).unwrap_or(Value::Null),
            exchanges,
            latency_ms: c.latency_ms,
            trial: c.trial,
            outcome: c.outcome.as_ref().map(|o| o.class),
            timeline: None,
        }
    }
}

/// One line of a case's traffic: enough to see what the agent called and what it met.
fn summary(e: &Exchange) -> Value {
    let (status, error) = match &e.outcome {
        Outcome::Response { response, .. } => (Some(response.status), None),
        Outcome::Error { error, status } => (*status, Some(error.kind.name())),
    };
    json!({
        "method": e.request.method,
        "url": e.request.url,
        "status": status,
        "error": error,
        "fault": e.fault.as_ref().map(|f| &f.mode),
        "ms": e.timings.total_ms,
    })
}

impl CellRecord {
    pub fn from_cell(phase: RunKind, c: &CellResult) -> CellRecord {
        CellRecord {
            phase,
            scenario: c.scenario.clone(),
            invariant: c.invariant.clone(),
            severity: c.severity,
            verdict: Verdict::from_check(&c.verdict),
            reason: reason(&c.verdict).to_string(),
            consistency: c.consistency.clone(),
        }
    }
}

/// The status and reason a run that ended with `judgement` is stored with.
pub fn ended(judgement: &Judgement) -> (RunStatus, Option<String>) {
    let reasons = (!judgement.reasons.is_empty()).then(|| judgement.reasons.join("; "));
    (RunStatus::of(judgement.verdict), reasons)
}

impl RunStatus {
    /// A finished run's status from its verdict.
    pub fn of(verdict: RunVerdict) -> RunStatus {
        match verdict {
            RunVerdict::Pass => RunStatus::Passed,
            RunVerdict::Fail => RunStatus::Failed,
            RunVerdict::NotTested => RunStatus::NotTested,
            RunVerdict::Error => RunStatus::Error,
        }
    }

    /// The verdict a run that ended with this status stands for: anything but a pass, a
    /// failure or not tested (cancelled, interrupted, an error, or not ended) is an error.
    pub fn verdict(self) -> RunVerdict {
        match self {
            RunStatus::Passed => RunVerdict::Pass,
            RunStatus::Failed => RunVerdict::Fail,
            RunStatus::NotTested => RunVerdict::NotTested,
            RunStatus::Queued
            | RunStatus::Running
            | RunStatus::Cancelled
            | RunStatus::Interrupted
            | RunStatus::Error => RunVerdict::Error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_that_could_not_be_judged_is_stored_not_tested_with_why() {
        let mut c = CaseResult::for_test("hi", Some("hello"));
        assert_eq!(CaseRecord::from_result(RunKind::Chaos, &c).verdict, None);
        c.not_judged = Some("upstream TLS refused".into());
        let r = CaseRecord::from_result(RunKind::Chaos, &c);
        assert_eq!(r.verdict, Some(Verdict::NotTested));
        assert_eq!(r.error.as_deref(), Some("upstream TLS refused"));
    }

    #[test]
    fn not_tested_runs_are_stored_not_tested_with_why() {
        let j = Judgement {
            verdict: RunVerdict::NotTested,
            reasons: vec!["no request crossed the proxy".into()],
        };
        assert_eq!(
            ended(&j),
            (
                RunStatus::NotTested,
                Some("no request crossed the proxy".into())
            )
        );
    }
}
