//! Asking the chaos engine about an exchange and noting what it decided on the record
//! (the `Plan`: the fault's action, from `action`, the attacks, the canary), then acting
//! on it before the upstream: after the fault's hold, answering with its synthetic
//! response, closing the connection (recorded), or letting the request go on.
#![deny(clippy::wildcard_enum_match_arm)]

use std::ops::ControlFlow;

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

pub use super::action::{Action, action};
use super::fault_body::Transform;
use super::pending::Pending;
use super::recorder::{Owner, Recorder};
use super::{Proxy, ProxyBody};
use crate::chaos::respond::{self, Synthetic};
use crate::chaos::spec::{AttackMode, LlmMode, ToolMode};
use crate::chaos::{Canary, Fault, Fired, Formats};
use crate::exchange::{BodyEnd, ErrorInfo, ErrorSource, Outcome, ResponseHead, Target};

/// Which upstream an exchange talks to, for remembering its response format: the tool's
/// name, else `scheme://authority` (a URL prefix, so the two never collide). LLM calls
/// need none: their faults speak the provider's format; embeddings calls get no faults.
pub fn format_key(ex: &crate::exchange::Exchange) -> Option<&str> {
    match &ex.target {
        Target::Tool { name } => Some(name),
        Target::Llm { .. } | Target::Embeddings { .. } => None,
        Target::Other => {
            let url = &ex.request.url;
            let after_scheme = url.find("://").map_or(0, |i| i + 3);
            Some(
                url[after_scheme..]
                    .find('/')
                    .map_or(url.as_str(), |i| &url[..after_scheme + i]),
            )
        }
    }
}

/// Whether the caller expects JSON (its Accept or its own body type says so).
fn wants_json(h: &HeaderMap) -> bool {
    let has = |name: http::header::HeaderName| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"))
    };
    has(http::header::ACCEPT) || has(http::header::CONTENT_TYPE)
}

/// The connection was closed on purpose (a `timeout` with `then: close`).
#[derive(Debug, thiserror::Error)]
#[error("connection closed by an injected fault")]
pub struct Dropped;

/// What the chaos engine decided for one exchange, already recorded on it.
pub struct Plan {
    /// What the fault does, if one fired.
    pub action: Option<Action>,
    /// `x-flakestorm-fault` value when `mark_responses` is on.
    pub mark: Option<HeaderValue>,
    /// Context attacks that fired, with their index on the exchange record.
    pub attacks: Vec<(usize, Fired<AttackMode>)>,
    /// Canaries to plant in the response and look for in the request (`no_exfiltration`).
    pub canary: Option<std::sync::Arc<Canary>>,
    /// Under which key the upstream's response format is remembered (`format_key`).
    pub format_key: Option<String>,
    /// A case's own format memory when its rules are per trace, so its synthetic errors do
    /// not depend on what concurrent cases saw first; else the proxy's.
    pub formats: Option<Formats>,
    /// A `context_length_exceeded` fault on a provider that cuts the conversation instead
    /// of refusing it (Ollama): the request is rewritten.
    pub cut_context: bool,
    /// A replay session's tape, to answer this call by its request key.
    pub tape: Option<(
        std::sync::Arc<crate::tape::TapeTable>,
        crate::config::replays::OnMiss,
    )>,
}

impl Plan {
    /// Remembers whether the upstream answered JSON.
    pub fn note_format(&self, proxy: &Proxy, json: bool) {
        let Some(key) = &self.format_key else { return };
        match &self.formats {
            Some(f) => {
                f.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), json);
            }
            None => proxy.note_format(key, json),
        }
    }

    fn speaks_json(&self, proxy: &Proxy) -> Option<bool> {
        let key = self.format_key.as_deref()?;
        match &self.formats {
            Some(f) => f
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(key)
                .copied(),
            None => proxy.speaks_json(key),
        }
    }
}

/// Asks the engine about this exchange and notes the fault and attacks on it. A fault that
/// cannot act on the request (an MCP answer it has no id for) lets it go on as if none had
/// fired.
pub fn decide(proxy: &Proxy, rec: &mut Recorder, request: &HeaderMap) -> Plan {
    let ex = rec.exchange();
    let decision = proxy.inner.chaos.decide_mcp(
        &ex.request.url,
        &ex.target,
        ex.mcp.as_ref(),
        ex.trace_id.as_deref(),
    );
    let target = ex.target.clone();
    let canary = decision.canary;
    let formats = decision.formats;
    let format_key = format_key(ex).map(str::to_string);
    let tape = decision.tape;
    if let Some(replay) = decision.replay {
        return Plan {
            action: Some(super::replay::action(rec, replay)),
            mark: None,
            attacks: vec![],
            canary,
            format_key,
            formats,
            cut_context: false,
            tape,
        };
    }
    let attacks = decision
        .attacks
        .into_iter()
        .map(|a| (rec.add_attack(&a.rule_id, a.what.kind()), a))
        .collect();
    let Some(fired) = decision.fault else {
        return Plan {
            action: None,
            mark: None,
            attacks,
            canary,
            format_key,
            formats,
            cut_context: false,
            tape,
        };
    };
    rec.set_fault(&fired.rule_id, fired.what.kind());
    let mark = decision
        .mark
        .then(|| HeaderValue::from_str(&fired.rule_id).ok())
        .flatten();
    let mut plan = Plan {
        action: None,
        mark,
        attacks,
        canary,
        format_key,
        formats,
        cut_context: cuts_context(&fired, &target),
        tape: None,
    };
    let json = plan
        .speaks_json(proxy)
        .unwrap_or_else(|| wants_json(request));
    let header = |name: &str| request.get(name).and_then(|v| v.to_str().ok());
    let head = (
        header(crate::mcp::SESSION_HEADER),
        header("mcp-protocol-version"),
    );
    match action(&fired, &target, json, (rec.exchange().mcp.as_ref(), head)) {
        Ok(a) => {
            not_reached(rec, &plan.attacks, &a);
            note_payload(rec, &fired);
            plan.action = Some(a);
        }
        Err(note) => {
            plan.mark = None;
            plan.tape = tape;
            rec.not_applied(Owner::Fault, note);
        }
    }
    plan
}

/// The body `malicious_response` gives the agent instead of the tool's: planted, kept on
/// the record if the agent got it whole.
fn note_payload(rec: &mut Recorder, fired: &Fired<Fault>) {
    if let Fault::Tool(ToolMode::MaliciousResponse { payload }) = &fired.what {
        rec.planted(Owner::Fault, true, crate::plant::injected(payload.as_str()));
    }
}

/// Whether the fault is a context overflow the provider answers by cutting the turns.
fn cuts_context(fired: &Fired<Fault>, target: &Target) -> bool {
    let Fault::Llm(LlmMode::ContextLengthExceeded {}) = &fired.what else {
        return false;
    };
    let Target::Llm { provider } = target else {
        return false;
    };
    respond::context_length_exceeded(*provider, fired.draw).is_none()
}

/// A fault that answers or closes: nothing reaches the upstream, so no attack that fired
/// applies (also when the agent gives up during the fault's hold).
fn not_reached(rec: &mut Recorder, attacks: &[(usize, Fired<AttackMode>)], a: &Action) {
    let instead = match a {
        Action::Respond { .. } => "the fault's answer",
        Action::Drop { .. } => "a closed connection",
        Action::Forward { .. } => return,
    };
    for (i, _) in attacks {
        rec.not_applied(
            Owner::Attack(*i),
            format!("the agent got {instead} instead"),
        );
    }
}

/// What follows a fault's action: the exchange ends with the fault's answer or closed
/// connection (`Break`: nothing goes upstream), or the request goes on (`Continue`), its
/// response through the fault's transform, if any.
pub type Acted =
    ControlFlow<Result<Response<ProxyBody>, Dropped>, (Pending, Option<(Owner, Transform)>)>;

/// Acts on the plan's action (taken from it), after the fault's hold.
pub async fn act(pending: Pending, plan: &mut Plan) -> Acted {
    match plan.action.take() {
        Some(Action::Respond { delay, synthetic }) => {
            wait(delay).await;
            ControlFlow::Break(Ok(respond(pending.take(), synthetic, plan)))
        }
        Some(Action::Drop { delay, why }) => {
            wait(delay).await;
            dropped(pending.take(), why);
            ControlFlow::Break(Err(Dropped))
        }
        Some(Action::Forward { delay, transform }) => {
            wait(delay).await;
            ControlFlow::Continue((pending, transform.map(|t| (Owner::Fault, t))))
        }
        None => ControlFlow::Continue((pending, None)),
    }
}

/// A fault's delay before it acts. No delay skips the timer: a zero sleep still waits for
/// the timer wheel's next 1 ms tick, a millisecond added to every fault answer.
async fn wait(delay: std::time::Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Answers with a fault's synthetic response and records it.
pub fn respond(rec: Recorder, synthetic: Synthetic, plan: &Plan) -> Response<ProxyBody> {
    let len = synthetic.body.len() as u64;
    let captured = rec.capture().is_some().then(|| synthetic.body.clone());
    let mut resp = Response::new(
        Full::new(synthetic.body)
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() =
        StatusCode::from_u16(synthetic.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in synthetic.headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            resp.headers_mut().append(name, v);
        }
    }
    if let Some(m) = &plan.mark {
        resp.headers_mut().insert(FAULT_HEADER, m.clone());
    }
    let head = ResponseHead {
        status: resp.status().as_u16(),
        version: "HTTP/1.1".into(),
        headers: super::headers::header_list(resp.headers()),
    };
    if let Some(body) = captured {
        rec.capture_response(&body);
    }
    rec.finish(
        Outcome::Response {
            response: head,
            body: BodyEnd::Complete,
        },
        len,
    );
    resp
}

/// Records an exchange whose connection a fault closed without a response, and why.
pub fn dropped(rec: Recorder, why: &str) {
    let error = ErrorInfo {
        source: ErrorSource::Injected,
        kind: crate::exchange::ErrorKind::ConnectionClosed,
        message: why.into(),
    };
    rec.finish(
        Outcome::Error {
            error,
            status: None,
        },
        0,
    );
}

/// Header naming the rule that faulted a response, with `chaos.mark_responses: true`.
pub const FAULT_HEADER: &str = "x-flakestorm-fault";
