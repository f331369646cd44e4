//! Integration-test harness: the real daemon on `127.0.0.1:0`, in-process origins (HTTP,
//! HTTPS with the fixture test CA, chosen ALPN), and clients that reach them only through
//! the proxy. Every helper returns `(addr, stop)`-style handles; nothing binds a fixed port
//! and nothing sleeps to wait for readiness.
#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod agents;
pub mod cli;
pub mod origin;
pub mod pool;
pub mod ports;
pub mod procs;
pub mod raw;
pub mod raw_agent;
pub mod serve;
pub mod weather;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use flakestorm::config::{self, Config, Overrides};
use flakestorm::daemon::Daemon;
use rustls::ClientConfig;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A running proxy daemon and the temp folder holding its CA.
pub struct TestProxy {
    pub daemon: Daemon,
    pub dir: tempfile::TempDir,
}

impl TestProxy {
    pub fn addr(&self) -> SocketAddr {
        self.daemon.proxy_addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.daemon.proxy_addr)
    }

    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(&self.daemon.ca_cert_path).unwrap()
    }

    pub async fn stop(self) {
        self.daemon.stop().await;
    }

    /// A client for this daemon's control API: no proxy, its token on every request.
    pub fn control(&self) -> reqwest::Client {
        control_client(&self.daemon.control_token)
    }
}

/// Starts a daemon on ephemeral ports, trusting the fixture CA upstream. `yaml` is extra
/// config merged over that base (sections as in flakestorm.yaml).
pub async fn start_proxy(yaml: &str) -> TestProxy {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    let base = format!(
        "proxy:\n  listen: 127.0.0.1:0\n  upstream_ca_file: {}\ncontrol:\n  listen: 127.0.0.1:0\n",
        fixture("test-ca.pem").display()
    );
    std::fs::write(&path, merge_yaml(&base, yaml)).unwrap();
    let loaded = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap_or_else(|e| panic!("test config invalid: {e}"));
    start_with(&loaded.config, dir).await
}

pub async fn start_with(config: &Config, dir: tempfile::TempDir) -> TestProxy {
    let daemon = Daemon::start(config).await.expect("daemon starts");
    TestProxy { daemon, dir }
}

/// Merges two YAML documents of sections (maps are merged one level deep).
fn merge_yaml(base: &str, extra: &str) -> String {
    let mut b: serde_json::Value = parse_yaml(base);
    let e: serde_json::Value = parse_yaml(extra);
    if let (Some(bm), Some(em)) = (b.as_object_mut(), e.as_object()) {
        for (k, v) in em {
            match (bm.get_mut(k).and_then(|x| x.as_object_mut()), v.as_object()) {
                (Some(existing), Some(add)) => existing.extend(add.clone()),
                _ => {
                    bm.insert(k.clone(), v.clone());
                }
            }
        }
    }
    serde_json::to_string(&b).unwrap() // JSON is YAML
}

fn parse_yaml(yaml: &str) -> serde_json::Value {
    use figment::providers::Format;
    use flakestorm::config::Yaml;
    figment::Figment::from(Yaml::string(yaml))
        .extract()
        .unwrap_or(serde_json::Value::Null)
}

pub fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls client config trusting only `pem` roots, offering `alpn`.
pub fn tls_client(pem: &str, alpn: &[&[u8]]) -> ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut c = ClientConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    c
}

/// A reqwest client that reaches everything through `proxy`, trusting only its CA.
pub fn client_via(proxy: &TestProxy, alpn: &[&[u8]]) -> reqwest::Client {
    reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(proxy.url()).unwrap())
        .use_preconfigured_tls(tls_client(&proxy.ca_pem(), alpn))
        .build()
        .unwrap()
}

/// A reqwest client that talks to loopback directly (no proxy).
pub fn direct_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .use_preconfigured_tls(tls_client("", H1))
        .build()
        .unwrap()
}

/// A client for a control API whose token is `token`: no proxy, `Authorization: Bearer`
/// on every request.
pub fn control_client(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let auth = format!("Bearer {token}").parse().unwrap();
    headers.insert(reqwest::header::AUTHORIZATION, auth);
    reqwest::Client::builder()
        .no_proxy()
        .use_preconfigured_tls(tls_client("", H1))
        .default_headers(headers)
        .build()
        .unwrap()
}

pub const H1: &[&[u8]] = &[b"http/1.1"];
pub const H2: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Runs `fut` but fails the test instead of hanging forever.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// GET `url` with `client` and return the body text (panics on transport errors).
pub async fn get_text(client: &reqwest::Client, url: impl reqwest::IntoUrl) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

/// The test proxy's loaded config, and a run context driving the agent at `endpoint` with
/// the config's `concurrency` and `attribution` (no embedder, no progress callback).
pub fn run_context(p: &TestProxy, endpoint: &str) -> (Config, flakestorm::run::RunContext) {
    let path = p.dir.path().join("flakestorm.yaml");
    let cfg = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap()
        .config;
    let spec: flakestorm::config::AgentSpec =
        serde_json::from_value(serde_json::json!({"endpoint": endpoint})).unwrap();
    let parts = flakestorm::run::Parts {
        seed: p.daemon.chaos.seed(),
        engine: p.daemon.chaos.clone(),
        journal: p.daemon.journal.clone(),
        agent: flakestorm::agent::Agent::new(&spec.compile().unwrap(), 0).unwrap(),
        config_digest: None,
        min_score: cfg.scoring.min_score,
        embedder: None,
    };
    let ctx = flakestorm::run::RunContext::of(&cfg, parts);
    (cfg, ctx)
}

/// The verdict of the cell of invariant `inv` under `scenario`.
pub fn cell<'a>(
    r: &'a flakestorm::run::ContractReport,
    inv: &str,
    scenario: &str,
) -> &'a flakestorm::checks::Verdict {
    &r.cells
        .iter()
        .find(|c| c.invariant == inv && c.scenario == scenario)
        .unwrap_or_else(|| panic!("no cell {inv} × {scenario}"))
        .verdict
}

/// Runs the contract of `p`'s config against the agent at `endpoint`, one case at a time,
/// re-invoking it up to `retries` times when an attempt gets no response byte.
pub async fn contract_run(
    p: &TestProxy,
    endpoint: &str,
    retries: u32,
) -> flakestorm::run::ContractReport {
    let (cfg, ctx) = run_context(p, endpoint);
    let spec: flakestorm::config::AgentSpec =
        serde_json::from_value(serde_json::json!({"endpoint": endpoint})).unwrap();
    let ctx = flakestorm::run::RunContext {
        agent: flakestorm::agent::Agent::new(&spec.compile().unwrap(), retries).unwrap(),
        concurrency: 1,
        ..ctx
    };
    let contract = cfg.contract.as_ref().unwrap();
    within(
        "the contract run",
        run_contract_report(&ctx, contract, &cfg.golden_prompts),
    )
    .await
}

async fn run_contract_report(
    ctx: &flakestorm::run::RunContext,
    contract: &flakestorm::config::ContractSpec,
    golden: &[String],
) -> flakestorm::run::ContractReport {
    flakestorm::run::run_contract(ctx, contract, golden)
        .await
        .unwrap()
}
