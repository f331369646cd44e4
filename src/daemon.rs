//! The composition root: loads the CA (from `ca.dir`, or the `ca.cert_file`/`ca.key_file`
//! pair), writes the CA bundle (`ca.bundle_file`), builds metrics, journal and proxy, binds
//! the proxy and control listeners, says when it is ready (`/readyz`), and stops them
//! together. Used by `serve`, `demo` and the integration tests (which bind `127.0.0.1:0`
//! and read the bound addresses back).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{ApiState, DeadlineListener, Expiry, Readiness};
use crate::chaos::Engine;
use crate::config::Config;
use crate::jobs::Jobs;
use crate::journal::{Journal, Redactor};
use crate::proxy::{Proxy, ProxyBuildError};
use crate::store::Store;
use crate::telemetry::Metrics;
use crate::tls::{CertificateAuthority, TlsError};

mod signals;
pub use signals::{Signals, Stopped};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("CA {what}: {source}")]
    Ca { what: String, source: TlsError },
    #[error(
        "ca.bundle_file: {0} (it is written at each start from the system roots and the CA; \
         install ca-certificates, or unset ca.bundle_file)"
    )]
    Bundle(TlsError),
    #[error(transparent)]
    Proxy(#[from] ProxyBuildError),
    #[error(
        "proxy.listen is {0}, which is not a loopback address, and proxy.users is empty: anyone \
         who can reach {0} could use this proxy to reach whatever this machine can. Either add \
         proxy.users (clients then send Proxy-Authorization: Basic), or pass --allow-open-proxy \
         if every client that can reach it is trusted (see docs/security.md)"
    )]
    OpenProxy(SocketAddr),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("OTLP export: {0}")]
    Telemetry(String),
    #[error("{0} (it guards the control API when control.token is not set)")]
    Token(#[from] crate::api::token::TokenError),
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
#[allow(clippy::wildcard_enum_match_arm)] // std's io::ErrorKind is non-exhaustive
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
    /// Runs submitted through `/v1/runs`.
    pub jobs: Jobs,
    /// Run history (`data_dir/flakestorm.db`).
    pub store: Store,
    /// The bearer token `/v1/*` requires: `control.token`, or the one kept in `token_file`.
    pub control_token: Arc<str>,
    /// `data_dir/control.token` when the token is kept there (no `control.token` set).
    pub token_file: Option<PathBuf>,
    /// The web view's login link (`control.ui`), which carries the token.
    pub ui_link: Option<String>,
    /// What `/readyz` answers.
    pub ready: Readiness,
    /// Opens a proxy lane for an agent pool's instance.
    pub lanes: crate::journal::OpenLane,
    /// The proxy's wrap directory (stdio MCP servers bridged by `flakestorm wrap`).
    pub wrap_dir: Option<PathBuf>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Daemon {
    /// The proxy as a run sees it: what a session started by the CLI or the demo runs
    /// behind, as the daemon's own runs do.
    pub fn run_proxy(&self) -> crate::session::Proxy {
        crate::session::Proxy {
            engine: self.chaos.clone(),
            journal: self.journal.clone(),
            addr: self.proxy_addr,
            ca_cert: self.ca_cert_path.clone(),
            store: self.store.clone(),
            lanes: self.lanes.clone(),
            wrap_dir: self.wrap_dir.clone(),
        }
    }

    pub async fn start(config: &Config) -> Result<Daemon, DaemonError> {
        let (ca, ca_created, ready) = set_up_ca(config)?;
        let metrics = Metrics::new();
        metrics.runs_known(&run_kinds(), &end_statuses());
        let chaos = Engine::new(config.advanced.seed.unwrap_or_else(random_seed));
        let journal = journal_of(config, &metrics, chaos.seed())?;
        chaos.set(&config.chaos);
        let proxy = Proxy::new(
            config,
            ca.clone(),
            chaos.clone(),
            journal.clone(),
            metrics.clone(),
        )?;
        open_proxy_rule(config)?;
        let proxy_listener = bind("proxy", &config.proxy.listen).await?;
        let control_listener = bind("control listener", &config.control.listen).await?;
        let proxy_addr = local_addr(&proxy_listener, "proxy")?;
        let control_addr = local_addr(&control_listener, "control listener")?;
        proxy.set_own_listeners(vec![proxy_addr, control_addr]);
        let (store, control_token, token_file) = open_data_dir(config)?;
        let lanes = proxy.lane_opener();
        let wrap_dir = proxy.wrap_dir().map(std::path::Path::to_path_buf);
        let jobs = Jobs::new(crate::jobs::Setup {
            proxy: crate::session::Proxy {
                store: store.clone(),
                engine: chaos.clone(),
                journal: journal.clone(),
                addr: proxy_addr,
                ca_cert: ca.cert_path().to_path_buf(),
                lanes: lanes.clone(),
                wrap_dir: wrap_dir.clone(),
            },
            metrics: metrics.clone(),
            tools: config.tools.clone(),
            llm: config.llm.clone(),
            max_parallel: config.control.max_parallel_runs,
        });
        let state = ApiState {
            chaos: chaos.clone(),
            tools: config.tools.clone().into(),
            metrics: metrics.clone(),
            ca_pem: ca.cert_pem().into(),
            token: control_token.clone(),
            jobs: jobs.clone(),
            hosts: crate::api::Hosts::new(control_addr.ip(), &config.control.allowed_hosts),
            expose_env: config.control.expose_env.clone().into(),
            keep_alive: crate::api::keep_alive(config.proxy.header_timeout_ms),
            ready: ready.clone(),
            expiry: Expiry::new(config.chaos.clone()),
            limits: crate::api::Limits::of(&config.control),
            imports: Default::default(),
            auth: Default::default(),
        };
        let stop = CancellationToken::new();
        let proxy_task = serve_proxy(proxy, proxy_listener, &stop, &ready);
        ready.config_applied();
        let deadline = std::time::Duration::from_millis(config.proxy.header_timeout_ms);
        let app = crate::ui::app(state, journal.clone(), config.control.ui);
        let api_task = serve_control(control_listener, deadline, app, &stop);
        Ok(Daemon {
            proxy_addr,
            control_addr,
            ca_cert_path: ca.cert_path().to_path_buf(),
            ca_created,
            journal,
            metrics,
            chaos,
            jobs,
            store,
            ui_link: crate::ui::link(config.control.ui, control_addr, &control_token),
            control_token,
            token_file,
            ready,
            lanes,
            wrap_dir,
            stop,
            tasks: vec![proxy_task, api_task],
        })
    }

    /// Stops accepting, lets in-flight exchanges finish (up to `proxy.drain_timeout_ms`),
    /// then returns.
    pub async fn stop(self) {
        self.ready.stopping();
        self.jobs.interrupt_all();
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
        if let Some(otel) = self.journal.otel() {
            otel.flush(std::time::Duration::from_secs(3)).await;
        }
        // flakestorm.db alone then holds every run (docs/runs.md, "The -wal file").
        if let Err(e) = self.store.checkpoint().await {
            tracing::warn!("{e}");
        }
        // The proxy itself may outlive this (a lane opener holds it): its wrap directory
        // goes with the daemon, not with the process.
        if let Some(dir) = &self.wrap_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Loads the CA (`load_ca`), says so on a new readiness, and writes the CA bundle when
/// `ca.bundle_file` asks for one. Returns whether the CA was created.
fn set_up_ca(config: &Config) -> Result<(Arc<CertificateAuthority>, bool, Readiness), DaemonError> {
    let (ca, ca_created) = load_ca(&config.ca)?;
    let ready = Readiness::default();
    ready.ca_loaded(ca.not_after());
    if let Some(out) = &config.ca.bundle_file {
        let n = crate::tls::write_system_bundle(out, ca.cert_pem()).map_err(DaemonError::Bundle)?;
        tracing::info!("CA bundle written to {} ({n} certificates)", out.display());
    }
    Ok((Arc::new(ca), ca_created, ready))
}

/// Serves the proxy on `listener` until `stop`; `ready` says whether it is serving.
fn serve_proxy(
    proxy: Proxy,
    listener: TcpListener,
    stop: &CancellationToken,
    ready: &Readiness,
) -> JoinHandle<()> {
    let serving = ready.clone();
    let proxy_stop = stop.clone().cancelled_owned();
    serving.proxy_serving(true);
    tokio::spawn(async move {
        proxy.serve(listener, proxy_stop).await;
        serving.proxy_serving(false);
    })
}

/// Serves the control API on `listener` until `stop`, logging how it failed if it does.
/// No control connection lives forever either (docs/proxy.md, connection limits): a read
/// that waits longer than `deadline` ends it (`DeadlineListener`).
fn serve_control(
    listener: TcpListener,
    deadline: std::time::Duration,
    app: axum::Router,
    stop: &CancellationToken,
) -> JoinHandle<()> {
    let listener = DeadlineListener::new(listener, deadline);
    let api_stop = stop.clone();
    tokio::spawn(async move {
        // With each connection's peer and at-work flag (`api::Conn`).
        let app = app.into_make_service_with_connect_info::<crate::api::Conn>();
        let serve = axum::serve(listener, app).with_graceful_shutdown(api_stop.cancelled_owned());
        if let Err(e) = serve.await {
            tracing::error!("control listener failed: {e}");
        }
    })
}

/// The CA: the `cert_file`/`key_file` pair as it is, or the one in `dir` (created there
/// when it has none). Returns whether it was created.
fn load_ca(spec: &crate::config::CaSpec) -> Result<(CertificateAuthority, bool), DaemonError> {
    match (&spec.cert_file, &spec.key_file) {
        (Some(cert), Some(key)) => CertificateAuthority::from_files(cert, key)
            .map(|ca| (ca, false))
            .map_err(|source| DaemonError::Ca {
                what: format!("from ca.cert_file {}", cert.display()),
                source,
            }),
        _ => CertificateAuthority::load_or_create(&spec.dir).map_err(|source| DaemonError::Ca {
            what: format!("in {}", spec.dir.display()),
            source,
        }),
    }
}

/// The data_dir, checked private (docs/security.md): its store, and the control token
/// (`control_token`), which no agent this daemon starts inherits.
fn open_data_dir(config: &Config) -> Result<(Store, Arc<str>, Option<PathBuf>), DaemonError> {
    crate::store::check_private(&config.data_dir, config.control.allow_shared_data_dir)?;
    let store = Store::open(&config.data_dir)?;
    let (control_token, token_file) = control_token(config)?;
    crate::agent::withhold_env(crate::agent::vars_holding(&control_token));
    Ok((store, control_token, token_file))
}

/// `control.token`, or (none set) the token kept in `data_dir/control.token`, made at the
/// first start: the control API always needs one (docs/security.md, "Threat model").
fn control_token(config: &Config) -> Result<(Arc<str>, Option<PathBuf>), DaemonError> {
    match config.control.token.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => Ok((t.into(), None)),
        None => {
            let token = crate::api::token::ensure(&config.data_dir)?;
            let file = config.data_dir.join(crate::api::token::FILE);
            Ok((token.into(), Some(file)))
        }
    }
}

/// A proxy reachable off loopback needs `proxy.users`, or the user's explicit
/// `--allow-open-proxy` (then warned about): an open proxy by accident is a way into the
/// machine's network and its loopback services.
pub fn open_proxy_rule(config: &Config) -> Result<(), DaemonError> {
    let Ok(&addr) = config.proxy.listen.get() else {
        return Ok(()); // `bind` reports the malformed address
    };
    if addr.ip().to_canonical().is_loopback() || !config.proxy.users.is_empty() {
        return Ok(());
    }
    if !config.allow_open_proxy {
        return Err(DaemonError::OpenProxy(addr));
    }
    tracing::warn!(
        "the proxy listens on {addr} without proxy.users (--allow-open-proxy): any client \
         that can reach it may use it; loopback and link-local destinations are refused \
         unless proxy.allow_loopback_targets lists them"
    );
    Ok(())
}

/// The run kinds and the statuses a run ends with, as the run metrics label them.
fn run_kinds() -> Vec<&'static str> {
    crate::run::RunKind::all().map(|k| k.as_str()).collect()
}

fn end_statuses() -> Vec<&'static str> {
    use crate::store::RunStatus;
    RunStatus::all()
        .filter(|s| !matches!(s, RunStatus::Queued | RunStatus::Running))
        .map(|s| s.as_str())
        .collect()
}

/// The journal `journal:` asks for (its size, byte budget and redactions), handing each
/// exchange to the span exporter when `telemetry.otlp` is set.
fn journal_of(config: &Config, m: &Metrics, seed: u64) -> Result<Journal, DaemonError> {
    let j = &config.journal;
    let redactor = Redactor::new(&j.redact_headers, &j.redact_query);
    let journal = Journal::new(j.capacity, redactor).with_max_bytes(j.max_bytes);
    let otel = crate::otel::Otel::start(&config.telemetry, m, seed);
    if let Some(o) = otel.map_err(DaemonError::Telemetry)? {
        journal.set_otel(o);
    }
    Ok(journal)
}

/// A seed for runs that did not fix one (`advanced.seed`); logged so a run can be repeated.
#[allow(clippy::disallowed_methods)] // the one unseeded source: it makes the seed itself
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    crate::chaos::mix(nanos as u64 ^ u64::from(std::process::id()))
}

async fn bind(
    what: &'static str,
    addr: &crate::config::Parsed<SocketAddr>,
) -> Result<TcpListener, DaemonError> {
    let err = |source| DaemonError::Bind {
        what,
        addr: addr.to_string(),
        source,
    };
    // A config that loaded has a valid address; one built in code may not.
    let parsed = addr
        .get()
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
