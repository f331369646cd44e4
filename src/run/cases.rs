//! One case: reset the agent if configured, invoke it with a prompt under the installed
//! scenario, let it settle, and collect its answer and its exchanges with the faults they
//! met (design.md §6: those of its lane, a pool instance's or the main listener's, or of
//! its trace id; none when cases share one set of rules). A case whose setup (its
//! instance restarted, the reset) failed is not judged; neither is one whose instance
//! exited during it. Only the
//! judged attempt's traffic is the case's: earlier attempts (retried because no response
//! byte came back) are listed but their traffic is not judged. A case whose traffic met
//! flakestorm's own errors is not judged (`environment`, `tie::traffic_of`).

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::RunContext;
use super::settle::{RunsOn, Said, settle, unfinished};
use super::tie::{Tie, traffic_of};
use crate::agent::{InvokeError, Lease, Reply};
use crate::exchange::{Exchange, FaultRecord};
use crate::journal::{Lane, Serving};

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
    /// Ids of its exchanges that began after its answer (a background email): its own all
    /// the same, judged with the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_answer: Vec<u64>,
    /// How long after its answer each of `after_answer` began, in milliseconds, in the same
    /// order: a late call's delay (docs/config.md, "How a case settles").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_answer_ms: Vec<u64>,
    /// The pool instance it ran on (1-based), when flakestorm started a pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<usize>,
    /// Its trial (1-based) when cases run several times (`advanced.trials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// Contract runs: each invariant's verdict on this case (the cells say it per
    /// scenario); absent for cases that were not judged and in other runs, whose reports
    /// list checks per prompt or variant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CaseCheck>,
    /// What the agent did with the fault that reached it, decided from the wire (cases of
    /// scenarios with chaos; docs/outcomes.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<super::outcome::CaseOutcome>,
    /// The tokens and cost of its LLM calls, and what faults' retries spent of them
    /// (`None` when its traffic was not attributed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::cost::CaseUsage>,
    /// What the wire said of the case when it ended, which its outcome is decided from
    /// once the run has its no-chaos baselines.
    #[serde(skip)]
    pub trace: Option<Arc<super::outcome::Trace>>,
    /// Journal ids of the judged attempt's window, first and last.
    #[serde(skip)]
    pub window: (u64, u64),
    /// When it started and when its answer came (Unix ms): how late its late calls came,
    /// and how soon its instance was used again.
    #[serde(skip)]
    pub times: (u64, u64),
    /// The trace id its exchanges carry, when they are told apart.
    #[serde(skip)]
    pub trace_id: Option<Arc<str>>,
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
            answer: answer.map(Into::into),
            error: answer
                .is_none()
                .then(|| "agent answered HTTP 500: boom".into()),
            latency_ms: 1.0,
            attempts: 1,
            ..CaseResult::blank("s", prompt)
        }
    }

    /// `prompt` under `scenario`, before anything happened.
    pub(super) fn blank(scenario: &str, prompt: &str) -> CaseResult {
        CaseResult {
            scenario: scenario.to_string(),
            prompt: prompt.to_string(),
            answer: None,
            error: None,
            latency_ms: 0.0,
            attempts: 0,
            earlier_attempts: vec![],
            not_judged: None,
            faults: vec![],
            traffic: None,
            after_answer: vec![],
            after_answer_ms: vec![],
            instance: None,
            trial: None,
            checks: vec![],
            outcome: None,
            usage: None,
            trace: None,
            window: (0, 0),
            times: (0, 0),
            trace_id: None,
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

/// Runs one case: set up (its instance ready, the agent reset), invoked, then settled (its
/// answer in and its traffic over, `advanced.settle_ms`), with the exchanges `tie` gives it.
/// `slot`, its place among the cases in flight, is given back at the answer: settling holds
/// only what ties the case's exchanges to it (its trace id, or its pool instance). On a
/// pool instance the case then leaves its tail there (its lane, its watch and `keep`, its
/// rules), so that calls the agent makes later are still its own until the next case.
pub async fn run_case(
    ctx: &RunContext,
    scenario: &str,
    prompt: &str,
    tie: Tie<'_>,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
    trace: bool,
    keep: Option<Box<dyn Send + Sync>>,
) -> CaseResult {
    let started_ms = crate::exchange::now_unix_ms();
    let lease = match tie {
        Tie::Lane { instance, .. } => instance,
        Tie::None | Tie::Header(_) => None,
    };
    let watch = tie.trace().map(|t| ctx.journal.watch(t));
    let runs_on = RunsOn {
        lease,
        process: ctx.process.as_ref().filter(|_| lease.is_none()),
    };
    let Invoked {
        reply,
        ran,
        serving,
        first,
    } = invoke(ctx, prompt, tie, &runs_on).await;
    let answered_ms = crate::exchange::now_unix_ms();
    runs_on.answered(slot);
    let said = Said {
        header: reply.as_ref().ok().and_then(|r| r.settle.as_deref()),
        headers: &tie.headers(),
    };
    let settled = settle(ctx, watch.as_ref(), &runs_on, said).await;
    drop(serving);
    let last = ctx.journal.peek_next_id().saturating_sub(1);
    let answered = matches!(&reply, Ok(r) if r.answer.is_ok());
    let exited = match ran {
        true => runs_on.exited(answered).await,
        false => None,
    };
    if let (Some(lease), Some(watch), Some(t)) = (lease, watch, tie.trace()) {
        let keep = keep.unwrap_or_else(|| Box::new(()));
        let (trace, watch) = (Arc::from(t), watch);
        lease.keep_tail(crate::agent::Tail { trace, watch, keep });
    }
    let (traffic, problem) = traffic_of(ctx, tie, first, last);
    let (faults, after_answer) = met(traffic.as_deref().unwrap_or_default(), answered_ms);
    // A setup that failed, or a script the machine could not start: not the agent's doing.
    let setup_failed = match &reply {
        Err(why) => Some(why.clone()),
        Ok(r) => r
            .answer
            .as_ref()
            .err()
            .filter(|e| matches!(e, InvokeError::ScriptNotStarted { .. }))
            .map(|e| e.to_string()),
    };
    let unfinished = unfinished(settled, ctx);
    let mut case = answered_case(scenario, prompt, reply);
    case.not_judged = setup_failed.or(exited).or(unfinished).or(problem);
    case.faults = faults;
    case.usage = traffic
        .as_deref()
        .map(|t| crate::cost::CaseUsage::of(t, &ctx.scoring.pricing));
    case.traffic = traffic;
    (case.after_answer, case.after_answer_ms) = after_answer;
    case.instance = lease.map(Lease::number);
    case.window = (first, last);
    case.times = (started_ms, answered_ms);
    case.trace_id = tie.trace().map(Arc::from);
    if trace {
        case.retrace(ctx);
    }
    case
}

/// A case's setup and invocation (`invoke`).
struct Invoked {
    /// The agent's reply, or why its setup failed.
    reply: Result<Reply, String>,
    /// Whether its setup succeeded (its instance or process was there to run it).
    ran: bool,
    /// What keeps the main listener's lane its own (`serve`).
    serving: Option<Serving>,
    /// The first journal id of its judged attempt.
    first: u64,
}

/// Sets the case up (its instance ready, the agent reset) and invokes the agent. The lane
/// goes to this case as its first attempt starts, not before: until then a late call of the
/// instance's last case is still that case's. Unless the setup talks to the agent: a
/// restart (`Lease::ready`) or a reset ends that tail first, so that the calls the agent
/// makes then (its start-up, its reset handler) are in no case, neither the last one nor
/// this one. A case whose setup failed takes the lane all the same.
async fn invoke(ctx: &RunContext, prompt: &str, tie: Tie<'_>, runs_on: &RunsOn<'_>) -> Invoked {
    let (lease, lane) = match tie {
        Tie::Lane { lane, instance, .. } => (instance, Some(lane)),
        Tie::None | Tie::Header(_) => (None, None),
    };
    let agent = lease.map_or(&ctx.agent, |l| l.agent());
    let (mut serving, mut switched) = (None, false);
    let mut first = ctx.journal.peek_next_id();
    let setup = runs_on.ready().await;
    let ran = setup.is_ok();
    if let Some(lease) = lease.filter(|_| agent.resets()) {
        lease.end_tail();
    }
    // A failed reset is the environment's, and the agent was never called: said so, in
    // the reset endpoint's own words.
    let reset = agent.reset().await.map_err(|e| {
        format!("not run: the reset before it failed, so the agent was not called: {e}")
    });
    let setup = setup.map_err(|e| format!("setup failed: {e}"));
    let reply = match setup.and(reset) {
        Ok(()) => {
            let mark = |attempt| {
                if attempt == 1 {
                    serving = serve(lane, lease, tie.trace());
                    switched = true;
                }
                first = ctx.journal.peek_next_id();
            };
            Ok(agent.invoke_marked(prompt, &tie.headers(), mark).await)
        }
        Err(e) => Err(e),
    };
    if !switched {
        serving = serve(lane, lease, tie.trace());
    }
    Invoked {
        reply,
        ran,
        serving,
        first,
    }
}

/// The case's lane serves it from now: the main listener's until the case ends (also when
/// its run is cancelled mid-case: its traffic must not stay with a dead case); a pool
/// instance's until its next case, the tail its last case left there ended once the lane
/// is this one's.
fn serve(lane: Option<&Lane>, lease: Option<&Lease>, trace: Option<&str>) -> Option<Serving> {
    let (lane, trace) = (lane?, trace?);
    let Some(lease) = lease else {
        return Some(lane.serving(trace));
    };
    let previous = lease.take_tail();
    lane.serve(Some(trace));
    drop(previous);
    None
}

impl CaseResult {
    /// Its outcome trace, read again from its traffic and answer (after late calls joined
    /// it).
    pub(super) fn retrace(&mut self, ctx: &RunContext) {
        let (traffic, answer) = (self.traffic.as_deref(), self.answer.as_deref());
        self.trace = super::case_trace::trace_of(ctx, traffic, &self.prompt, answer);
    }
}

/// The faults and attacks `traffic` met, and its exchanges that began after `answered_ms`
/// (the case's `after_answer`): their ids and how long after the answer each began.
fn met(traffic: &[Arc<Exchange>], answered_ms: u64) -> (Vec<FaultRecord>, (Vec<u64>, Vec<u64>)) {
    let faults = traffic
        .iter()
        .flat_map(|ex| ex.fault.iter().cloned().chain(ex.attacks.iter().cloned()))
        .collect();
    (faults, after_answer(traffic, answered_ms))
}

/// The ids of `traffic`'s exchanges that began after `answered_ms`, and each one's delay.
pub(super) fn after_answer(traffic: &[Arc<Exchange>], answered_ms: u64) -> (Vec<u64>, Vec<u64>) {
    traffic
        .iter()
        .filter(|e| e.timings.started_at_ms > answered_ms)
        .map(|e| (e.id, e.timings.started_at_ms - answered_ms))
        .unzip()
}

/// The calls made to the agent by `cases`: each one's attempts (retries included); a case
/// whose setup failed (its reset, its instance's restart) made none.
pub(super) fn agent_calls(cases: &[CaseResult]) -> usize {
    cases.iter().map(|c| c.attempts as usize).sum()
}

/// A case with the agent's reply (or why it was not invoked) and nothing else yet.
fn answered_case(scenario: &str, prompt: &str, reply: Result<Reply, String>) -> CaseResult {
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
        answer,
        error,
        latency_ms: latency,
        attempts,
        earlier_attempts: earlier,
        ..CaseResult::blank(scenario, prompt)
    }
}
