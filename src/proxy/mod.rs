//! The data plane: a man-in-the-middle HTTP(S) forward proxy.
//!
//! `listener` accepts and drains; `service` walks one request through its steps in order
//! (`route` says what it is; `connect` handles `CONNECT`: intercept, passthrough or blind
//! tunnel; an exchange is recorded, decided, sent by `outbound` and handed back by
//! `upstream`); `forward` talks to upstreams; `body` observes response bodies as they
//! stream; `rescue` is the one place errors become responses. This module must not reach into `run`: the two meet only
//! through the journal and the chaos `Engine` handle (runs install rules, the proxy decides
//! with them).

mod accept;
mod action;
mod attack;
mod body;
mod bridge;
mod canary;
mod capture;
mod close_delimited;
mod connect;
mod connector;
mod fault;
mod fault_body;
mod forward;
mod guard;
mod headers;
mod lane;
mod listener;
mod mcp;
mod mcp_body;
mod outbound;
mod pending;
mod plant_body;
mod recorder;
mod replay;
mod request_body;
pub mod rescue;
mod route;
mod service;
mod tape;
mod tcp;
mod tunnel;
mod upstream;
mod watchdog;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use globset::GlobSet;
use http::Uri;
use http_body_util::combinators::BoxBody;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::chaos::Engine;
use crate::config::Config;
use crate::globs;
use crate::journal::Journal;
use crate::telemetry::Metrics;
use crate::tls::{CertificateAuthority, LeafCache, TlsError};

pub use capture::CAPTURED;
pub use lane::LaneListener;
pub use rescue::ERROR_HEADER;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Body type of every response the proxy sends and every request it forwards.
pub type ProxyBody = BoxBody<Bytes, BoxError>;

#[derive(Debug, thiserror::Error)]
pub enum ProxyBuildError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("{0}")]
    Config(String),
}

/// Who is on the other end of a client connection.
#[derive(Debug, Clone)]
pub struct ConnCtx {
    pub peer: SocketAddr,
    /// `peer` as exchanges record it, written once per connection rather than per request.
    pub peer_text: Arc<str>,
    pub user: Option<Arc<str>>,
    /// Set inside an intercepted tunnel: the `CONNECT` target every request goes to.
    pub tunnel: Option<http::uri::Authority>,
    /// The tunnel carries plain HTTP, not TLS (Node's `EnvHttpProxyAgent` tunnels its
    /// `http://` calls so): its requests go to `http://` and the target.
    pub plain: bool,
    /// The lane this connection came in by: a pool instance's listener (`None`: the main
    /// listener, whose lane a run with the proxy to itself sets).
    pub lane: Option<crate::journal::Lane>,
}

/// A `proxy.reverse` route.
#[derive(Debug, Clone)]
struct ReverseRoute {
    prefix: String,
    upstream: Uri,
}

/// `proxy:` settings compiled for the hot path.
#[derive(Debug)]
struct Settings {
    listen: SocketAddr,
    intercept: GlobSet,
    passthrough: GlobSet,
    users: Vec<(String, String)>,
    reverse: Vec<ReverseRoute>,
    connect_timeout: Duration,
    response_timeout: Duration,
    drain_timeout: Duration,
    max_header_bytes: usize,
    /// `proxy.max_rewrite_bytes`: the cap on what a chaos rewrite produces.
    max_rewrite_bytes: usize,
    allow_loopback_targets: Vec<crate::config::TargetRule>,
    /// Connection deadlines and cap (listener, watchdog, connect).
    conn_limits: watchdog::Limits,
    tls_handshake_timeout: Duration,
    max_connections: usize,
    /// `proxy.upstream_connect_failure: close`: an unreachable upstream closes the client
    /// connection instead of answering 502.
    close_on_connect_failure: bool,
    /// `pricing:`: what the LLM answers' tokens cost, for `flakestorm_llm_cost_total`.
    pricing: Arc<crate::cost::Pricing>,
}

impl Settings {
    fn compile(c: &Config) -> Result<Self, ProxyBuildError> {
        let p = &c.proxy;
        let bad = |what: &str, e: String| ProxyBuildError::Config(format!("{what}: {e}"));
        // Read when the config loaded; a config built in code must read it too, or the
        // proxy would silently not trust the CA it names.
        if let Some(f) = p
            .upstream_ca_file
            .as_ref()
            .filter(|_| p.upstream_ca.is_empty())
        {
            return Err(bad(
                "proxy.upstream_ca_file",
                format!(
                    "{} was set but never read (set it with ProxySpec::trust_upstream_ca)",
                    f.display()
                ),
            ));
        }
        // Compiled when the config was read; a bad pattern was reported there.
        let set = |what: &str, list: &globs::HostGlobs| {
            list.set()
                .cloned()
                .map_err(|(i, e)| bad(&format!("{what}[{i}]"), e.to_string()))
        };
        let reverse = p
            .reverse
            .iter()
            .map(|r| {
                let upstream = r
                    .upstream
                    .get()
                    .map_err(|e| bad("proxy.reverse", e.to_string()))?;
                Ok(ReverseRoute {
                    prefix: r.prefix.trim_end_matches('/').to_string(),
                    upstream: upstream.0.clone(),
                })
            })
            .collect::<Result<_, ProxyBuildError>>()?;
        Ok(Settings {
            listen: *p
                .listen
                .get()
                .map_err(|e| bad("proxy.listen", e.to_string()))?,
            intercept: set("proxy.intercept", &p.intercept)?,
            passthrough: set("proxy.passthrough", &p.passthrough)?,
            users: p
                .users
                .iter()
                .map(|u| (u.name.clone(), u.password.clone()))
                .collect(),
            reverse,
            connect_timeout: Duration::from_millis(p.connect_timeout_ms),
            response_timeout: Duration::from_millis(p.response_timeout_ms),
            drain_timeout: Duration::from_millis(p.drain_timeout_ms),
            max_header_bytes: p.max_header_bytes,
            max_rewrite_bytes: p.max_rewrite_bytes,
            allow_loopback_targets: p
                .allow_loopback_targets
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    e.get().map(|rules| rules.0.clone()).map_err(|e| {
                        bad(&format!("proxy.allow_loopback_targets[{i}]"), e.to_string())
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect(),
            conn_limits: watchdog::Limits {
                header: Duration::from_millis(p.header_timeout_ms),
                idle: Duration::from_millis(p.idle_timeout_ms),
            },
            tls_handshake_timeout: Duration::from_millis(p.tls_handshake_timeout_ms),
            max_connections: p.max_connections,
            close_on_connect_failure: p.upstream_connect_failure
                == crate::config::UpstreamConnectFailure::Close,
            pricing: Arc::new(c.pricing.clone()),
        })
    }
}

/// Stops in two steps: `drain` (stop accepting, finish in-flight), then `hard` (cut).
#[derive(Debug, Default)]
struct Shutdown {
    drain: CancellationToken,
    hard: CancellationToken,
    tasks: TaskTracker,
}

struct Shared {
    settings: Settings,
    /// Whether each tool (or host) last answered with JSON: faults that answer for it
    /// speak its format.
    formats: std::sync::Mutex<std::collections::HashMap<String, bool>>,
    chaos: Engine,
    leaves: LeafCache,
    upstream: forward::Upstream,
    /// Destinations refused (own listeners; loopback off loopback): shared with `upstream`.
    guard: Arc<guard::Guard>,
    journal: Journal,
    metrics: Metrics,
    shutdown: Shutdown,
    /// Client sockets open now (tunnels included), checked against `max_connections`.
    open_connections: std::sync::atomic::AtomicUsize,
    /// Where wraps bind their stdio bridges; removed with the proxy.
    wrap_dir: Option<bridge::WrapDir>,
}

/// Cheap-clone handle to a proxy instance.
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Shared>,
}

impl Proxy {
    pub fn new(
        config: &Config,
        ca: Arc<CertificateAuthority>,
        chaos: Engine,
        journal: Journal,
        metrics: Metrics,
    ) -> Result<Self, ProxyBuildError> {
        let settings = Settings::compile(config)?;
        let tls = crate::tls::client_config(&config.proxy.upstream_ca)?;
        let guard = Arc::new(guard::Guard::new(
            settings.listen.ip(),
            settings.allow_loopback_targets.clone(),
        ));
        // Without one (an unwritable temporary directory) stdio servers are not bridged:
        // a wrap then fails to reach its bridge and relays untouched, saying so.
        let wrap_dir = bridge::WrapDir::create()
            .inspect_err(|e| tracing::warn!("no wrap directory for stdio MCP servers: {e}"))
            .ok();
        let upstream = forward::Upstream::new(
            tls,
            guard.clone(),
            settings.connect_timeout,
            settings.response_timeout,
            wrap_dir.as_ref().map(|d| Arc::new(d.path().to_path_buf())),
        );
        let leaves = LeafCache::new(ca, config.proxy.leaf_cache_size, metrics.clone())?;
        // The daemon's own `tools:` and `llm:`; a run may declare its own for its time.
        let classifier = crate::chaos::Classifier::new(&config.tools, &config.llm)
            .map_err(|e| ProxyBuildError::Config(e.to_string()))?;
        chaos.set_declared(Arc::new(classifier));
        let shared = Shared {
            settings,
            formats: Default::default(),
            chaos,
            leaves,
            upstream,
            guard,
            journal,
            metrics,
            shutdown: Shutdown::default(),
            open_connections: Default::default(),
            wrap_dir,
        };
        Ok(Proxy {
            inner: Arc::new(shared),
        })
    }

    /// Where `flakestorm wrap` binds its bridges for this proxy (`mcp::stdio`), if it has one.
    pub fn wrap_dir(&self) -> Option<&std::path::Path> {
        self.inner.wrap_dir.as_ref().map(bridge::WrapDir::path)
    }

    /// The configured listen address.
    pub fn listen_addr(&self) -> SocketAddr {
        self.inner.settings.listen
    }

    /// Tells the proxy its bound listeners (its own port and the control port), which it
    /// never forwards to, by any address of this machine.
    pub fn set_own_listeners(&self, addrs: Vec<SocketAddr>) {
        self.inner.guard.set_own(addrs);
    }

    pub fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// `proxy.max_rewrite_bytes`.
    fn pricing(&self) -> &crate::cost::Pricing {
        &self.inner.settings.pricing
    }

    fn max_rewrite_bytes(&self) -> usize {
        self.inner.settings.max_rewrite_bytes
    }

    fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    fn formats(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, bool>> {
        self.inner.formats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers whether an upstream answered with JSON (allocates only on change).
    fn note_format(&self, key: &str, json: bool) {
        let mut formats = self.formats();
        if let Some(known) = formats.get_mut(key) {
            *known = json;
        } else if formats.len() < 10_000 {
            // Bounded: a proxy in front of a crawler must not grow without limit.
            formats.insert(key.to_string(), json);
        }
    }

    /// Whether this upstream was last seen answering with JSON.
    fn speaks_json(&self, key: &str) -> Option<bool> {
        self.formats().get(key).copied()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_upstream_ca_file_that_was_never_read_is_an_error_not_ignored() {
        let mut c = crate::config::Config::default();
        c.proxy.upstream_ca_file = Some("ca.pem".into());
        let Err(e) = super::Settings::compile(&c) else {
            panic!("a CA file the proxy would not trust was accepted");
        };
        assert!(
            e.to_string().contains("ca.pem was set but never read"),
            "{e}"
        );
    }
}
