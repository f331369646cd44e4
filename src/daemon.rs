//! The composition root: loads the CA, builds metrics, journal and proxy, binds the proxy
//! and control listeners, and stops them together. Used by `serve`, `demo` and the
//! integration tests (which bind `127.0.0.1:0` and read the bound addresses back).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{ApiState, DeadlineListener, router};
use crate::chaos::Engine;
use crate::config::{Config, listen_addr};
use crate::journal::{Journal, Redactor};
use crate::proxy::{Proxy, ProxyBuildError};
use crate::telemetry::Metrics;
use crate::tls::{CertificateAuthority, TlsError};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("CA in {dir}: {source}")]
    Ca { dir: PathBuf, source: TlsError },
    #[error(transparent)]
    Proxy(#[from] ProxyBuildError),
    #[error("chaos rules: {0}")]
    Chaos(String),
    #[error(
        "cannot listen on {addr} for the {what}: {source}{}",
        in_use_hint(source)
    )]
    Bind {
        what: &'static str,
        addr: String,
        source: std::io::Error,
    },
}

/// What to do about an address in use: another flakestorm (`serve`, a run) holds it.
fn in_use_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            " (another flakestorm, such as `flakestorm serve`, may hold it: a run starts its \
             own proxy, so stop the other one or set another address (proxy.listen, \
             control.listen); runs that start the agent with agent.command pick free ports)"
        }
        _ => "",
    }
}

/// A running daemon. Dropping it does not stop it; call `stop`.
pub struct Daemon {
    pub proxy_addr: SocketAddr,
    pub control_addr: SocketAddr,
    pub ca_cert_path: PathBuf,
    /// Whether this start created the CA (so the user must trust it now).
    pub ca_created: bool,
    pub journal: Journal,
    pub metrics: Metrics,
    /// The active chaos rules; swap them at runtime with `set`/`clear` or the API.
    pub chaos: Engine,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Daemon {
    pub async fn start(config: &Config) -> Result<Daemon, DaemonError> {
        let dir = config.ca.dir.clone();
        let (ca, ca_created) = CertificateAuthority::load_or_create(&dir)
            .map_err(|source| DaemonError::Ca { dir, source })?;
        let ca = Arc::new(ca);
        let metrics = Metrics::new();
        let j = &config.journal;
        let journal = Journal::new(
            j.capacity,
            Redactor::new(&j.redact_headers, &j.redact_query),
        );
        let chaos = Engine::new(config.advanced.seed.unwrap_or_else(random_seed));
        chaos.set(&config.chaos).map_err(DaemonError::Chaos)?;
        let proxy = Proxy::new(
            config,
            ca.clone(),
            chaos.clone(),
            journal.clone(),
            metrics.clone(),
        )?;
        let proxy_listener = bind("proxy", &config.proxy.listen).await?;
        let control_listener = bind("control listener", &config.control.listen).await?;
        let proxy_addr = local_addr(&proxy_listener, "proxy")?;
        let control_addr = local_addr(&control_listener, "control listener")?;
        let state = ApiState {
            chaos: chaos.clone(),
            tools: config.tools.clone().into(),
            metrics: metrics.clone(),
            ca_pem: ca.cert_pem().into(),
            token: config.control.token.as_deref().map(Into::into),
        };
        // No control connection lives forever either (docs/proxy.md, connection limits).
        let control_listener = DeadlineListener::new(
            control_listener,
            std::time::Duration::from_millis(config.proxy.header_timeout_ms),
        );
        let stop = CancellationToken::new();
        let proxy_task = tokio::spawn(proxy.serve(proxy_listener, stop.clone().cancelled_owned()));
        let api_stop = stop.clone();
        let api_task = tokio::spawn(async move {
            let serve = axum::serve(control_listener, router(state))
                .with_graceful_shutdown(api_stop.cancelled_owned());
            if let Err(e) = serve.await {
                tracing::error!("control listener failed: {e}");
            }
        });
        Ok(Daemon {
            proxy_addr,
            control_addr,
            ca_cert_path: ca.cert_path().to_path_buf(),
            ca_created,
            journal,
            metrics,
            chaos,
            stop,
            tasks: vec![proxy_task, api_task],
        })
    }

    /// Stops accepting, lets in-flight exchanges finish (up to `proxy.drain_timeout_ms`),
    /// then returns.
    pub async fn stop(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// A seed for runs that did not fix one (`advanced.seed`); logged so a run can be repeated.
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    crate::chaos::mix(nanos as u64 ^ u64::from(std::process::id()))
}

async fn bind(what: &'static str, addr: &str) -> Result<TcpListener, DaemonError> {
    let err = |source| DaemonError::Bind {
        what,
        addr: addr.to_string(),
        source,
    };
    let parsed = listen_addr(addr)
        .map_err(|m| err(std::io::Error::new(std::io::ErrorKind::InvalidInput, m)))?;
    TcpListener::bind(parsed).await.map_err(err)
}

fn local_addr(l: &TcpListener, what: &'static str) -> Result<SocketAddr, DaemonError> {
    l.local_addr().map_err(|source| DaemonError::Bind {
        what,
        addr: "?".into(),
        source,
    })
}
