//! Context attacks on the wire: the outgoing LLM request is held (bounded), rewritten by
//! `chaos::attack` for each attack that fired, and sent on with its new length; tool
//! responses get indirect injections through a body transform. A body that is too large,
//! compressed or not JSON passes through untouched and each attack says why. A rewrite
//! that would go over `proxy.max_rewrite_bytes` fails the exchange before anything is sent
//! upstream (`rewrite_too_large`, see `rescue`).
#![deny(clippy::wildcard_enum_match_arm)]

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Request, header};
use http_body_util::{BodyExt, Full};

use super::ProxyBody;
use super::fault_body::{BUFFER_LIMIT, Transform};
use super::recorder::{Owner, Recorder};
use super::request_body::rejoin;
use super::rescue::{ErrorKind, ProxyError};
use crate::chaos::Fired;
use crate::chaos::attack;
use crate::chaos::attack::NotApplied;
use crate::chaos::budget::Budget;
use crate::chaos::spec::AttackMode;
use crate::exchange::{Provider, Target};
use crate::llm::drop_early_turns;

/// Applies the attacks that fired: LLM requests are rewritten now; a tool response gets an
/// injection transform (unless a fault already rewrites it). The error: a rewrite would
/// have gone over `proxy.max_rewrite_bytes`; the exchange fails with it.
pub async fn apply(
    rec: &mut Recorder,
    req: Request<ProxyBody>,
    attacks: &[(usize, Fired<AttackMode>)],
    cut_context: bool,
    transform: &mut Option<(Owner, Transform)>,
) -> Result<Request<ProxyBody>, ProxyError> {
    match rec.exchange().target.clone() {
        // Boxed: only attacked calls read and rewrite the body, and every forwarded call's
        // future would otherwise carry this one's size.
        Target::Llm { provider } if !attacks.is_empty() || cut_context => {
            Box::pin(rewrite_request(req, rec, provider, attacks, cut_context)).await
        }
        // Scopes give embeddings calls no attacks; their bodies are never rewritten.
        Target::Llm { .. } | Target::Embeddings { .. } => Ok(req),
        Target::Tool { .. } | Target::Other => {
            for (i, fired) in attacks {
                match (
                    transform.is_some(),
                    attack::payload(&fired.what, fired.draw),
                ) {
                    (false, Some(payload)) => {
                        let call = rec.exchange().mcp.as_ref();
                        let on_call = call.is_some_and(|c| c.method == crate::exchange::TOOLS_CALL);
                        let t = match mcp_edit(fired, payload.clone(), on_call) {
                            Ok(edit) => Transform::Mcp(edit),
                            Err(payload) => Transform::Inject { payload },
                        };
                        // What the agent reads, if the response reaches it whole (a notice
                        // that the list changed carries no payload).
                        if !matches!(t, Transform::Mcp(crate::mcp::Edit::ListChanged { .. })) {
                            rec.planted(Owner::Attack(*i), true, crate::plant::injected(payload));
                        }
                        *transform = Some((Owner::Attack(*i), t));
                    }
                    (true, _) => rec.not_applied(
                        Owner::Attack(*i),
                        "another fault already rewrites this response",
                    ),
                    (false, None) => rec.not_applied(Owner::Attack(*i), "no payload"),
                }
            }
            Ok(req)
        }
    }
}

/// The edit an attack on MCP tool lists makes (on a `tools/call` answer, `on_call`: a rug
/// pull's notice that the list changed), or (`Err`) the payload of one that injects text
/// into a response.
fn mcp_edit(
    fired: &Fired<AttackMode>,
    payload: String,
    on_call: bool,
) -> Result<crate::mcp::Edit, String> {
    use crate::mcp::Edit;
    let tools = fired.mcp_tool.as_ref().map(|g| g.0.clone());
    if let (AttackMode::McpRugPull { .. }, true, Some(notice)) =
        (&fired.what, on_call, &fired.notice)
    {
        return Ok(Edit::ListChanged {
            notice: notice.clone(),
        });
    }
    match &fired.what {
        AttackMode::McpToolPoisoning { place, .. } | AttackMode::McpRugPull { place, .. } => {
            Ok(Edit::Poison {
                payload,
                tools,
                place: *place,
            })
        }
        AttackMode::McpShadowing { shadows, .. } => Ok(Edit::Shadow {
            shadows: shadows.clone(),
            name: attack::shadow_name(&fired.what).unwrap_or_default(),
            description: payload,
        }),
        AttackMode::IndirectInjection { .. }
        | AttackMode::MemoryPoisoning { .. }
        | AttackMode::Overflow { .. }
        | AttackMode::ConflictingContext { .. }
        | AttackMode::InjectionViaContext { .. } => Err(payload),
    }
}

/// Rewrites an LLM request for `attacks` (and `cut_context`: the silent context truncation
/// a `context_length_exceeded` fault means on Ollama, `fault::Plan::cut_context`).
pub async fn rewrite_request(
    req: Request<ProxyBody>,
    rec: &mut Recorder,
    provider: Provider,
    attacks: &[(usize, Fired<AttackMode>)],
    cut_context: bool,
) -> Result<Request<ProxyBody>, ProxyError> {
    let (parts, body) = req.into_parts();
    let skip_all = |rec: &mut Recorder, note: &str| {
        for (i, _) in attacks {
            rec.not_applied(Owner::Attack(*i), note);
        }
        if cut_context {
            rec.not_applied(Owner::Fault, note);
        }
    };
    let original = match hold(body).await {
        Ok(Held::Whole(bytes)) => bytes,
        Ok(Held::Over(body)) => {
            let note = format!("request body over {BUFFER_LIMIT} bytes; sent unchanged");
            skip_all(rec, &note);
            return Ok(Request::from_parts(parts, body));
        }
        Err(e) => {
            // The agent's own upload failed: its fault (400), nothing goes upstream.
            skip_all(rec, &format!("request body failed: {e}"));
            return Err(ProxyError::new(ErrorKind::BadRequest, e));
        }
    };
    let encoded = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v != "identity");
    let parsed = (!encoded)
        .then(|| serde_json::from_slice::<serde_json::Value>(&original).ok())
        .flatten();
    let Some(mut json) = parsed else {
        skip_all(
            rec,
            if encoded {
                "request body is compressed"
            } else {
                "request body is not JSON"
            },
        );
        return Ok(Request::from_parts(
            parts,
            Full::new(original).map_err(|n| match n {}).boxed(),
        ));
    };
    let cap = rec.max_rewrite_bytes();
    let mut budget = Budget::new(cap, original.len());
    let last_applied = each_attack(rec, provider, &mut json, attacks, &mut budget)?;
    let truncated = cut_context && drop_early_turns(&mut json);
    if cut_context && !truncated {
        rec.not_applied(Owner::Fault, "the conversation is too short to truncate");
    }
    if last_applied.is_none() && !truncated {
        // Nothing changed: the agent's own bytes go on, whatever their size.
        return Ok(Request::from_parts(
            parts,
            Full::new(original).map_err(|n| match n {}).boxed(),
        ));
    }
    sized(parts, &json, cap, last_applied, rec)
}

/// Applies each attack to the request's JSON; the last one that changed it (what a final
/// size overrun is blamed on). The error: one would have gone over the cap.
fn each_attack(
    rec: &mut Recorder,
    provider: Provider,
    json: &mut serde_json::Value,
    attacks: &[(usize, Fired<AttackMode>)],
    budget: &mut Budget,
) -> Result<Option<usize>, ProxyError> {
    let mut last_applied = None;
    for (i, fired) in attacks {
        match attack::apply_to_request(provider, json, &fired.what, fired.draw, budget) {
            Ok(()) => {
                last_applied = Some(*i);
                // The model reads it once the request goes upstream (overflow's filler is
                // no instruction: it has no payload).
                if let Some(p) = attack::payload(&fired.what, fired.draw) {
                    rec.planted(Owner::Attack(*i), false, crate::plant::injected(p));
                }
            }
            Err(NotApplied::Skip(note)) => rec.not_applied(Owner::Attack(*i), note),
            Err(NotApplied::TooLarge(e)) => return Err(too_large(rec, *i, e.to_string())),
        }
    }
    Ok(last_applied)
}

/// The rewritten request with its new length; the exchange fails when the JSON came out
/// over `cap` (the budget counts text; JSON escapes can add a little on top). Only attacks
/// grow a body (truncation shrinks it): the last one that applied is blamed.
fn sized(
    mut parts: http::request::Parts,
    json: &serde_json::Value,
    cap: usize,
    last_applied: Option<usize>,
    rec: &mut Recorder,
) -> Result<Request<ProxyBody>, ProxyError> {
    let bytes = Bytes::from(json.to_string());
    if let Some(i) = last_applied.filter(|_| bytes.len() > cap) {
        let msg = format!(
            "the rewritten request is {} bytes, over proxy.max_rewrite_bytes ({cap}); this \
             exchange failed instead",
            bytes.len()
        );
        return Err(too_large(rec, i, msg));
    }
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Ok(Request::from_parts(
        parts,
        Full::new(bytes).map_err(|n| match n {}).boxed(),
    ))
}

/// A request body read whole, or (over `BUFFER_LIMIT`) what was read chained with the rest.
enum Held {
    Whole(Bytes),
    Over(ProxyBody),
}

/// Reads `body` up to `BUFFER_LIMIT`; the error: the agent's upload failed.
async fn hold(mut body: ProxyBody) -> Result<Held, String> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        match frame.map(|f| f.into_data()) {
            Ok(Ok(data)) => buf.extend_from_slice(&data),
            Ok(Err(_trailers)) => {}
            Err(e) => return Err(e.to_string()),
        }
        if buf.len() > BUFFER_LIMIT {
            return Ok(Held::Over(rejoin(buf.freeze(), Some(body))));
        }
    }
    Ok(Held::Whole(buf.freeze()))
}

/// Attack `i` would have made the request too large: it is recorded as not applied, and
/// the exchange fails with a proxy error (nothing is sent upstream).
fn too_large(rec: &mut Recorder, i: usize, why: String) -> ProxyError {
    tracing::warn!("chaos rewrite failed its exchange: {why}");
    rec.not_applied(Owner::Attack(i), why.clone());
    ProxyError::new(ErrorKind::RewriteTooLarge, why)
}
