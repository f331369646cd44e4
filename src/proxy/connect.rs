//! `CONNECT host:port`: passthrough hosts (and hosts outside `proxy.intercept`) are
//! tunnelled blind; others are intercepted: the first bytes are peeked, a TLS ClientHello
//! gets a leaf certificate for its SNI (or the CONNECT host) and the decrypted requests
//! are served by the same service, and so are plain HTTP requests (a client that tunnels
//! its `http://` calls); anything else is tunnelled as is.

use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, Scheme};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use rustls::server::Acceptor;
use tokio::io::AsyncReadExt;
use tokio_rustls::LazyConfigAcceptor;

use super::recorder::Recorder;
use super::rescue::{ErrorKind, ProxyError};
use super::route::{bare_host, rebuild};
use super::tunnel::{Prefixed, relay};
use super::{ConnCtx, Proxy, ProxyBody, listener};
use crate::exchange::{Outcome, Route};

/// How long to wait for the client's first bytes before assuming a server-speaks-first
/// protocol (SMTP, SSH) and tunnelling blind. TLS clients send their hello at once.
const FIRST_BYTES_WAIT: Duration = Duration::from_secs(3);

/// First byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE: u8 = 0x16;

/// Opens the tunnel of a `CONNECT` to `authority` (checked by `route`) and answers 200; the
/// error: the tunnel could not be opened (unreachable, refused destination).
pub(super) async fn open(
    proxy: &Proxy,
    ctx: &ConnCtx,
    req: &mut Request<Incoming>,
    authority: Authority,
) -> Result<Response<ProxyBody>, ProxyError> {
    let host = bare_host(&authority);
    let port = authority.port_u16().unwrap_or(443);
    let on_upgrade = hyper::upgrade::on(req);
    let s = proxy.settings();
    if s.passthrough.is_match(host) || !s.intercept.is_match(host) {
        // Connect before answering, so an unreachable host is a real 502 on the CONNECT.
        let upstream = proxy
            .inner
            .guard
            .connect(host, port, s.connect_timeout)
            .await?;
        let p = proxy.clone();
        proxy.inner.shutdown.tasks.spawn(async move {
            if let Ok(client) = on_upgrade.await {
                relay(&p, TokioIo::new(client), upstream, authority.as_str()).await;
            }
        });
    } else {
        // Refused destinations fail the CONNECT itself, before any TLS; other resolution
        // failures (and a resolver slower than connect_timeout_ms, which must not hold the
        // 200 back) surface on the requests inside, whose connections are checked too.
        let timeout = proxy.settings().connect_timeout;
        let resolved = tokio::time::timeout(timeout, proxy.inner.guard.resolve(host, port)).await;
        if let Ok(Err(e)) = resolved
            && e.kind == ErrorKind::ForbiddenTarget
        {
            return Err(e);
        }
        let p = proxy.clone();
        proxy
            .inner
            .shutdown
            .tasks
            .spawn(intercept(p, ctx.clone(), on_upgrade, authority));
    }
    let mut ok = Response::new(
        Empty::<Bytes>::new()
            .map_err(|never| match never {})
            .boxed(),
    );
    *ok.status_mut() = StatusCode::OK;
    Ok(ok)
}

async fn intercept(proxy: Proxy, ctx: ConnCtx, on_upgrade: OnUpgrade, authority: Authority) {
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    intercept_io(proxy, ctx, TokioIo::new(upgraded), authority, false).await;
}

/// Serves a connection to `authority` that the proxy stands in for: a CONNECT tunnel's,
/// or one captured in an agent's namespace (`agent.capture: netns`). Its first bytes say
/// what it carries: plain HTTP and TLS (by SNI, with a leaf of flakestorm's CA) are served
/// as requests to `authority`, anything else is relayed to it untouched. With `rename`
/// (`authority` is an address the client reached without naming it to flakestorm), the
/// name the client gives inside, TLS's SNI or plain HTTP's `Host`, is the target's host,
/// on the same port: a client that connects to `localhost` reaches the origin by that name.
pub(super) async fn intercept_io<I>(
    proxy: Proxy,
    ctx: ConnCtx,
    mut io: I,
    mut authority: Authority,
    rename: bool,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut buf = vec![0u8; 512];
    let n = match tokio::time::timeout(FIRST_BYTES_WAIT, io.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => return,
        Ok(Ok(n)) => n,
        Err(_) => 0,
    };
    buf.truncate(n);
    let io = Prefixed::new(Bytes::from(buf), io);
    let host = bare_host(&authority).to_string();
    if is_http_request(&io) {
        if rename && let Some(named) = host_header(io.prefix()).and_then(|h| on_port(h, &authority))
        {
            authority = named;
        }
        let ctx = ConnCtx {
            tunnel: Some(authority),
            plain: true,
            ..ctx
        };
        return listener::serve_http(proxy, ctx, TokioIo::new(io)).await;
    }
    if n == 0 || !io_starts_tls(&io) {
        return neither_http_nor_tls(&proxy, &ctx, io, &authority).await;
    }
    // The whole handshake is bounded: a partial TLS record must not hold the tunnel forever.
    let limit = proxy.settings().tls_handshake_timeout;
    let handshake = async {
        let start = LazyConfigAcceptor::new(Acceptor::default(), io)
            .await
            .map_err(|e| e.to_string())?;
        let name = start
            .client_hello()
            .server_name()
            .map_or(host.clone(), str::to_string);
        let config = proxy
            .inner
            .leaves
            .server_config(&name)
            .map_err(|e| e.to_string())?;
        let tls = start.into_stream(config).await.map_err(|e| e.to_string())?;
        Ok::<_, String>((tls, name))
    };
    let tls = match tokio::time::timeout(limit, handshake).await {
        Ok(Ok((tls, name))) => {
            if rename && let Some(named) = on_port(&name, &authority) {
                authority = named;
            }
            tls
        }
        Ok(Err(e)) => return handshake_failed(&proxy, &ctx, &authority, &e),
        Err(_) => {
            proxy.metrics().connection_timeout("tls_handshake");
            let why = format!("not finished within {limit:?} (proxy.tls_handshake_timeout_ms)");
            return handshake_failed(&proxy, &ctx, &authority, &why);
        }
    };
    proxy.metrics().tls_handshake(true);
    let ctx = ConnCtx {
        tunnel: Some(authority),
        plain: false,
        ..ctx
    };
    listener::serve_http(proxy, ctx, TokioIo::new(tls)).await;
}

/// The `Host` header's value in the peeked head of an HTTP/1 request.
fn host_header(head: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // A head cut inside a multi-byte character: what is whole of it.
        let valid = std::str::from_utf8(head).err()?.valid_up_to();
        std::str::from_utf8(&head[..valid]).ok()
    })?;
    let (_, headers) = text.split_once("\r\n")?;
    headers.split("\r\n").find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("host")
            .then(|| value.trim())
    })
}

/// `host` (a name, maybe with a port of its own, which is dropped) on `authority`'s port.
fn on_port(host: &str, authority: &Authority) -> Option<Authority> {
    let bare = host.parse::<Authority>().ok()?;
    let port = authority.port_u16()?;
    format!("{}:{port}", bare.host()).parse().ok()
}

/// What is neither HTTP nor TLS is relayed untouched: journaled as `tcp` when it was
/// captured in the agent's namespace (`tcp`), else a tunnel as the client asked.
async fn neither_http_nor_tls<I>(proxy: &Proxy, ctx: &ConnCtx, io: I, authority: &Authority)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if ctx.peer_text.starts_with(super::capture::CAPTURED) {
        return super::tcp::relay_journaled(proxy, ctx, io, authority.as_str()).await;
    }
    let port = authority.port_u16().unwrap_or(443);
    let timeout = proxy.settings().connect_timeout;
    match proxy
        .inner
        .guard
        .connect(bare_host(authority), port, timeout)
        .await
    {
        Ok(upstream) => relay(proxy, io, upstream, authority.as_str()).await,
        Err(e) => tracing::info!("non-TLS tunnel from {}: {e}", ctx.peer),
    }
}

/// The peeked bytes open an HTTP/1 request: a method (upper-case letters) and a space.
fn is_http_request<T>(io: &Prefixed<T>) -> bool {
    let head = io.prefix();
    let method = head.iter().take_while(|b| b.is_ascii_uppercase()).count();
    (3..=10).contains(&method) && head.get(method) == Some(&b' ')
}

fn io_starts_tls<T>(io: &Prefixed<T>) -> bool {
    io.first_byte() == Some(TLS_HANDSHAKE)
}

fn handshake_failed(proxy: &Proxy, ctx: &ConnCtx, authority: &Authority, why: &str) {
    proxy.metrics().tls_handshake(false);
    tracing::info!(
        "TLS handshake with client {} for {authority} failed: {why}",
        ctx.peer
    );
    record_handshake_failure(proxy, ctx, authority, why);
}

/// Records a CONNECT whose TLS handshake with the client failed, so that a run can tell an
/// agent that does not trust flakestorm's CA: no request came through the tunnel. Not a
/// request: journaled, not counted in the request metrics (the handshake metric counts it).
fn record_handshake_failure(proxy: &Proxy, ctx: &ConnCtx, authority: &Authority, why: &str) {
    let uri = rebuild(Scheme::HTTPS, authority.clone(), &Uri::from_static("/"));
    let Ok(req) = Request::connect(uri.clone()).body(()) else {
        return;
    };
    let mut ex = Recorder::open(proxy, ctx, &req, &uri, Route::Intercepted).into_exchange();
    let host = uri.host().unwrap_or_default();
    let err = ProxyError::new(
        ErrorKind::ClientTls,
        format!("the client aborted TLS with flakestorm for {host}: {why}"),
    );
    ex.outcome = Outcome::Error {
        error: err.info(),
        status: None,
    };
    proxy.journal().record(ex);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_request_is_named_by_its_host_on_the_port_it_reached() {
        let head = b"GET /search?q=x HTTP/1.1\r\nUser-Agent: t\r\nhost: localhost:9000\r\n\r\n";
        assert_eq!(host_header(head), Some("localhost:9000"));
        let at: Authority = "127.0.0.1:9000".parse().unwrap();
        assert_eq!(on_port("localhost:9000", &at).unwrap(), "localhost:9000");
        // A Host that names another port: the port the client connected to wins.
        assert_eq!(on_port("localhost", &at).unwrap(), "localhost:9000");
        assert_eq!(on_port("api.example:80", &at).unwrap(), "api.example:9000");
        // No Host, or one that is no authority: no name.
        assert_eq!(host_header(b"GET / HTTP/1.1\r\n\r\n"), None);
        assert!(on_port("a b", &at).is_none());
        // A head cut inside a character still gives what is whole.
        let mut cut = b"GET / HTTP/1.1\r\nHost: a.example\r\nX: \xc3".to_vec();
        assert_eq!(host_header(&cut), Some("a.example"));
        cut.clear();
        assert_eq!(host_header(&cut), None);
    }
}
