//! TLS client configuration for connections to upstream servers: webpki roots, the OS
//! store, and `proxy.upstream_ca_file` (private CAs, test origins).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use super::{TlsError, provider, read_pem_certs};

/// Client configs for upstream TLS.
#[derive(Clone, Debug)]
pub struct UpstreamTls {
    /// For the pooled client; its connector sets ALPN (h2, http/1.1).
    pub pooled: Arc<ClientConfig>,
    /// HTTP/1.1 only, for upgrade requests (WebSocket), which need an h1 connection.
    pub http1: Arc<ClientConfig>,
}

/// The certificates of a CA bundle (`proxy.upstream_ca_file`), each checked to be a usable
/// trust anchor, so a bad bundle is refused when the config loads.
pub fn read_ca_bundle(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = read_pem_certs(path)?;
    let mut scratch = RootCertStore::empty();
    for cert in &certs {
        scratch.add(cert.clone()).map_err(|e| TlsError::BadFile {
            path: path.into(),
            message: e.to_string(),
        })?;
    }
    Ok(certs)
}

/// Public and OS roots, plus `extra_ca` (from `read_ca_bundle`).
pub fn client_config(extra_ca: &[CertificateDer<'static>]) -> Result<UpstreamTls, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    tracing::debug!(
        added,
        ignored,
        errors = native.errors.len(),
        "loaded OS root certificates"
    );
    for cert in extra_ca {
        roots.add(cert.clone())?;
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http1 = config.clone();
    http1.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(UpstreamTls {
        pooled: Arc::new(config),
        http1: Arc::new(http1),
    })
}
