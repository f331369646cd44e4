//! Talking to upstream servers: a pooled client (HTTP/1.1 or HTTP/2 by ALPN, chosen
//! independently of the client side) for ordinary requests, and a dedicated HTTP/1.1
//! connection for upgrade requests (WebSocket), whose bytes are then relayed both ways.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls_pki_types::ServerName;

use super::ProxyBody;
use super::connector::GuardedConnector;
use super::guard::Guard;
use super::rescue::{ErrorKind, ProxyError};
use crate::tls::UpstreamTls;

pub struct Upstream {
    client: Client<HttpsConnector<GuardedConnector>, ProxyBody>,
    tls: UpstreamTls,
    guard: Arc<Guard>,
    connect_timeout: Duration,
    response_timeout: Duration,
}

/// How long an unused upstream connection is kept for reuse. An agent's calls to one host
/// come seconds apart; each idle TLS connection holds its buffers (tens of KiB), so a burst
/// of 200 parallel calls should not hold megabytes for long after it (docs/benchmarks.md).
const UPSTREAM_IDLE: Duration = Duration::from_secs(20);

/// A client's request body that failed to arrive whole (bad chunked framing, a reset):
/// the client's fault, answered 400, never blamed on the upstream.
#[derive(Debug, thiserror::Error)]
#[error("the client's request body is malformed or incomplete: {0}")]
pub struct ClientBodyError(#[source] pub hyper::Error);

impl Upstream {
    pub fn new(
        tls: UpstreamTls,
        guard: Arc<Guard>,
        connect_timeout: Duration,
        response_timeout: Duration,
        wrap_dir: Option<Arc<std::path::PathBuf>>,
    ) -> Self {
        let tcp = GuardedConnector {
            guard: guard.clone(),
            timeout: connect_timeout,
            wrap_dir,
        };
        let https = HttpsConnectorBuilder::new()
            .with_tls_config((*tls.pooled).clone())
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(UPSTREAM_IDLE)
            .build(https);
        Upstream {
            client,
            tls,
            guard,
            connect_timeout,
            response_timeout,
        }
    }

    /// Sends `req` (absolute URI) and waits for the response head.
    pub async fn send(&self, req: Request<ProxyBody>) -> Result<Response<Incoming>, ProxyError> {
        let authority = authority_of(&req);
        match tokio::time::timeout(self.response_timeout, self.client.request(req)).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(classify(&e, e.is_connect(), &authority)),
            Err(_) => Err(self.head_timeout(&authority)),
        }
    }

    /// Forwards an upgrade request over a fresh HTTP/1.1 connection. On `101`, relays the
    /// two upgraded connections until either side closes.
    pub async fn upgrade(
        &self,
        mut req: Request<ProxyBody>,
    ) -> Result<Response<Incoming>, ProxyError> {
        let authority = authority_of(&req);
        let client_side = hyper::upgrade::on(&mut req);
        let io = self.connect_io(&req, &authority).await?;
        origin_form(&mut req);
        let fut = async {
            let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
                .handshake::<_, ProxyBody>(io)
                .await
                .map_err(|e| classify(&e, false, &authority))?;
            tokio::spawn(async move {
                if let Err(e) = conn.with_upgrades().await {
                    tracing::debug!("upgrade connection to upstream ended: {e}");
                }
            });
            sender
                .send_request(req)
                .await
                .map_err(|e| classify(&e, false, &authority))
        };
        let mut resp = tokio::time::timeout(self.response_timeout, fut)
            .await
            .map_err(|_| self.head_timeout(&authority))??;
        if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            let upstream_side = hyper::upgrade::on(&mut resp);
            tokio::spawn(async move {
                let (Ok(client), Ok(upstream)) = tokio::join!(client_side, upstream_side) else {
                    tracing::debug!("upgrade to {authority} abandoned by one side");
                    return;
                };
                let mut client = TokioIo::new(client);
                let mut upstream = TokioIo::new(upstream);
                if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
                    tracing::debug!("upgraded relay with {authority} ended: {e}");
                }
            });
        }
        Ok(resp)
    }

    /// A TCP (and, for https, TLS with ALPN http/1.1) connection for an upgrade request.
    async fn connect_io(
        &self,
        req: &Request<ProxyBody>,
        authority: &str,
    ) -> Result<TokioIo<Box<dyn Io>>, ProxyError> {
        let uri = req.uri();
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tcp = self
            .guard
            .connect(&host, port, self.connect_timeout)
            .await?;
        if !https {
            return Ok(TokioIo::new(Box::new(tcp)));
        }
        let name = ServerName::try_from(host.clone()).map_err(|_| {
            ProxyError::new(
                ErrorKind::BadRequest,
                format!("`{host}` is not a valid TLS server name"),
            )
        })?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.http1.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| classify(&e, true, authority))?;
        Ok(TokioIo::new(Box::new(tls)))
    }

    fn head_timeout(&self, authority: &str) -> ProxyError {
        let secs = self.response_timeout.as_secs_f64();
        ProxyError::new(
            ErrorKind::UpstreamTimeout,
            format!("upstream {authority} sent no response head within {secs}s"),
        )
    }
}

/// Makes `req` what an origin server expects on a direct connection (RFC 9112 §3.2.1):
/// the path and query as the target, the authority in `Host`. The pooled client does this
/// itself; the upgrade connection is a bare HTTP/1.1 connection that sends what it gets.
fn origin_form<B>(req: &mut Request<B>) {
    let uri = req.uri().clone();
    if let Some(a) = uri.authority()
        && !req.headers().contains_key(http::header::HOST)
        && let Ok(host) = http::HeaderValue::from_str(a.as_str())
    {
        req.headers_mut().insert(http::header::HOST, host);
    }
    let pq = uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    if let Ok(origin) = pq.parse() {
        *req.uri_mut() = origin;
    }
}

/// Object-safe stream for upgrade connections (plain or TLS).
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

fn authority_of<B>(req: &Request<B>) -> String {
    req.uri()
        .authority()
        .map_or_else(|| "?".into(), |a| a.to_string())
}

/// `e` and the errors the `io::Error`s in it wrap, outermost first. Those need `get_ref`:
/// `io::Error::source` skips the error it wraps (connectors nest two of them around
/// `rustls::Error`, rustls reports a close without `close_notify` inside one).
pub(super) fn wrapped<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&cur: &&'a (dyn StdError + 'static)| {
        cur.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn StdError + 'static))
    })
}

/// Looks for a TLS error or a timeout in `e` and in the `io::Error`s it wraps.
fn inspect(e: &(dyn StdError + 'static), tls: &mut Option<String>, timed_out: &mut bool) {
    for cur in wrapped(e) {
        if let Some(r) = cur.downcast_ref::<rustls::Error>() {
            *tls = Some(r.to_string());
        }
        let io = cur.downcast_ref::<std::io::Error>();
        *timed_out |= io.is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
    }
}

/// Turns an upstream failure into a `ProxyError` that names the upstream and the cause.
/// A `ProxyError` already in the chain (the guard refused, the connector timed out) and a
/// client body failure are reported as themselves.
pub(super) fn classify(
    err: &(dyn StdError + 'static),
    connecting: bool,
    authority: &str,
) -> ProxyError {
    let mut chain = vec![];
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    let (mut tls, mut timed_out) = (None, false);
    while let Some(e) = cur {
        if let Some(p) = e.downcast_ref::<ProxyError>() {
            return p.clone();
        }
        if let Some(b) = e.downcast_ref::<ClientBodyError>() {
            return ProxyError::new(ErrorKind::BadRequest, b.to_string());
        }
        inspect(e, &mut tls, &mut timed_out);
        let text = e.to_string();
        // hyper-util's wrappers ("client error (Connect)") say nothing the cause does not.
        if !text.starts_with("client error") && !chain.contains(&text) {
            chain.push(text);
        }
        cur = e.source();
    }
    let cause = chain.join(": ");
    if let Some(t) = tls {
        return ProxyError::new(
            ErrorKind::UpstreamTls,
            format!("TLS with upstream {authority} failed: {t}"),
        );
    }
    if timed_out {
        return ProxyError::new(
            ErrorKind::UpstreamTimeout,
            format!("upstream {authority} timed out: {cause}"),
        );
    }
    if connecting {
        return ProxyError::new(
            ErrorKind::UpstreamConnect,
            format!("could not connect to upstream {authority}: {cause}"),
        );
    }
    ProxyError::new(
        ErrorKind::UpstreamProtocol,
        format!("upstream {authority} failed: {cause}"),
    )
}
