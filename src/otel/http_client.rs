//! The HTTP client HTTP/protobuf exports go through: opentelemetry-http's hyper client
//! over the rustls connector the proxy's upstreams use (public and OS roots, ring), so an
//! `https://` collector needs nothing more. The configured headers are set on every
//! request here, last, so they win over any the exporter took from the environment
//! (config over variables, `settings`).

use std::sync::Arc;

use bytes::Bytes;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

use super::settings::Settings;

/// A hyper client that sets `headers` on every request.
#[derive(Debug)]
pub(super) struct Client {
    inner: opentelemetry_http::hyper::HyperClient<HttpsConnector<HttpConnector>>,
    headers: Arc<Vec<(http::HeaderName, http::HeaderValue)>>,
}

pub(super) fn client(settings: &Settings) -> Client {
    // Roots that fail to load leave the public ones (webpki); a plain-HTTP collector needs
    // none.
    let tls = crate::tls::client_config(&[])
        .map(|t| (*t.pooled).clone())
        .unwrap_or_else(|_| fallback_tls());
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    let headers = settings
        .headers
        .iter()
        .filter_map(|(n, v)| {
            Some((
                http::HeaderName::from_bytes(n.as_bytes()).ok()?,
                http::HeaderValue::from_str(v).ok()?,
            ))
        })
        .collect();
    Client {
        inner: opentelemetry_http::hyper::HyperClient::new(https, settings.timeout, None),
        headers: Arc::new(headers),
    }
}

fn fallback_tls() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, mut request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        for (name, value) in self.headers.iter() {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        self.inner.send_bytes(request).await
    }
}
