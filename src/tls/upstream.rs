//! TLS client configuration for connections to upstream servers: webpki roots, the OS
//! store, and `proxy.upstream_ca_file` (private CAs, test origins).

use std::path::Path;
use std::sync::Arc;

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

pub fn client_config(extra_ca: Option<&Path>) -> Result<UpstreamTls, TlsError> {
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
    if let Some(path) = extra_ca {
        for cert in read_pem_certs(path)? {
            roots.add(cert).map_err(|e| TlsError::BadFile {
                path: path.into(),
                message: e.to_string(),
            })?;
        }
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
