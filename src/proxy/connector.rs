//! The pooled client's TCP connector: it opens every connection through the target guard,
//! so requests forwarded in absolute form and those decrypted inside an intercepted tunnel
//! can reach no address the guard refuses (whatever the URI spells). TLS is layered on top
//! by hyper-rustls, which sees the original host name for SNI.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::guard::Guard;
use super::rescue::ProxyError;

#[derive(Clone)]
pub struct GuardedConnector {
    pub guard: Arc<Guard>,
    pub timeout: Duration,
}

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = ProxyError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, ProxyError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ProxyError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let https = uri.scheme_str() == Some("https");
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let tcp = this.guard.connect(&host, port, this.timeout).await?;
            Ok(TokioIo::new(tcp))
        })
    }
}
