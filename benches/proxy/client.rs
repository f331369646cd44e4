//! The reqwest clients: which way a client reaches the origin (direct or through the proxy,
//! plain HTTP or HTTPS, keep-alive or not) and the TLS roots it trusts.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::REQUEST_TIMEOUT;
use crate::origins::{OriginCounts, provider};

#[derive(Clone, Copy, PartialEq)]
pub enum Proto {
    Http,
    Https,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Conn {
    KeepAlive,
    NewPerRequest,
}

/// One way of reaching the origin: a client plus what is needed to account for it.
pub struct Endpoint {
    pub client: reqwest::Client,
    pub base: String,
    pub origin: Arc<OriginCounts>,
    pub proxy_pid: u32,
    /// The origin's own process, when it is one (nginx): its CPU is counted per request.
    pub origin_pid: Option<u32>,
    /// The requests go through the proxy.
    pub via_proxy: bool,
}

pub fn client_tls(ca_pem: &Path) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem)? {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

pub fn build_client(
    tls: rustls::ClientConfig,
    proxy: Option<&str>,
    conn: Conn,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .http1_only()
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(5));
    builder = match proxy {
        Some(url) => builder.proxy(reqwest::Proxy::all(url)?),
        None => builder.no_proxy(),
    };
    if conn == Conn::NewPerRequest {
        builder = builder.pool_max_idle_per_host(0);
    }
    Ok(builder.build()?)
}

pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(out, ": {s}");
        source = s.source();
    }
    out
}
