//! Accepting connections and stopping gracefully: on shutdown the listener closes, every
//! HTTP connection is asked to finish its in-flight exchanges (HTTP/1.1 closes after the
//! current response, HTTP/2 sends GOAWAY), and whatever is still running at the drain
//! deadline is cut.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};

use super::Proxy;
use super::service::{self, ConnCtx};

/// How long a client may take to send a request head (slow-loris bound).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

impl Proxy {
    /// Serves `listener` until `shutdown` resolves, then drains.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => self.spawn_connection(stream, peer),
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning on the error.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        drop(listener);
        self.drain().await;
    }

    fn spawn_connection(&self, stream: TcpStream, peer: SocketAddr) {
        let _ = stream.set_nodelay(true);
        let proxy = self.clone();
        self.inner.shutdown.tasks.spawn(async move {
            let _open = proxy.metrics().connection_opened();
            let ctx = ConnCtx {
                peer,
                user: None,
                tunnel: None,
            };
            serve_http(proxy, ctx, TokioIo::new(stream)).await;
        });
    }

    async fn drain(&self) {
        let s = &self.inner.shutdown;
        s.drain.cancel();
        s.tasks.close();
        let deadline = self.settings().drain_timeout;
        if tokio::time::timeout(deadline, s.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} connections still open after {deadline:?}; closing them",
                s.tasks.len()
            );
            s.hard.cancel();
        }
    }
}

/// Serves HTTP/1.1 or HTTP/2 on one client connection (the proxy port, or a decrypted
/// tunnel), honouring graceful shutdown. Boxed: a CONNECT handled here spawns a tunnel that
/// calls this again, and the recursion needs a named future type.
pub(super) fn serve_http<I>(
    proxy: Proxy,
    ctx: ConnCtx,
    io: I,
) -> Pin<Box<dyn Future<Output = ()> + Send>>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    Box::pin(serve_http_inner(proxy, ctx, io))
}

async fn serve_http_inner<I>(proxy: Proxy, ctx: ConnCtx, io: I)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(proxy.settings().max_header_bytes);
    builder.http2().timer(TokioTimer::new());
    let peer = ctx.peer;
    let drain = proxy.inner.shutdown.drain.clone();
    let hard = proxy.inner.shutdown.hard.clone();
    let svc = {
        let proxy = proxy.clone();
        service_fn(move |req| service::handle(proxy.clone(), ctx.clone(), req))
    };
    let conn = builder.serve_connection_with_upgrades(io, svc);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = drain.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                r = conn.as_mut() => r,
                () = hard.cancelled() => return,
            }
        }
    };
    if let Err(e) = result {
        log_connection_error(peer, e.as_ref());
    }
}

/// Client mistakes (bad request bytes, slow heads) are worth a line; a client hanging up
/// is normal and only visible at debug level.
fn log_connection_error(peer: SocketAddr, e: &(dyn std::error::Error + 'static)) {
    match e.downcast_ref::<hyper::Error>() {
        Some(h) if h.is_parse() || h.is_parse_too_large() || h.is_timeout() => {
            tracing::info!("rejected request from {peer}: {h}");
        }
        _ => tracing::debug!("connection from {peer} ended: {e}"),
    }
}
