//! The journal's side of span export (`crate::otel`): which exchanges' bodies are captured
//! for their spans, and handing each recorded exchange to the exporter. Bodies captured
//! only for a span are read there for a few short fields (model, finish reasons, error
//! code) and never kept or sent, so they are not redacted on the proxy's path unless
//! `telemetry.otlp.content` sends them.

use std::sync::Arc;

use super::Journal;
use crate::exchange::{Exchange, Target};
use crate::tape::Bodies;

impl Journal {
    /// Hands every exchange recorded from now on to `otel` too (once; later calls are
    /// ignored: one journal, one exporter).
    pub fn set_otel(&self, otel: crate::otel::Otel) {
        let _ = self.inner.otel.set(otel);
    }

    /// The span exporter, when spans are exported.
    pub fn otel(&self) -> Option<&crate::otel::Otel> {
        self.inner.otel.get()
    }

    /// Whether an exchange to `target` should have its bodies captured: for tapes, or for
    /// its span (an LLM call's model, finish reasons and error code; any call's bodies
    /// with `telemetry.otlp.content`); not for spans while exports fail (`Otel::down`).
    pub fn captures_bodies(&self, target: &Target) -> bool {
        self.keeps_bodies()
            || self.otel().is_some_and(|o| {
                !o.down()
                    && (o.content()
                        || matches!(target, Target::Llm { .. } | Target::Embeddings { .. }))
            })
    }

    /// Whether captured bodies leave the proxy's memory (tapes, span content), so must be
    /// redacted as they are recorded.
    pub(super) fn bodies_leave(&self) -> bool {
        self.keeps_bodies() || self.otel().is_some_and(crate::otel::Otel::content)
    }

    /// Gives a recorded exchange and its bodies to the exporter, if spans are exported.
    pub(super) fn to_otel(&self, exchange: &Arc<Exchange>, bodies: Option<Arc<Bodies>>) {
        let Some(o) = self.otel() else { return };
        // A case under way watches its trace: only its exchanges wait for its span.
        let of_case = exchange
            .trace_id
            .as_deref()
            .is_some_and(|t| self.inner.flights.watched(t));
        o.exchange(exchange.clone(), bodies, of_case);
    }
}
