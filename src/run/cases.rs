//! One case: reset the agent if configured, invoke it with a prompt under the installed
//! scenario, and collect its answer and its exchanges with the faults they met (design.md
//! §6: the case's journal window when cases run one at a time, or its trace id). Only the
//! judged attempt's traffic is the case's: earlier attempts (retried because no response
//! byte came back) are listed but their traffic is not judged. A case whose traffic met
//! flakestorm's own errors is not judged (`environment`).

use serde::{Deserialize, Serialize};

use super::RunContext;
use super::environment;
use crate::chaos::{mix, stream};
use crate::exchange::{FaultRecord, Target};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub scenario: String,
    pub prompt: String,
    /// The agent's answer; `None` when the invocation failed (see `error`).
    pub answer: Option<String>,
    /// Why there is no answer (timeout, HTTP error, unreachable, response path not found).
    pub error: Option<String>,
    pub latency_ms: f64,
    pub attempts: u32,
    /// Attempts before the judged one, each failed before any response byte.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_attempts: Vec<EarlierAttempt>,
    /// Why this case is not judged (an environment error, a lost trace id); its checks
    /// are then neither passed nor failed.
    pub not_judged: Option<String>,
    /// Faults and attacks fired on the agent's traffic during the case.
    pub faults: Vec<FaultRecord>,
    /// The agent's exchanges during the case, as the journal recorded them (redacted);
    /// `None` when they could not be attributed (cases ran concurrently under exclusive
    /// attribution, or the agent dropped the case's `traceparent` under header attribution).
    #[serde(rename = "exchanges")]
    pub traffic: Option<Vec<std::sync::Arc<crate::exchange::Exchange>>>,
    /// Contract runs: each invariant's verdict on this case (the cells say it per
    /// scenario); absent for cases that were not judged and in other runs, whose reports
    /// list checks per prompt or variant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CaseCheck>,
    /// Journal ids of the judged attempt's window, first and last.
    #[serde(skip)]
    pub window: (u64, u64),
}

/// One invariant's verdict on one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseCheck {
    pub invariant: String,
    #[serde(flatten)]
    pub verdict: crate::checks::Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlierAttempt {
    pub error: String,
    pub latency_ms: f64,
}

impl CaseResult {
    /// A case for unit tests: `prompt` answered `answer` (or not), nothing else.
    #[cfg(test)]
    pub(crate) fn for_test(prompt: &str, answer: Option<&str>) -> CaseResult {
        CaseResult {
            scenario: "s".into(),
            prompt: prompt.into(),
            answer: answer.map(Into::into),
            error: answer
                .is_none()
                .then(|| "agent answered HTTP 500: boom".into()),
            latency_ms: 1.0,
            attempts: 1,
            earlier_attempts: vec![],
            not_judged: None,
            faults: vec![],
            traffic: None,
            checks: vec![],
            window: (0, 0),
        }
    }

    /// The journal ids that belong to this case: its exchanges when attributed, else its
    /// window.
    pub(super) fn window_ids(&self) -> Vec<u64> {
        match &self.traffic {
            Some(t) => t.iter().map(|e| e.id).collect(),
            None => (self.window.0..=self.window.1).collect(),
        }
    }
}

/// Runs one case. `window` asks for the exchanges of this case: its journal window with one
/// case in flight, or with a `trace` id (sent as `traceparent`) the exchanges in it that
/// carry it (`None` if some carried none: the agent does not propagate it).
pub async fn run_case(
    ctx: &RunContext,
    scenario: &str,
    prompt: &str,
    window: bool,
    trace: Option<String>,
) -> CaseResult {
    let mut headers = http::HeaderMap::new();
    if let Some(t) = &trace {
        let span = &t[..16];
        let value = format!("00-{t}-{span}-01");
        headers.insert(
            "traceparent",
            value.parse().expect("hex is a valid header value"),
        );
    }
    let mut first = ctx.journal.peek_next_id();
    let reply = match ctx.agent.reset().await {
        Ok(()) => {
            let mark = |_| first = ctx.journal.peek_next_id();
            Ok(ctx.agent.invoke_marked(prompt, &headers, mark).await)
        }
        Err(e) => Err(format!("reset failed: {e}")),
    };
    let last = ctx.journal.peek_next_id().saturating_sub(1);
    // The agent's calls are recorded when their bodies end, which is before it answers.
    let mut slice = ctx.journal.slice(first, last);
    // Environment errors count whoever's they are: with cases in flight together, a
    // neighbour's refused upstream or 407 is this case's too.
    let not_judged = environment::problem(&slice);
    let (mut faults, mut traffic) = (vec![], None);
    if window {
        // Only calls chaos is about count: an exporter's own untraced span upload, or an
        // embeddings call (no rule applies to one), does not make every case beside it
        // unjudgeable.
        let untraced = slice.iter().any(|e| {
            e.trace_id.is_none()
                && match e.target {
                    Target::Tool { .. } | Target::Llm { .. } => true,
                    Target::Embeddings { .. } | Target::Other => false,
                }
        });
        if let Some(t) = &trace {
            slice.retain(|e| e.trace_id.as_deref() == Some(t));
        }
        if trace.is_none() || !untraced {
            for ex in &slice {
                faults.extend(ex.fault.iter().cloned().chain(ex.attacks.iter().cloned()));
            }
            traffic = Some(slice);
        }
    }
    let (answer, error, latency, attempts, earlier) = match reply {
        Err(why) => (None, Some(why), 0.0, 0, vec![]),
        Ok(r) => {
            let earlier = r
                .retried
                .iter()
                .map(|a| EarlierAttempt {
                    error: a.error.to_string(),
                    latency_ms: a.latency.as_secs_f64() * 1000.0,
                })
                .collect();
            let ms = r.latency.as_secs_f64() * 1000.0;
            let (answer, error) = match r.answer {
                Ok(a) => (Some(a), None),
                Err(e) => (None, Some(e.to_string())),
            };
            (answer, error, ms, r.attempts, earlier)
        }
    };
    CaseResult {
        scenario: scenario.to_string(),
        prompt: prompt.to_string(),
        answer,
        error,
        latency_ms: latency,
        attempts,
        earlier_attempts: earlier,
        not_judged,
        faults,
        traffic,
        checks: vec![],
        window: (first, last),
    }
}

/// The case's W3C trace id (32 hex digits): a function of the seed, the scenario and the
/// prompt (and its position, so a repeated prompt gets its own), so that two runs with the
/// same seed send the same headers.
pub(super) fn trace_id(ctx: &RunContext, scenario: &str, prompt: &str, index: usize) -> String {
    let hi = mix(ctx.seed ^ stream(scenario));
    let lo = mix(hi ^ stream(prompt) ^ index as u64) | 1; // never all zeros, which W3C forbids
    format!("{hi:016x}{lo:016x}")
}
