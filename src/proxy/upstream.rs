//! The upstream's answer handed back to the client: its latency and format noted, an
//! error answered (`rescue`) or, with `proxy.upstream_connect_failure: close`, met by a
//! closed connection; a response with hop-by-hop headers stripped, the body transformed
//! as it streams when a fault or attack planned it (and the response can carry it), then
//! observed and recorded by `ObservedBody`.

use http::{HeaderValue, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::ObservedBody;
use super::close_delimited::{self, CloseDelimited};
use super::fault::{self, Dropped, Plan};
use super::fault_body::{FaultBody, Transform};
use super::outbound::Sent;
use super::recorder::{Owner, Recorder};
use super::rescue::{self, ErrorKind};
use super::{Proxy, ProxyBody, headers};
use crate::exchange::{ResponseHead, Target};

/// Records how the upstream answered and hands the client its response with an observed
/// body, an error answer, or a closed connection.
pub(super) fn hand_back(
    proxy: &Proxy,
    sent: Sent,
    plan: Plan,
) -> Result<Response<ProxyBody>, Dropped> {
    let Sent {
        mut rec,
        answer,
        transform,
        at,
    } = sent;
    match answer {
        Ok(resp) => {
            proxy.metrics().upstream_latency(at.elapsed().as_secs_f64());
            rec.exchange_mut().timings.upstream_headers_ms = Some(rec.elapsed_ms());
            let ct = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            if let Some(ct) = ct {
                plan.note_format(proxy, ct.contains("json"));
            }
            Ok(response(rec, resp, transform, plan.mark))
        }
        // The agent meets a dead upstream as it would without the proxy, as a connection
        // error.
        Err(err)
            if err.kind == ErrorKind::UpstreamConnect
                && proxy.settings().close_on_connect_failure =>
        {
            rescue::closed(proxy, rec, err);
            Err(Dropped)
        }
        Err(err) => Ok(rescue::fail(proxy, rec, err)),
    }
}

/// The upstream's response on its way to the client: hop-by-hop headers gone, the body
/// observed and, under a fault or attack, transformed as it streams.
fn response(
    mut rec: Recorder,
    resp: Response<Incoming>,
    transform: Option<(Owner, Transform)>,
    mark: Option<HeaderValue>,
) -> Response<ProxyBody> {
    let (mut parts, body) = resp.into_parts();
    let switching = parts.status == http::StatusCode::SWITCHING_PROTOCOLS;
    let close_delimited = close_delimited::applies(&rec.exchange().request.method, &parts);
    headers::strip_hop_by_hop(&mut parts.headers, switching);
    let mut body: ProxyBody = body.map_err(Into::into).boxed();
    if close_delimited {
        body = CloseDelimited::new(body, rec.body_note()).boxed();
    }
    let encoding = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mcp = rec.exchange().mcp.is_some();
    let transform = transform.map(|(owner, t)| (owner, for_mcp(t, mcp)));
    let body = match transform {
        Some((owner, _)) if encoding.as_deref().is_some_and(|e| e != "identity") => {
            rec.not_applied(
                owner,
                format!(
                    "response is compressed ({}); passed through",
                    encoding.clone().unwrap_or_default()
                ),
            );
            body
        }
        // A body here would break HTTP framing: nothing to rewrite, nothing to plant.
        Some((owner, _))
            if close_delimited::bodiless(&rec.exchange().request.method, parts.status) =>
        {
            rec.not_applied(owner, "the response has no body");
            body
        }
        Some((owner, Transform::Inject { .. }))
            if let Err(note) = crate::chaos::attack::injectable(content_type(&parts)) =>
        {
            rec.not_applied(owner, note);
            body
        }
        Some((owner, t)) if let Err(note) = plantable(&t, parts.status, content_type(&parts)) => {
            rec.not_applied(owner, note);
            body
        }
        Some((owner, t)) if !switching => {
            parts.headers.remove(header::CONTENT_LENGTH);
            let ct = content_type(&parts).to_string();
            FaultBody::new(body, t, &ct, rec.skip_note(owner)).boxed()
        }
        _ => body,
    };
    if let Some(m) = mark {
        parts.headers.insert(fault::FAULT_HEADER, m);
    }
    let head = ResponseHead {
        status: parts.status.as_u16(),
        version: headers::version_name(parts.version).into(),
        headers: headers::header_list(&parts.headers),
    };
    // The agent acts on what it received, so the copy is taken after any transform; a
    // compressed body cannot be read without decoding it.
    let tap = matches!(rec.exchange().target, Target::Llm { .. })
        && encoding.as_deref().is_none_or(|e| e == "identity");
    Response::from_parts(parts, ObservedBody::new(body, rec, head, tap).boxed())
}

/// An MCP answer's text goes where the model reads it (a tool result's content), as it
/// streams: never by the generic JSON rewrite, which could edit the JSON-RPC envelope.
fn for_mcp(t: Transform, mcp: bool) -> Transform {
    match t {
        Transform::Inject { payload } if mcp => {
            Transform::Mcp(crate::mcp::Edit::InjectResult { payload })
        }
        Transform::Plant(plan) if mcp => Transform::Mcp(crate::mcp::Edit::Plant(plan)),
        t @ (Transform::Drip { .. }
        | Transform::Cut { .. }
        | Transform::Replace(_)
        | Transform::Corrupt
        | Transform::Inject { .. }
        | Transform::Plant(_)
        | Transform::Mcp(_)
        | Transform::Llm { .. }) => t,
    }
}

/// Whether a data fault can act on this response, known from its head: a success (an
/// error's body is no data to change), and, out of MCP, JSON or text.
fn plantable(t: &Transform, status: http::StatusCode, content_type: &str) -> Result<(), String> {
    let plain = match t {
        Transform::Plant(_) => true,
        Transform::Mcp(crate::mcp::Edit::Plant(_)) => false,
        Transform::Drip { .. }
        | Transform::Cut { .. }
        | Transform::Replace(_)
        | Transform::Corrupt
        | Transform::Inject { .. }
        | Transform::Mcp(_)
        | Transform::Llm { .. } => return Ok(()),
    };
    if !status.is_success() {
        return Err(format!(
            "the response is {}, not a success: no data to change",
            status.as_u16()
        ));
    }
    if plain {
        crate::plant::plantable(content_type)?;
    }
    Ok(())
}

fn content_type(parts: &http::response::Parts) -> &str {
    parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}
