//! Logging setup (`LogFormat`: text or JSON lines) and the Prometheus metrics every part of
//! the daemon updates (`runs`: the metrics of the runs it drives; `chaos`: whether chaos
//! rules are in force and how often a `ttl` reverted them; `llm`: the tokens and cost of
//! the agent's LLM answers; `otlp`: spans exported and dropped; `control`: refused tokens),
//! served as OpenMetrics or the Prometheus text format (`exposition`).
//!
//! `Metrics` is a cheap-clone handle; metric updates are lock-free atomics so the data plane
//! can count on its hot path. Label values are `&'static str` to avoid allocating per
//! request.

mod chaos;
mod control;
mod exposition;
mod llm;
mod otlp;
mod runs;

use std::sync::{Arc, OnceLock};

pub use runs::RunLabels;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tracing_subscriber::EnvFilter;

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, …), for log
    /// shippers (Loki, Fluent Bit, Vector, Cloud Logging).
    Json,
}

/// Installs the global tracing subscriber: `RUST_LOG` if set, else `default_filter`.
/// Logs go to stderr so stdout stays machine-readable (listening lines, JSON output).
pub fn init_tracing(default_filter: &str, format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // A second init (tests, embedding) is harmless: keep the first subscriber.
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

/// The target kinds (`Target::kind`) and status classes of `RequestLabels`.
const TARGETS: [&str; 4] = ["llm", "embeddings", "tool", "other"];
const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "error"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `llm`, `embeddings`, `tool` or `other` (`Target::kind`).
    pub target: &'static str,
    /// `1xx`..`5xx`, or `error` when no response reached the client.
    pub status_class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandshakeLabels {
    /// `ok` or `error`. Only agent -> proxy handshakes (our leaf certificate) are counted;
    /// upstream handshakes happen inside the pooled client.
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The `x-flakestorm-error` kind, e.g. `upstream_connect`.
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FaultLabels {
    pub target: &'static str,
    /// The fault mode or attack type, e.g. `rate_limit`.
    pub mode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectLabels {
    /// `cap` (over `proxy.max_connections`) or `fd_limit` (accept failed: no descriptors).
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TimeoutLabels {
    /// `header`, `idle` or `tls_handshake`.
    pub kind: &'static str,
}

struct Inner {
    registry: Registry,
    connections_rejected: Family<RejectLabels, Counter>,
    connection_timeouts: Family<TimeoutLabels, Counter>,
    faults_injected: Family<FaultLabels, Counter>,
    faults_skipped: Family<FaultLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    /// `requests`' counter of each (target, status class) in `TARGETS` × `STATUS_CLASSES`,
    /// taken from the family at its first request: the family hashes both labels under a
    /// lock on every lookup, which is a cost on every request the proxy answers.
    request_counters: [[OnceLock<Counter>; STATUS_CLASSES.len()]; TARGETS.len()],
    upstream_latency: Histogram,
    active_connections: Gauge,
    tls_handshakes: Family<HandshakeLabels, Counter>,
    leaf_cache_size: Gauge,
    proxy_errors: Family<ErrorLabels, Counter>,
    tunnels: Counter,
    runs: runs::RunFamilies,
    chaos: chaos::ChaosFamilies,
    llm: llm::LlmFamilies,
    otlp: otlp::OtlpFamilies,
    control_auth_failures: Counter,
}

/// Cheap-clone handle to the daemon's metrics.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// Registers the fault counters, in this order: `(faults_injected, faults_skipped)`.
fn register_faults(
    registry: &mut Registry,
) -> (Family<FaultLabels, Counter>, Family<FaultLabels, Counter>) {
    let faults_injected = Family::<FaultLabels, Counter>::default();
    registry.register(
        "faults_injected",
        "Chaos faults and context attacks injected, by target kind and mode",
        faults_injected.clone(),
    );
    let faults_skipped = Family::<FaultLabels, Counter>::default();
    registry.register(
        "faults_skipped",
        "Faults that fired but could not be applied (response not parseable, too large, no content)",
        faults_skipped.clone(),
    );
    (faults_injected, faults_skipped)
}

/// Registers the counters of connections refused or closed by a limit, in this order:
/// `(connections_rejected, connection_timeouts)`.
fn register_connection_limits(
    registry: &mut Registry,
) -> (
    Family<RejectLabels, Counter>,
    Family<TimeoutLabels, Counter>,
) {
    let connections_rejected = Family::<RejectLabels, Counter>::default();
    registry.register(
        "connections_rejected",
        "Client connections refused over proxy.max_connections (cap), or accept attempts \
         that failed for lack of file descriptors (fd_limit)",
        connections_rejected.clone(),
    );
    let connection_timeouts = Family::<TimeoutLabels, Counter>::default();
    registry.register(
        "connection_timeouts",
        "Client connections closed by a deadline: header, idle or tls_handshake",
        connection_timeouts.clone(),
    );
    (connections_rejected, connection_timeouts)
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flakestorm");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered by the proxy, by target kind and status class",
            requests.clone(),
        );
        // 0.5 ms .. ~65 s: loopback tool calls through slow LLM generations.
        let upstream_latency = Histogram::new(exponential_buckets(0.0005, 2.0, 18));
        registry.register(
            "upstream_latency_seconds",
            "Time from forwarding a request to receiving the upstream response head",
            upstream_latency.clone(),
        );
        let active_connections = Gauge::default();
        registry.register(
            "active_connections",
            "Client connections currently open on the proxy port",
            active_connections.clone(),
        );
        let tls_handshakes = Family::<HandshakeLabels, Counter>::default();
        registry.register(
            "tls_handshakes",
            "TLS handshakes with clients on intercepted CONNECT tunnels, by result",
            tls_handshakes.clone(),
        );
        let leaf_cache_size = Gauge::default();
        registry.register(
            "leaf_cache_size",
            "Leaf certificates currently cached",
            leaf_cache_size.clone(),
        );
        let proxy_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "proxy_errors",
            "Requests the proxy answered itself because of a genuine (not injected) error",
            proxy_errors.clone(),
        );
        let tunnels = Counter::default();
        registry.register(
            "tunnels",
            "CONNECT tunnels relayed without decryption (passthrough or non-TLS)",
            tunnels.clone(),
        );
        let (faults_injected, faults_skipped) = register_faults(&mut registry);
        let (connections_rejected, connection_timeouts) = register_connection_limits(&mut registry);
        let runs = runs::RunFamilies::register(&mut registry);
        let chaos = chaos::ChaosFamilies::register(&mut registry);
        let llm = llm::LlmFamilies::register(&mut registry);
        let otlp = otlp::OtlpFamilies::register(&mut registry);
        let control_auth_failures = control::register(&mut registry);
        let inner = Inner {
            control_auth_failures,
            runs,
            chaos,
            llm,
            otlp,
            registry,
            connections_rejected,
            connection_timeouts,
            faults_injected,
            faults_skipped,
            requests,
            request_counters: Default::default(),
            upstream_latency,
            active_connections,
            tls_handshakes,
            leaf_cache_size,
            proxy_errors,
            tunnels,
        };
        Metrics {
            inner: Arc::new(inner),
        }
    }

    pub fn request(&self, target: &'static str, status: Option<u16>) {
        let class = match status {
            Some(100..=199) => 0,
            Some(200..=299) => 1,
            Some(300..=399) => 2,
            Some(400..=499) => 3,
            Some(_) => 4,
            None => 5,
        };
        let labels = || RequestLabels {
            target,
            status_class: STATUS_CLASSES[class],
        };
        let family = &self.inner.requests;
        match TARGETS.iter().position(|t| *t == target) {
            Some(t) => self.inner.request_counters[t][class]
                .get_or_init(|| family.get_or_create(&labels()).clone())
                .inc(),
            None => family.get_or_create(&labels()).inc(),
        };
    }

    pub fn upstream_latency(&self, seconds: f64) {
        self.inner.upstream_latency.observe(seconds);
    }

    /// Counts an open connection until the returned guard drops.
    pub fn connection_opened(&self) -> ConnectionGuard {
        self.inner.active_connections.inc();
        ConnectionGuard {
            metrics: self.clone(),
        }
    }

    pub fn tls_handshake(&self, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.inner
            .tls_handshakes
            .get_or_create(&HandshakeLabels { result })
            .inc();
    }

    pub fn set_leaf_cache_size(&self, size: usize) {
        self.inner
            .leaf_cache_size
            .set(i64::try_from(size).unwrap_or(i64::MAX));
    }

    pub fn proxy_error(&self, kind: &'static str) {
        self.inner
            .proxy_errors
            .get_or_create(&ErrorLabels { kind })
            .inc();
    }

    pub fn fault(&self, target: &'static str, mode: &'static str, applied: bool) {
        let family = if applied {
            &self.inner.faults_injected
        } else {
            &self.inner.faults_skipped
        };
        family.get_or_create(&FaultLabels { target, mode }).inc();
    }

    /// A request to the control API's `/v1/*` refused for its token.
    pub fn control_auth_failure(&self) {
        self.inner.control_auth_failures.inc();
    }

    pub fn tunnel(&self) {
        self.inner.tunnels.inc();
    }

    /// A connection refused (`cap`) or an accept that failed for lack of fds (`fd_limit`).
    pub fn connection_rejected(&self, reason: &'static str) {
        self.inner
            .connections_rejected
            .get_or_create(&RejectLabels { reason })
            .inc();
    }

    /// A connection closed by a deadline (`header`, `idle`, `tls_handshake`).
    pub fn connection_timeout(&self, kind: &'static str) {
        self.inner
            .connection_timeouts
            .get_or_create(&TimeoutLabels { kind })
            .inc();
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }

    /// `/metrics` for a reader whose `Accept` is `accept`: its content type and text
    /// (`exposition`).
    pub fn exposition(&self, accept: &str) -> (&'static str, String) {
        match exposition::wants_openmetrics(accept) {
            true => (exposition::OPENMETRICS, self.encode()),
            false => (
                exposition::TEXT,
                exposition::prometheus_text(&self.encode()),
            ),
        }
    }
}

/// Decrements `active_connections` when dropped.
pub struct ConnectionGuard {
    metrics: Metrics,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.metrics.inner.active_connections.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_counts_by_label() {
        let m = Metrics::new();
        m.request("llm", Some(200));
        m.request("llm", Some(201));
        m.request("tool", None);
        {
            let _c = m.connection_opened();
            assert!(m.encode().contains("flakestorm_active_connections 1"));
        }
        let text = m.encode();
        assert!(
            text.contains(r#"flakestorm_requests_total{target="llm",status_class="2xx"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"flakestorm_requests_total{target="tool",status_class="error"} 1"#)
        );
        assert!(text.contains("flakestorm_active_connections 0"));
        // Counted once each, not created ahead: no series for a class never seen.
        assert!(!text.contains(r#"status_class="5xx""#), "{text}");
    }

    #[test]
    fn a_target_outside_the_cache_is_counted_too() {
        let m = Metrics::new();
        m.request("mcp", Some(503));
        m.request("mcp", Some(500));
        m.request("other", Some(503));
        let text = m.encode();
        assert!(
            text.contains(r#"flakestorm_requests_total{target="mcp",status_class="5xx"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"flakestorm_requests_total{target="other",status_class="5xx"} 1"#));
    }

    #[test]
    fn counts_rejections_and_timeouts_by_label() {
        let m = Metrics::new();
        m.connection_rejected("cap");
        m.connection_rejected("cap");
        m.connection_rejected("fd_limit");
        m.connection_timeout("tls_handshake");
        let text = m.encode();
        assert!(
            text.contains(r#"flakestorm_connections_rejected_total{reason="cap"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"flakestorm_connections_rejected_total{reason="fd_limit"} 1"#));
        assert!(text.contains(r#"flakestorm_connection_timeouts_total{kind="tls_handshake"} 1"#));
    }
}
