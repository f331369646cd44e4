//! One request on the proxy, its steps in the order they happen, each called once from
//! here: routed (`route`: an exchange, a `CONNECT`, or refused), then, for an exchange,
//! opened on the record, its MCP message read, the chaos engine asked, the request scanned
//! for canaries, a tape consulted, the fault acted (answer, close, or hold), the request
//! rewritten and sent (`outbound`), and the response handed back, transformed and observed
//! until it is recorded (`upstream`). Errors become responses in `rescue`.

use std::ops::ControlFlow;

use http::{Request, Response, Version};
use hyper::body::Incoming;

use super::fault::{self, Dropped};
use super::pending::Pending;
use super::recorder::Recorder;
use super::route::{Routed, classify};
use super::{ConnCtx, Proxy, ProxyBody};
use super::{canary, connect, headers, mcp, outbound, rescue, tape, upstream};
use crate::exchange::Route;

pub async fn handle(
    proxy: Proxy,
    mut ctx: ConnCtx,
    mut req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Dropped> {
    let refused = match classify(&proxy, &mut ctx, &mut req) {
        Ok(Routed::Exchange { uri, route }) => {
            return exchange(proxy, ctx, req, uri, route).await;
        }
        // Boxed: this future is moved per request, and its size is the largest of its
        // branches' (a CONNECT's is bigger than a forwarded call's).
        Ok(Routed::Connect(target)) => {
            match Box::pin(connect::open(&proxy, &ctx, &mut req, target)).await {
                Ok(opened) => return Ok(opened),
                Err(err) => err,
            }
        }
        Err(err) => err,
    };
    Ok(rescue::reject(&proxy, &ctx, &req, refused))
}

/// One exchange with the upstream at `uri`, under whatever the chaos engine decided.
async fn exchange(
    proxy: Proxy,
    ctx: ConnCtx,
    req: Request<Incoming>,
    uri: http::Uri,
    route: Route,
) -> Result<Response<ProxyBody>, Dropped> {
    // Recorded even if the client gives up while the exchange waits (`Pending`'s drop).
    let mut pending = Pending::new(Recorder::open(&proxy, &ctx, &req, &uri, route));
    let upgrade = headers::is_upgrade(req.headers()) && req.version() == Version::HTTP_11;
    let (mut parts, incoming) = req.into_parts();
    parts.uri = uri;
    // An MCP request's message is read first: the rules decide on its method and tool.
    let body = mcp::body(&proxy, pending.rec(), &parts, incoming, upgrade).await;
    let mut plan = fault::decide(&proxy, pending.rec(), &parts.headers);
    let body = canary::scan(pending.rec(), plan.canary.as_ref(), &parts, body, upgrade).await;
    let body = match tape::consult(&proxy, pending.rec(), &parts, body, &mut plan, upgrade).await {
        tape::Next::Play(answer) => return Box::pin(tape::play(pending, answer)).await,
        tape::Next::Body(body) => body,
    };
    let (pending, transform) = match fault::act(pending, &mut plan).await {
        ControlFlow::Break(answer) => return answer,
        ControlFlow::Continue(next) => next,
    };
    let sent = outbound::send(&proxy, pending, parts, body, &plan, transform, upgrade).await;
    upstream::hand_back(&proxy, sent, plan)
}
