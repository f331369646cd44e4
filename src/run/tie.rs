//! How a case's exchanges are told from the others' (design.md §6): by the lane it owns, by
//! the trace id it sends, or by nothing; and its W3C trace id, a function of the seed and
//! the case alone.

use super::RunContext;
use crate::agent::Lease;
use crate::chaos::{mix, stream};
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
