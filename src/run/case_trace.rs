//! A case's outcome trace (docs/outcomes.md), read when the case ends, while the journal
//! still has its bodies: its exchanges, the kept bodies, its prompt and answer, the
//! declared tools and the scan limit handed to the pure `outcome::trace`.

use std::sync::Arc;

use super::RunContext;
use super::outcome::{Trace, Wire, trace};
use crate::exchange::Exchange;

/// The trace of a case with `traffic` (none when its traffic is not attributed).
pub(super) fn trace_of(
    ctx: &RunContext,
    traffic: Option<&[Arc<Exchange>]>,
    prompt: &str,
    answer: Option<&str>,
) -> Option<Arc<Trace>> {
    let bodies = |id: u64| ctx.journal.bodies(id);
    let declared: Vec<String> = ctx
        .scoring
        .declared
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let wire = Wire {
        exchanges: traffic?,
        bodies: &bodies,
        prompt,
        answer,
        declared: &declared,
        max_scan: ctx.scoring.max_scan,
    };
    Some(Arc::new(trace(&wire)))
}
