//! How a case's exchanges are told from the others' (design.md §6): by the lane it owns, by
//! the trace id it sends, or by nothing; and its W3C trace id, a function of the seed and
//! the case alone; and a case's exchanges by it, with why it cannot be judged when they
//! met the environment's errors.

use std::sync::Arc;

use super::RunContext;
use super::environment;
use crate::agent::Lease;
use crate::chaos::{mix, stream};
use crate::exchange::{Exchange, Target};
use crate::journal::Lane;

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
    pub(super) fn headers(&self) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        if let Tie::Header(t) = self {
            let value = crate::exchange::driver_traceparent(t);
            headers.insert(
                "traceparent",
                value.parse().expect("hex is a valid header value"),
            );
        }
        headers
    }

    pub(super) fn trace(&self) -> Option<&str> {
        match self {
            Tie::None => None,
            Tie::Header(t) | Tie::Lane { trace: t, .. } => Some(t),
        }
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

/// The case's exchanges, when they can be told apart (`None` under `Tie::None`, or when
/// some of the agent's calls lost the `traceparent`), and why it cannot be judged when its
/// traffic met flakestorm's own errors or the environment's.
pub(super) fn traffic_of(
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
