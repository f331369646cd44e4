//! A request on its way upstream once no fault answered it: hop-by-hop headers stripped,
//! HTTP/1.1 asked for (the upstream protocol is negotiated by ALPN, whatever the client
//! spoke), attacks rewrite it (LLM calls) or plan a response transform (tool calls), the
//! canary planted, identity encoding asked for when the response will be read or
//! rewritten; then sent by the pooled client, or an upgrade's own connection (`forward`).

use http::request::Parts;
use http::{HeaderValue, Request, Response, Version, header};
use hyper::body::Incoming;
use tokio::time::Instant;

use super::fault::Plan;
use super::fault_body::Transform;
use super::pending::Pending;
use super::recorder::{Owner, Recorder};
use super::rescue::ProxyError;
use super::{Proxy, ProxyBody, attack, canary, headers};
use crate::exchange::Target;

/// A request that went upstream: its record, the upstream's answer or the error, the
/// response transform planned, and when it left.
pub struct Sent {
    pub rec: Recorder,
    pub answer: Result<Response<Incoming>, ProxyError>,
    pub transform: Option<(Owner, Transform)>,
    pub at: Instant,
}

/// Sends the request (`head`, whose URI is the upstream's, and `body`) and waits for the
/// response head; the exchange stays pending until then.
pub async fn send(
    proxy: &Proxy,
    mut pending: Pending,
    mut head: Parts,
    body: ProxyBody,
    plan: &Plan,
    mut transform: Option<(Owner, Transform)>,
    upgrade: bool,
) -> Sent {
    headers::strip_hop_by_hop(&mut head.headers, upgrade);
    head.version = Version::HTTP_11;
    let at = Instant::now();
    let req = Request::from_parts(head, body);
    pending.awaiting(transform.as_ref().map(|(o, _)| *o));
    let answer = if upgrade {
        Box::pin(proxy.inner.upstream.upgrade(req)).await
    } else {
        // Hook (issue #9, chaos rules): a rewrite over proxy.max_rewrite_bytes fails here.
        match rewrite(pending.rec(), req, plan, &mut transform).await {
            Ok(req) => {
                pending.awaiting(transform.as_ref().map(|(o, _)| *o));
                proxy.inner.upstream.send(req).await
            }
            Err(e) => Err(e),
        }
    };
    Sent {
        rec: pending.take(),
        answer,
        transform,
        at,
    }
}

/// Attacks rewrite the request (LLM calls) or plan a response transform (tool calls), the
/// canary is planted, and the upstream is asked for identity encoding when the response
/// will be read or rewritten.
async fn rewrite(
    rec: &mut Recorder,
    req: Request<ProxyBody>,
    plan: &Plan,
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
