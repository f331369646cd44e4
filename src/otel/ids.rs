//! Span and trace ids: fresh random ones (the SDK's generator), and the agent's span a
//! request names in its W3C `traceparent`, which its exchange's span becomes a child of.
//! The `traceparent` flakestorm's own driver sends under `attribution: header`
//! (`00-<case trace>-<its first 16 digits>-01`) names no span of the agent's: an agent that
//! only passed it on has no span to hang from, so its exchange stays under the case.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

use crate::exchange::Exchange;

pub(super) fn trace_id() -> TraceId {
    RandomIdGenerator::default().new_trace_id()
}

pub(super) fn span_id() -> SpanId {
    RandomIdGenerator::default().new_span_id()
}

/// A sampled span context of ours.
pub(super) fn context(trace: TraceId, span: SpanId) -> SpanContext {
    SpanContext::new(trace, span, TraceFlags::SAMPLED, false, TraceState::NONE)
}

/// The agent's span the request's `traceparent` names, if it names one.
pub(super) fn agent_parent(ex: &Exchange) -> Option<SpanContext> {
    let value = ex
        .request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("traceparent"))
        .map(|(_, v)| v.trim())?;
    let trace = crate::exchange::trace_id(value)?;
    let mut parts = value.split('-');
    let (_, _, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if crate::exchange::driver_sent(trace, span) || span.bytes().all(|b| b == b'0') {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        SpanId::from_hex(span).ok()?,
        TraceFlags::new(flags),
        true,
        TraceState::NONE,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{Target, tests_support::exchange};

    fn with(tp: &str) -> Exchange {
        exchange(Target::Other, "http://x/")
            .request_headers(&[("TraceParent", tp)])
            .build()
    }

    #[test]
    fn the_agents_span_is_the_parent_the_drivers_own_header_is_not() {
        let agent = with("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let p = agent_parent(&agent).unwrap();
        assert_eq!(p.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span_id().to_string(), "00f067aa0ba902b7");
        assert!(p.is_remote());
        let driver = with("00-4bf92f3577b34da6a3ce929d0e0e4736-4bf92f3577b34da6-01");
        assert_eq!(agent_parent(&driver), None);
        assert_eq!(agent_parent(&with("00-zz-00f067aa0ba902b7-01")), None);
    }
}
