//! The pooled client's TCP connector: it opens every connection through the target guard,
//! so requests forwarded in absolute form and those decrypted inside an intercepted tunnel
//! can reach no address the guard refuses (whatever the URI spells). TLS is layered on top
//! by hyper-rustls, which sees the original host name for SNI. A stdio bridge's host
//! (`mcp::stdio`) is a Unix socket in the proxy's wrap directory (`bridge`).

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use super::guard::Guard;
use super::rescue::ProxyError;

#[derive(Clone)]
pub struct GuardedConnector {
    pub guard: Arc<Guard>,
    pub timeout: Duration,
    /// The proxy's wrap directory (`bridge::WrapDir`), where stdio bridges listen.
    pub wrap_dir: Option<Arc<PathBuf>>,
}

/// An upstream connection: TCP, or a stdio bridge's Unix socket.
#[derive(Debug)]
pub enum Conn {
    Tcp(TcpStream),
    Bridge(UnixStream),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self {
            Conn::Tcp(s) => s.connected(),
            Conn::Bridge(s) => s.connected(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Bridge(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Bridge(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_flush(cx),
            Conn::Bridge(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Bridge(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = TokioIo<Conn>;
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
            if let Some(id) = crate::mcp::stdio::bridge_of(&host) {
                let dir = this.wrap_dir.as_deref().map(PathBuf::as_path);
                let unix = super::bridge::connect(dir, id, this.timeout).await?;
                return Ok(TokioIo::new(Conn::Bridge(unix)));
            }
            let https = uri.scheme_str() == Some("https");
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let tcp = this.guard.connect(&host, port, this.timeout).await?;
            Ok(TokioIo::new(Conn::Tcp(tcp)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::rescue::ErrorKind;
    use tower_service::Service;

    /// The connector is what requests inside an intercepted tunnel go through: it refuses
    /// the daemon's own ports however the URI spells the host.
    #[tokio::test]
    async fn refuses_own_listeners_whatever_the_uri_spells() {
        let guard = Arc::new(Guard::new([127, 0, 0, 1].into(), vec![]));
        guard.set_own(vec![([127, 0, 0, 1], 8081).into()]);
        let mut c = GuardedConnector {
            guard,
            timeout: Duration::from_secs(5),
            wrap_dir: None,
        };
        for uri in [
            "https://127.1:8081/v1/chaos",
            "http://2130706433:8081/",
            "https://[::ffff:127.0.0.1]:8081/",
        ] {
            let err = c.call(uri.parse().unwrap()).await.expect_err(uri);
            assert_eq!(err.kind, ErrorKind::ForbiddenTarget, "{uri}: {err}");
        }
    }
}
