//! One request on the proxy: route it (CONNECT, absolute-form forward, reverse route, or a
//! request decrypted inside an intercepted tunnel), build its exchange record, forward it,
//! and hand the response back with an observed body. Errors go through `rescue`.

use std::net::SocketAddr;
use std::sync::Arc;

use http::uri::{Authority, Scheme};
use http::{HeaderValue, Method, Request, Response, Uri, Version, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::Instant;

use super::fault::{self, Action, Dropped};
use super::fault_body::Transform;
use super::headers::{self, AuthError};
use super::pending::Pending;
use super::recorder::Owner;
use super::recorder::Recorder;
use super::rescue::{self, ErrorKind, ProxyError};
use super::target::{rebuild, well_formed, without_userinfo};
use super::{Proxy, ProxyBody, connect};
use super::{attack, canary, tape, upstream};
use crate::exchange::{ErrorSource, Exchange, Outcome, RequestHead, Route, Target, Timings};

/// Who is on the other end of a client connection.
#[derive(Debug, Clone)]
pub struct ConnCtx {
    pub peer: SocketAddr,
    /// `peer` as exchanges record it, written once per connection rather than per request.
    pub peer_text: Arc<str>,
    pub user: Option<Arc<str>>,
    /// Set inside an intercepted tunnel: the `CONNECT` target every request goes to.
    pub tunnel: Option<Authority>,
    /// The tunnel carries plain HTTP, not TLS (Node's `EnvHttpProxyAgent` tunnels its
    /// `http://` calls so): its requests go to `http://` and the target.
    pub plain: bool,
    /// The lane this connection came in by: a pool instance's listener (`None`: the main
    /// listener, whose lane a run with the proxy to itself sets).
    pub lane: Option<crate::journal::Lane>,
}

pub async fn handle(
    proxy: Proxy,
    ctx: ConnCtx,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Dropped> {
    if let Err(err) = well_formed(&req) {
        return Ok(reject(&proxy, &ctx, &req, err));
    }
    if let Some(authority) = ctx.tunnel.clone() {
        let (scheme, route) = match ctx.plain {
            true => (Scheme::HTTP, Route::Forward),
            false => (Scheme::HTTPS, Route::Intercepted),
        };
        let uri = rebuild(scheme, authority, req.uri());
        return exchange(proxy, ctx, req, uri, route).await;
    }
    // The rare routes are boxed: this future is moved per request, and its size is the
    // largest of its branches' (a reverse route's is bigger than a forwarded call's).
    if req.uri().scheme().is_none() && req.method() != Method::CONNECT {
        return Box::pin(super::reverse::reverse(proxy, ctx, req)).await;
    }
    // A client with HTTP_PROXY exported sends a reverse route's request (an Ollama client
    // at http://127.0.0.1:8080/ollama) to the proxy in absolute form: that route's, not a
    // loop (the route lookup first: cheap, and almost always false).
    let mut req = req;
    if req.method() != Method::CONNECT
        && super::reverse::route_of(&proxy, req.uri().path()).is_some()
        && proxy.names_own(req.uri())
    {
        let pq = req.uri().path_and_query().cloned();
        *req.uri_mut() = pq.map_or_else(|| Uri::from_static("/"), Uri::from);
        return Box::pin(super::reverse::reverse(proxy, ctx, req)).await;
    }
    let mut ctx = ctx;
    match headers::proxy_user(req.headers(), &proxy.settings().users) {
        Ok(user) => ctx.user = user.map(Into::into),
        Err(e) => return Ok(reject(&proxy, &ctx, &req, auth_error(e))),
    }
    if req.method() == Method::CONNECT {
        return Ok(Box::pin(connect::handle(proxy, ctx, req)).await);
    }
    let uri = without_userinfo(req.uri());
    exchange(proxy, ctx, req, uri, Route::Forward).await
}

fn auth_error(e: AuthError) -> ProxyError {
    let message = match e {
        AuthError::Missing => {
            "proxy authentication required (Proxy-Authorization: Basic)".to_string()
        }
        AuthError::Malformed => {
            "malformed Proxy-Authorization header; expected Basic credentials".to_string()
        }
        AuthError::Rejected(name) => format!("proxy credentials for user `{name}` were rejected"),
    };
    ProxyError::new(ErrorKind::ProxyAuthRequired, message)
}

/// Forwards one request to `uri`, under whatever the chaos engine decided, and records it.
pub(super) async fn exchange(
    proxy: Proxy,
    ctx: ConnCtx,
    req: Request<Incoming>,
    uri: Uri,
    route: Route,
) -> Result<Response<ProxyBody>, Dropped> {
    // Recorded even if the client gives up while the exchange waits (`Pending`'s drop).
    let mut pending = Pending::new(recorder(&proxy, &ctx, &req, &uri, route));
    let upgrade = headers::is_upgrade(req.headers()) && req.version() == Version::HTTP_11;
    let (mut parts, incoming) = req.into_parts();
    // An MCP request's message is read first: the rules decide on its method and tool.
    let body = super::mcp::body(&proxy, pending.rec(), &parts, incoming, upgrade).await;
    let rec = pending.rec();
    let mut plan = fault::decide(&proxy, rec, &parts.headers);
    // Scanned before any fault answers: a leak counts even if its destination never sees it.
    if let Some(c) = &plan.canary {
        canary::scan_head(rec, c, &uri.to_string(), &parts.headers);
    }
    let body = match &plan.canary {
        Some(c) if !upgrade => canary::scan_body(pending.rec(), c.clone(), body).await,
        _ => body,
    };
    let body = match pending.rec().capture().cloned() {
        Some(c) if !upgrade => tee(c, body),
        _ => body,
    };
    let mut transform = None;
    let next = tape::consult(&proxy, pending.rec(), &parts, body, &mut plan, upgrade);
    let body = match next.await {
        tape::Next::Play(answer) => return Box::pin(tape::play(pending, answer)).await,
        tape::Next::Body(body) => body,
    };
    match plan.action.take() {
        Some(Action::Respond { delay, synthetic }) => {
            wait(delay).await;
            return Ok(fault::respond(pending.take(), synthetic, &plan));
        }
        Some(Action::Drop { delay, why }) => {
            wait(delay).await;
            fault::dropped(pending.take(), why);
            return Err(Dropped);
        }
        Some(Action::Forward {
            delay,
            transform: t,
        }) => {
            wait(delay).await;
            transform = t.map(|t| (Owner::Fault, t));
        }
        None => {}
    }
    headers::strip_hop_by_hop(&mut parts.headers, upgrade);
    parts.uri = uri;
    // The upstream protocol is negotiated by ALPN, whatever the client spoke.
    parts.version = Version::HTTP_11;
    let sent = Instant::now();
    let req = Request::from_parts(parts, body);
    pending.awaiting(transform.as_ref().map(|(o, _)| *o));
    let result = if upgrade {
        Box::pin(proxy.inner.upstream.upgrade(req)).await
    } else {
        // Hook (issue #9, chaos rules): a rewrite over proxy.max_rewrite_bytes fails here.
        match prepare(pending.rec(), req, &plan, &mut transform).await {
            Ok(req) => {
                pending.awaiting(transform.as_ref().map(|(o, _)| *o));
                proxy.inner.upstream.send(req).await
            }
            Err(e) => Err(e),
        }
    };
    hand_back(&proxy, pending.take(), result, plan, transform, sent)
}

/// Records how the upstream answered (`sent` is when the request left) and hands the
/// client its response with an observed body, an error answer, or a closed connection.
fn hand_back(
    proxy: &Proxy,
    mut rec: Recorder,
    result: Result<Response<Incoming>, ProxyError>,
    plan: fault::Plan,
    transform: Option<(Owner, Transform)>,
    sent: Instant,
) -> Result<Response<ProxyBody>, Dropped> {
    match result {
        Ok(resp) => {
            proxy
                .metrics()
                .upstream_latency(sent.elapsed().as_secs_f64());
            rec.exchange_mut().timings.upstream_headers_ms = Some(rec.elapsed_ms());
            let ct = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            if let Some(ct) = ct {
                plan.note_format(proxy, ct.contains("json"));
            }
            Ok(upstream::response(rec, resp, transform, plan.mark))
        }
        // `proxy.upstream_connect_failure: close`: the agent meets a dead upstream as it
        // would without the proxy, as a connection error.
        Err(err)
            if err.kind == ErrorKind::UpstreamConnect
                && proxy.settings().close_on_connect_failure =>
        {
            fail_closed(proxy, rec, err);
            Err(Dropped)
        }
        Err(err) => Ok(fail(proxy, rec, err)),
    }
}

/// A request about to be forwarded: attacks rewrite it (LLM calls) or plan a response
/// transform (tool calls), the canary is planted, and the upstream is asked for identity
/// encoding when the response will be read or rewritten.
async fn prepare(
    rec: &mut Recorder,
    req: Request<ProxyBody>,
    plan: &fault::Plan,
    transform: &mut Option<(Owner, Transform)>,
) -> Result<Request<ProxyBody>, ProxyError> {
    let mut req = attack::apply(rec, req, &plan.attacks, plan.cut_context, transform).await?;
    if let Some(c) = &plan.canary {
        canary::plant(rec, c, transform);
    }
    if transform.is_some()
        || rec.capture().is_some()
        || matches!(rec.exchange().target, Target::Llm { .. })
    {
        // A rewrite needs the bytes as they are, not gzip of them; so does reading the
        // tool calls in an LLM response (SDKs ask for gzip, and providers use it).
        req.headers_mut().insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    Ok(req)
}

/// The request body on its way upstream, each piece also collected for the tape.
fn tee(capture: crate::tape::Capture, body: ProxyBody) -> ProxyBody {
    body.map_frame(move |f| {
        if let Some(d) = f.data_ref() {
            capture.request(d);
        }
        f
    })
    .boxed()
}

pub(super) fn recorder<B>(
    proxy: &Proxy,
    ctx: &ConnCtx,
    req: &Request<B>,
    uri: &Uri,
    route: Route,
) -> Recorder {
    let uri = &without_userinfo(uri);
    let url = headers::url_text(uri);
    let host = uri.host().unwrap_or_default();
    let target = proxy.inner.chaos.classify(&url, host, uri.path());
    let started_at_ms = crate::exchange::now_unix_ms();
    let exchange = Exchange {
        id: proxy.journal().next_id(),
        client_addr: ctx.peer_text.to_string(),
        client_user: ctx.user.as_deref().map(String::from),
        route,
        target,
        request: RequestHead {
            method: req.method().to_string(),
            url,
            version: headers::version_name(req.version()).into(),
            headers: headers::header_list(req.headers()),
        },
        // Placeholder until the outcome is known; `Recorder::finish` always replaces it
        // (an empty message: no allocation per request).
        outcome: Outcome::Error {
            error: crate::exchange::ErrorInfo {
                source: ErrorSource::Internal,
                kind: ErrorKind::Internal,
                message: String::new(),
            },
            status: None,
        },
        timings: Timings {
            started_at_ms,
            ..Timings::default()
        },
        response_bytes: 0,
        fault: None,
        attacks: vec![],
        llm_tool_calls: vec![],
        trace_id: proxy.case_of(ctx.lane.as_ref(), req.headers()),
        canary: None,
        canary_leaks: vec![],
        mcp: None,
        planted: vec![],
    };
    let in_flight = proxy.journal().begin(exchange.trace_id.as_deref());
    Recorder::new(proxy.clone(), exchange, Instant::now(), in_flight)
}

/// Records `err` on the exchange, which is answered by closing the connection.
fn fail_closed(proxy: &Proxy, rec: Recorder, err: ProxyError) {
    tracing::warn!(
        "{} (connection closed: proxy.upstream_connect_failure)",
        err.message
    );
    proxy.metrics().proxy_error(err.kind.name());
    rec.finish(
        Outcome::Error {
            error: err.info(),
            status: None,
        },
        0,
    );
}

/// Records `err` on the exchange and answers it.
fn fail(proxy: &Proxy, rec: Recorder, err: ProxyError) -> Response<ProxyBody> {
    let info = err.info();
    if info.source == ErrorSource::Upstream {
        tracing::warn!("{}", err.message);
    } else {
        tracing::info!("{}", err.message);
    }
    proxy.metrics().proxy_error(err.kind.name());
    let resp = rescue::response(&err);
    let status = resp.status().as_u16();
    rec.finish(
        Outcome::Error {
            error: info,
            status: Some(status),
        },
        0,
    );
    resp
}

/// Answers a request that never reached an upstream (bad request, failed auth).
pub fn reject<B>(
    proxy: &Proxy,
    ctx: &ConnCtx,
    req: &Request<B>,
    err: ProxyError,
) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let rec = recorder(proxy, ctx, req, &uri, Route::Forward);
    let mut rec = rec;
    rec.exchange_mut().target = Target::Other;
    fail(proxy, rec, err)
}

/// A fault's delay before it acts. No delay skips the timer: a zero sleep still waits for
/// the timer wheel's next 1 ms tick, a millisecond added to every fault answer.
async fn wait(delay: std::time::Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}
