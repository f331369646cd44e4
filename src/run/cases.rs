//! One case: reset the agent if configured, invoke it with a prompt under the installed
//! scenario, and collect its answer and its exchanges with the faults they met (design.md
//! §6: the case's journal window when cases run one at a time, or its trace id).

use serde::Serialize;

use super::RunContext;
use crate::chaos::{mix, stream};
use crate::exchange::{FaultRecord, Target};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub scenario: String,
    pub prompt: String,
    /// The agent's answer; `None` when the invocation failed (see `error`).
    pub answer: Option<String>,
    /// Why there is no answer (timeout, HTTP error, unreachable, response path not found).
    pub error: Option<String>,
    pub latency_ms: f64,
    pub attempts: u32,
    /// Faults and attacks fired on the agent's traffic during the case.
    pub faults: Vec<FaultRecord>,
    /// The agent's exchanges during the case, as the journal recorded them (redacted);
    /// `None` when they could not be attributed (cases ran concurrently under exclusive
    /// attribution, or the agent dropped the case's `traceparent` under header attribution).
    #[serde(rename = "exchanges")]
    pub traffic: Option<Vec<std::sync::Arc<crate::exchange::Exchange>>>,
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
    let first = ctx.journal.peek_next_id();
    let mut headers = http::HeaderMap::new();
    if let Some(t) = &trace {
        let span = &t[..16];
        let value = format!("00-{t}-{span}-01");
        headers.insert(
            "traceparent",
            value.parse().expect("hex is a valid header value"),
        );
    }
    let reset = ctx.agent.reset().await;
    let reply = ctx.agent.invoke(prompt, &headers).await;
    let answer = match (reset, reply.answer) {
        (Err(e), _) => Err(format!("reset failed: {e}")),
        (Ok(()), a) => a.map_err(|e| e.to_string()),
    };
    let (mut faults, mut traffic) = (vec![], None);
    if window {
        let last = ctx.journal.peek_next_id().saturating_sub(1);
        // The agent's calls are recorded when their bodies end, which is before it answers.
        let mut slice = ctx.journal.slice(first, last);
        // Only calls chaos is about count: an exporter's own untraced span upload does not
        // make every case beside it unjudgeable.
        let untraced = slice
            .iter()
            .any(|e| e.trace_id.is_none() && !matches!(e.target, Target::Other));
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
    let (answer, error) = match answer {
        Ok(a) => (Some(a), None),
        Err(e) => (None, Some(e)),
    };
    CaseResult {
        scenario: scenario.to_string(),
        prompt: prompt.to_string(),
        answer,
        error,
        latency_ms: reply.latency.as_secs_f64() * 1000.0,
        attempts: reply.attempts,
        faults,
        traffic,
    }
}

/// The case's W3C trace id (32 hex digits): a function of the seed, the scenario and the
/// prompt (and its position, so a repeated prompt gets its own), so that two runs with the
/// same seed send the same headers.
pub(super) fn trace_id(ctx: &RunContext, scenario: &str, prompt: &str, index: usize) -> String {
    let hi = mix(ctx.engine.seed() ^ stream(scenario));
    let lo = mix(hi ^ stream(prompt) ^ index as u64) | 1; // never all zeros, which W3C forbids
    format!("{hi:016x}{lo:016x}")
}
