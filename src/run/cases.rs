//! One case: reset the agent if configured, invoke it with a prompt under the installed
//! scenario, and collect its answer and the faults its traffic met (the journal window of
//! the case; exact when cases run one at a time, see design.md §6).

use serde::Serialize;

use super::RunContext;
use crate::exchange::FaultRecord;

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
    /// `None` when they could not be attributed (cases ran concurrently).
    #[serde(rename = "exchanges")]
    pub traffic: Option<Vec<std::sync::Arc<crate::exchange::Exchange>>>,
}

/// Runs one case. `window` asks for the journal slice of this case (exclusive attribution
/// with one case in flight).
pub async fn run_case(ctx: &RunContext, scenario: &str, prompt: &str, window: bool) -> CaseResult {
    let first = ctx.journal.peek_next_id();
    let reset = ctx.agent.reset().await;
    let reply = ctx.agent.invoke(prompt, &Default::default()).await;
    let answer = match (reset, reply.answer) {
        (Err(e), _) => Err(format!("reset failed: {e}")),
        (Ok(()), a) => a.map_err(|e| e.to_string()),
    };
    let (mut faults, mut traffic) = (vec![], None);
    if window {
        let last = ctx.journal.peek_next_id().saturating_sub(1);
        // The agent's calls are recorded when their bodies end, which is before it answers.
        let slice = ctx.journal.slice(first, last);
        for ex in &slice {
            faults.extend(ex.fault.iter().cloned().chain(ex.attacks.iter().cloned()));
        }
        traffic = Some(slice);
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
