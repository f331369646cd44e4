//! Accepting connections and stopping gracefully: on shutdown the listener closes, every
//! HTTP connection is asked to finish its in-flight exchanges (HTTP/1.1 closes after the
//! current response, HTTP/2 sends GOAWAY), and whatever is still running at the drain
//! deadline is cut. Connections over `proxy.max_connections` are refused, accept errors
//! back off (`accept`), and every connection is held to the header and idle deadlines
//! (`watchdog`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use http_body_util::BodyExt;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};

use super::accept::{self, Backoff, LogLimiter};
use super::watchdog::{Activity, Expired, Watched};
use super::{ConnCtx, Proxy, ProxyBody};
use super::{capture, service};
use crate::journal::Lane;
use crate::telemetry::ConnectionGuard;

impl Proxy {
    /// Serves `listener` until `shutdown` resolves, then drains.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        self.serve_lane(listener, None, shutdown).await;
    }

    /// Serves `listener` as `lane` (a pool instance's own listener: what arrives on it is
    /// its current case's) until `shutdown` resolves, then drains (a lane's listener only
    /// stops taking connections: the proxy drains once, with its main listener).
    pub async fn serve_lane(
        self,
        listener: TcpListener,
        lane: Option<Lane>,
        shutdown: impl Future<Output = ()>,
    ) {
        self.serve_listener(listener, lane, shutdown, Arrival::Proxy)
            .await;
    }

    /// `serve_lane`, each connection handled as `arrival` says: a proxy client, or a
    /// connection captured in an agent's namespace (its target its original destination).
    pub(super) async fn serve_listener(
        self,
        listener: TcpListener,
        lane: Option<Lane>,
        shutdown: impl Future<Output = ()>,
        arrival: Arrival,
    ) {
        let main = lane.is_none() && matches!(arrival, Arrival::Proxy);
        tokio::pin!(shutdown);
        let mut backoff = Backoff::default();
        let mut exhausted_log = LogLimiter::new(accept::LOG_EVERY);
        let mut refused_log = LogLimiter::new(accept::LOG_EVERY);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        backoff.succeeded();
                        let lane = lane.clone();
                        self.admit(stream, peer, lane, &mut refused_log, &arrival);
                    }
                    Err(e) if accept::is_resource_exhaustion(&e) => {
                        self.metrics().connection_rejected("fd_limit");
                        let pause = backoff.failed();
                        if let Some(n) = exhausted_log.hit(tokio::time::Instant::now()) {
                            tracing::warn!(
                                "accept failed {n} time(s) in the last {:?}: {e} (pausing \
                                 accepts, now {pause:?}; raise `ulimit -n` or lower \
                                 proxy.max_connections)",
                                accept::LOG_EVERY
                            );
                        }
                        tokio::select! {
                            () = &mut shutdown => break,
                            () = tokio::time::sleep(pause) => {}
                        }
                    }
                    // Per-connection failures (the peer reset before accept): nothing to wait for.
                    Err(e) => tracing::debug!("accept failed: {e}"),
                },
            }
        }
        drop(listener);
        if main {
            self.drain().await;
        }
    }

    /// Starts serving `stream`, or refuses it when `proxy.max_connections` are open.
    fn admit(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        lane: Option<Lane>,
        refused_log: &mut LogLimiter,
        arrival: &Arrival,
    ) {
        let open = &self.inner.open_connections;
        let max = self.settings().max_connections;
        // Only this loop increments, so the check cannot be raced past the cap.
        if open.load(Ordering::Acquire) >= max {
            self.metrics().connection_rejected("cap");
            if let Some(n) = refused_log.hit(tokio::time::Instant::now()) {
                tracing::warn!(
                    "refused {n} connection(s) in the last {:?}: {max} open \
                     (proxy.max_connections); latest from {peer}",
                    accept::LOG_EVERY
                );
            }
            match arrival {
                Arrival::Proxy => accept::refuse(stream),
                // Not a proxy client: an HTTP 503 would be garbage to it. Closed.
                Arrival::Captured(_) => drop(stream),
            }
            return;
        }
        open.fetch_add(1, Ordering::AcqRel);
        let slot = Slot {
            proxy: self.clone(),
            _metric: self.metrics().connection_opened(),
        };
        let _ = stream.set_nodelay(true);
        let proxy = self.clone();
        let arrival = arrival.clone();
        self.inner.shutdown.tasks.spawn(async move {
            let ctx = ConnCtx {
                peer,
                peer_text: peer.to_string().into(),
                user: None,
                tunnel: None,
                plain: false,
                lane,
            };
            match arrival {
                Arrival::Proxy => serve_watched(proxy, ctx, stream, slot).await,
                Arrival::Captured(at) => capture::serve(proxy, ctx, stream, slot, at).await,
            }
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

/// How a listener's connections are handled.
#[derive(Clone)]
pub(super) enum Arrival {
    /// Proxy clients (the main listener, a lane's).
    Proxy,
    /// Connections captured in an agent's network namespace (`agent.capture: netns`).
    Captured(std::sync::Arc<capture::CaptureAt>),
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
    // hyper IO -> tokio IO (to watch reads) -> hyper IO again; both wrappers are thin.
    Box::pin(serve_watched(proxy, ctx, TokioIo::new(io), ()))
}

/// A client socket's place under `proxy.max_connections` (and in the open-connections
/// gauge), held by the socket wrapper so a CONNECT tunnel keeps it after the upgrade.
pub(super) struct Slot {
    proxy: Proxy,
    _metric: ConnectionGuard,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.proxy
            .inner
            .open_connections
            .fetch_sub(1, Ordering::AcqRel);
    }
}

pub(super) async fn serve_watched<T, S>(proxy: Proxy, ctx: ConnCtx, io: T, slot: S)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: Unpin + Send + 'static,
{
    let activity = Activity::new();
    let io = TokioIo::new(Watched::new(io, activity.clone(), slot));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // The watchdog times heads from accept, which hyper's timer cannot (see watchdog).
        .header_read_timeout(None)
        .max_buf_size(proxy.settings().max_header_bytes);
    builder.http2().timer(TokioTimer::new());
    let peer = ctx.peer;
    let limits = proxy.settings().conn_limits;
    let drain = proxy.inner.shutdown.drain.clone();
    let hard = proxy.inner.shutdown.hard.clone();
    let svc = {
        let proxy = proxy.clone();
        let activity = activity.clone();
        service_fn(move |req| {
            let busy = activity.request_started();
            let handled = service::handle(proxy.clone(), ctx.clone(), req);
            async move {
                // The request stays in flight until hyper drops the response body.
                handled.await.map(|resp| {
                    resp.map(|body| -> ProxyBody {
                        body.map_frame(move |f| {
                            let _ = &busy;
                            f
                        })
                        .boxed()
                    })
                })
            }
        })
    };
    let conn = builder.serve_connection_with_upgrades(io, svc);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        expired = activity.expired(limits) => {
            proxy.metrics().connection_timeout(expired.label());
            match expired {
                Expired::Header => tracing::info!(
                    "closed connection from {peer}: no complete request head within {:?}",
                    limits.header
                ),
                Expired::Idle => tracing::debug!(
                    "closed connection from {peer}: idle for {:?}",
                    limits.idle
                ),
            }
            return;
        }
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
