//! One case: reset the agent if configured, invoke it with a prompt under the installed
//! scenario, let it settle, and collect its answer and its exchanges with the faults they
//! met (design.md §6: those of its lane, a pool instance's or the main listener's, or of
//! its trace id; none when cases share one set of rules). A case whose setup (its
//! instance restarted, the reset) failed is not judged; neither is one whose instance
//! exited during it. Only the
//! judged attempt's traffic is the case's: earlier attempts (retried because no response
//! byte came back) are listed but their traffic is not judged. A case whose traffic met
//! flakestorm's own errors is not judged (`environment`).

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::RunContext;
use super::environment;
use crate::agent::{Lease, Reply};
use crate::chaos::{mix, stream};
use crate::exchange::{Exchange, FaultRecord, Target};
use crate::journal::{Lane, Settled};

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
    /// When it began and ended, Unix ms (its OTLP span; 0 when not run by `run_case`).
    #[serde(skip)]
    pub span_ms: (u64, u64),
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
            instance: None,
            trial: None,
            checks: vec![],
            outcome: None,
            usage: None,
            trace: None,
            window: (0, 0),
            span_ms: (0, 0),
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

/// How a case's exchanges are told from the others' (design.md §6).
#[derive(Clone, Copy)]
pub(super) enum Tie<'a> {
    /// By nothing: cases are in flight together under one set of rules.
    None,
    /// By the trace id it sends as `traceparent`, which the agent must propagate.
    Header(&'a str),
    /// By the lane it owns while it runs: a pool instance's (`instance`), or the main
    /// listener's while the run has it to itself.
    Lane {
        trace: &'a str,
        lane: &'a Lane,
        instance: Option<&'a Lease>,
    },
}

impl Tie<'_> {
    /// What the driver sends with the invoke: the W3C `traceparent` under `Header`.
    fn headers(&self) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        if let Tie::Header(t) = self {
            let value = format!("00-{t}-{}-01", &t[..16]);
            headers.insert(
                "traceparent",
                value.parse().expect("hex is a valid header value"),
            );
        }
        headers
    }

    fn trace(&self) -> Option<&str> {
        match self {
            Tie::None => None,
            Tie::Header(t) | Tie::Lane { trace: t, .. } => Some(t),
        }
    }
}

/// Runs one case: set up (its instance ready, the agent reset), invoked, then settled (its
/// answer in and its traffic over, `advanced.settle_ms`), with the exchanges `tie` gives it.
/// `slot`, its place among the cases in flight, is given back at the answer: settling holds
/// only what ties the case's exchanges to it (its trace id, or its pool instance).
pub async fn run_case(
    ctx: &RunContext,
    scenario: &str,
    prompt: &str,
    tie: Tie<'_>,
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
    trace: bool,
) -> CaseResult {
    let (lease, lane) = match tie {
        Tie::Lane { lane, instance, .. } => (instance, Some(lane)),
        Tie::None | Tie::Header(_) => (None, None),
    };
    let began_ms = crate::exchange::now_unix_ms();
    let agent = lease.map_or(&ctx.agent, |l| l.agent());
    let watch = tie.trace().map(|t| ctx.journal.watch(t));
    let serving = lane.zip(tie.trace()).map(|(l, t)| l.serving(t));
    let headers = tie.headers();
    let mut first = ctx.journal.peek_next_id();
    let runs_on = RunsOn {
        lease,
        process: ctx.process.as_ref().filter(|_| lease.is_none()),
    };
    let setup = runs_on.ready().await;
    let ran = setup.is_ok();
    let reply = match setup.and(
        agent
            .reset()
            .await
            .map_err(|e| format!("reset failed: {e}")),
    ) {
        Ok(()) => {
            let mark = |_| first = ctx.journal.peek_next_id();
            Ok(agent.invoke_marked(prompt, &headers, mark).await)
        }
        Err(e) => Err(format!("setup failed: {e}")),
    };
    let answered_ms = crate::exchange::now_unix_ms();
    drop(slot);
    let settled = match &watch {
        Some(w) => w.settle(ctx.settle, agent.target().timeout).await,
        None => Settled::Quiet,
    };
    drop(serving);
    let last = ctx.journal.peek_next_id().saturating_sub(1);
    let exited = match ran {
        true => runs_on.exited().await,
        false => None,
    };
    let (traffic, problem) = traffic_of(ctx, tie, first, last);
    let (faults, after_answer) = met(traffic.as_deref().unwrap_or_default(), answered_ms);
    let setup_failed = reply.as_ref().err().cloned();
    // A call still in flight when the case had to end is not in its traffic: its checks
    // would judge a part of what the agent did.
    let unfinished = match settled {
        Settled::Bounded { in_flight } if in_flight > 0 => Some(format!(
            "{in_flight} of its calls were still in flight {} ms after its answer \
             (agent.timeout): its traffic is incomplete",
            agent.target().timeout.as_millis()
        )),
        Settled::Bounded { .. } | Settled::Quiet => None,
    };
    let mut case = answered(scenario, prompt, reply);
    case.not_judged = setup_failed.or(exited).or(unfinished).or(problem);
    case.faults = faults;
    case.usage = traffic
        .as_deref()
        .map(|t| crate::cost::CaseUsage::of(t, &ctx.scoring.pricing));
    case.traffic = traffic;
    case.after_answer = after_answer;
    case.instance = lease.map(Lease::number);
    case.window = (first, last);
    case.span_ms = (began_ms, crate::exchange::now_unix_ms());
    if trace {
        let (traffic, answer) = (case.traffic.as_deref(), case.answer.as_deref());
        case.trace = super::case_trace::trace_of(ctx, traffic, &case.prompt, answer);
    }
    case
}

/// The faults and attacks `traffic` met, and the ids of its exchanges that began after
/// `answered_ms` (the case's `after_answer`).
fn met(traffic: &[Arc<Exchange>], answered_ms: u64) -> (Vec<FaultRecord>, Vec<u64>) {
    let faults = traffic
        .iter()
        .flat_map(|ex| ex.fault.iter().cloned().chain(ex.attacks.iter().cloned()))
        .collect();
    let after = traffic
        .iter()
        .filter(|e| e.timings.started_at_ms > answered_ms)
        .map(|e| e.id)
        .collect();
    (faults, after)
}

/// What a case runs on: a pool instance, or the one agent process the run started.
struct RunsOn<'a> {
    lease: Option<&'a Lease>,
    process: Option<&'a crate::agent::Process>,
}

impl RunsOn<'_> {
    /// Ready for the case: the instance restarted if it had exited; the process not exited.
    async fn ready(&self) -> Result<(), String> {
        match (self.lease, self.process) {
            (Some(l), _) => l.ready().await.map_err(|e| e.to_string()),
            (None, Some(p)) => match p.exited().await {
                Some((status, tail)) => Err(format!(
                    "the agent process (agent.command) had exited ({status}) before this \
                     case{tail}"
                )),
                None => Ok(()),
            },
            (None, None) => Ok(()),
        }
    }

    /// How it exited during the case, if it did.
    async fn exited(&self) -> Option<String> {
        match (self.lease, self.process) {
            (Some(l), _) => l.exited().await,
            (None, Some(p)) => p.exited().await.map(|(status, tail)| {
                format!(
                    "the agent process (agent.command) exited ({status}) during this case{tail}"
                )
            }),
            (None, None) => None,
        }
    }
}

/// The case's exchanges, when they can be told apart (`None` under `Tie::None`, or when
/// some of the agent's calls lost the `traceparent`), and why it cannot be judged when its
/// traffic met flakestorm's own errors or the environment's.
fn traffic_of(
    ctx: &RunContext,
    tie: Tie<'_>,
    first: u64,
    last: u64,
) -> (Option<Vec<Arc<Exchange>>>, Option<String>) {
    match tie {
        // Environment errors count whoever's they are: with cases in flight together, a
        // neighbour's refused upstream or 407 is this case's too.
        Tie::None => (None, environment::problem(&ctx.journal.slice(first, last))),
        Tie::Header(t) => {
            let window = ctx.journal.slice(first, last);
            let problem = environment::problem(&window);
            // Only calls chaos is about count: an exporter's own untraced span upload, or
            // an embeddings call (no rule applies to one), does not make every case beside
            // it unjudgeable.
            let untraced = window.iter().any(|e| {
                e.trace_id.is_none()
                    && match e.target {
                        Target::Tool { .. } | Target::Llm { .. } => true,
                        Target::Embeddings { .. } | Target::Other => false,
                    }
            });
            (
                (!untraced).then(|| ctx.journal.by_trace_from(t, first)),
                problem,
            )
        }
        Tie::Lane { trace, .. } => {
            let own = ctx.journal.by_trace_from(trace, first);
            let problem = environment::problem(&own);
            (Some(own), problem)
        }
    }
}

/// A case with the agent's reply (or why it was not invoked) and nothing else yet.
fn answered(scenario: &str, prompt: &str, reply: Result<Reply, String>) -> CaseResult {
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

/// The case's W3C trace id (32 hex digits): a function of the seed, the scenario, the
/// prompt (and its position, so a repeated prompt gets its own) and the trial (0-based; the
/// first trial's id is the one a run without trials sends), so that two runs with the same
/// seed send the same headers and draw the same chaos per case.
pub(super) fn trace_id(
    ctx: &RunContext,
    scenario: &str,
    prompt: &str,
    index: usize,
    trial: u32,
) -> String {
    let hi = mix(ctx.scoring.seed ^ stream(scenario));
    let salt = match trial {
        0 => 0,
        t => mix(stream("trial") ^ u64::from(t)),
    };
    let lo = mix(hi ^ stream(prompt) ^ index as u64 ^ salt) | 1; // never all zeros (W3C)
    format!("{hi:016x}{lo:016x}")
}
