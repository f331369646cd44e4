//! The metrics of the chaos rules themselves: whether any are in force
//! (`flakestorm_chaos_active`, what dashboards shade as fault windows) and how many times
//! rules installed with a `ttl` were reverted when it ran out (`flakestorm_chaos_expired`).
//! Registered in the daemon's one registry by `Metrics::new`; the gauge is set by whoever
//! knows the rules (the control API sets it before each scrape and on every change).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub(super) struct ChaosFamilies {
    active: Gauge,
    expired: Counter,
}

impl ChaosFamilies {
    pub(super) fn register(registry: &mut Registry) -> ChaosFamilies {
        let active = Gauge::default();
        registry.register(
            "chaos_active",
            "1 while chaos rules are in force (the daemon's, PUT /v1/chaos, a profile or a \
             run's scenario), else 0",
            active.clone(),
        );
        let expired = Counter::default();
        registry.register(
            "chaos_expired",
            "Chaos rules installed with a ttl that were reverted when it ran out",
            expired.clone(),
        );
        ChaosFamilies { active, expired }
    }
}

impl super::Metrics {
    /// Whether chaos rules are in force now.
    pub fn set_chaos_active(&self, active: bool) {
        self.inner.chaos.active.set(i64::from(active));
    }

    /// Rules installed with a `ttl` were reverted.
    pub fn chaos_expired(&self) {
        self.inner.chaos.expired.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;

    #[test]
    fn the_gauge_follows_the_rules_and_expiries_count() {
        let m = Metrics::new();
        assert!(m.encode().contains("flakestorm_chaos_active 0\n"));
        m.set_chaos_active(true);
        m.chaos_expired();
        let text = m.encode();
        assert!(text.contains("flakestorm_chaos_active 1\n"), "{text}");
        assert!(
            text.contains("flakestorm_chaos_expired_total 1\n"),
            "{text}"
        );
        m.set_chaos_active(false);
        assert!(m.encode().contains("flakestorm_chaos_active 0\n"));
    }
}
