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

pub(super) fn client(settings: &Settings) -> Result<Client, String> {
    let tls = crate::tls::client_config(&[])
        .map(|t| (*t.pooled).clone())
        .map_err(|e| format!("TLS for the collector: {e}"))?;
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
        .map(|(n, v)| {
            // Checked when the settings were read (`spec::header_problem`); said again
            // rather than dropped if one slipped through.
            let name = http::HeaderName::from_bytes(n.as_bytes())
                .map_err(|_| format!("`{n}` is not a valid header name"))?;
            let value = http::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of `{n}` is not a valid header value"))?;
            Ok((name, value))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Client {
        inner: opentelemetry_http::hyper::HyperClient::new(https, settings.timeout, None),
        headers: Arc::new(headers),
    })
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
