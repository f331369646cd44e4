//! The metrics of OTLP span export (docs/observability.md): spans the collector accepted
//! (`flakestorm_otlp_exported_spans_total`) and spans dropped
//! (`flakestorm_otlp_dropped_spans_total{reason}`): `queue_full` when the export queue had
//! no room (the proxy never waits for it), `export_failed` when the collector refused them
//! or could not be reached in time (or had just failed), `hold_full` when the exchanges
//! held for the cases under way were at their bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabels {
    /// `queue_full`, `export_failed` or `hold_full`.
    pub reason: &'static str,
}

pub(super) struct OtlpFamilies {
    exported: Counter,
    dropped: Family<DropLabels, Counter>,
}

impl OtlpFamilies {
    pub(super) fn register(registry: &mut Registry) -> OtlpFamilies {
        let exported = Counter::default();
        registry.register(
            "otlp_exported_spans",
            "Spans the OTLP collector accepted",
            exported.clone(),
        );
        let dropped = Family::<DropLabels, Counter>::default();
        registry.register(
            "otlp_dropped_spans",
            "Spans not exported, by reason: queue_full (the export queue had no room), \
             export_failed (the collector refused them, was not reached in time, or had just \
             failed), hold_full (the spans held for the cases under way were at their bound)",
            dropped.clone(),
        );
        OtlpFamilies { exported, dropped }
    }
}

impl super::Metrics {
    /// `n` spans the collector accepted.
    pub fn otlp_exported(&self, n: usize) {
        self.inner.otlp.exported.inc_by(n as u64);
    }

    /// `n` spans dropped for `reason` (`queue_full`, `export_failed`, `hold_full`).
    pub fn otlp_dropped(&self, reason: &'static str, n: usize) {
        let labels = DropLabels { reason };
        self.inner
            .otlp
            .dropped
            .get_or_create(&labels)
            .inc_by(n as u64);
    }
}
