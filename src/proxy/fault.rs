//! Turning a fired chaos rule into what the proxy does with the exchange: answer at once
//! (after an optional hold) with a provider-shaped response, drop the connection, or
//! forward and transform the response on its way back.
#![deny(clippy::wildcard_enum_match_arm)]

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::fault_body::Transform;
use super::recorder::Recorder;
use super::{Proxy, ProxyBody};
use crate::chaos::respond::{self, Synthetic};
use crate::chaos::{Canary, Fault, Fired, Formats};
use crate::config::chaos::{AttackMode, Corruption, FilterSignal, LlmMode, TimeoutEnd, ToolMode};
use crate::exchange::{
    BodyEnd, ErrorInfo, ErrorSource, McpCall, Outcome, Provider, ResponseHead, Target,
};

pub enum Action {
    /// Answer without calling the upstream, after `delay`.
    Respond {
        delay: Duration,
        synthetic: Synthetic,
    },
    /// Hold for `delay`, then close the connection with no response (`why` is recorded).
    Drop { delay: Duration, why: &'static str },
    /// Wait `delay`, forward, and pass the response body through `transform`.
    Forward {
        delay: Duration,
        transform: Option<Transform>,
    },
}

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

/// `json`: whether a synthetic tool error should be JSON (the upstream's last answers were);
/// `mcp`: the MCP request and its session id, for the modes that answer as MCP. The error:
/// why the fault cannot act on this request (which then goes on untouched).
pub fn action(
    fired: &Fired<Fault>,
    target: &Target,
    json: bool,
    mcp: (Option<&McpCall>, (Option<&str>, Option<&str>)),
) -> Result<Action, String> {
    match &fired.what {
        Fault::Tool(mode) if mode.mcp_only() => Ok(Action::Respond {
            delay: Duration::ZERO,
            synthetic: respond::mcp(mode, mcp.0, mcp.1)?,
        }),
        Fault::Tool(mode) => Ok(tool(mode, json)),
        Fault::Llm(mode) => {
            // Scopes guarantee an LLM target; the others cannot reach here, but stay total.
            let provider = match target {
                Target::Llm { provider } | Target::Embeddings { provider } => *provider,
                Target::Tool { .. } | Target::Other => Provider::Openai,
            };
            Ok(llm(mode, provider, fired.draw))
        }
    }
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn hold(delay_ms: u64, then: TimeoutEnd, synthetic: Synthetic) -> Action {
    match then {
        TimeoutEnd::Status504 => Action::Respond {
            delay: ms(delay_ms),
            synthetic,
        },
        TimeoutEnd::Close => Action::Drop {
            delay: ms(delay_ms),
            why: "closed with no response by an injected timeout",
        },
    }
}

fn tool(mode: &ToolMode, json: bool) -> Action {
    let forward = |transform| Action::Forward {
        delay: Duration::ZERO,
        transform: Some(transform),
    };
    match mode {
        ToolMode::Timeout { delay_ms, then } => {
            hold(*delay_ms, *then, respond::gateway_timeout(None, 0))
        }
        ToolMode::Error {
            error_code,
            message,
        } => Action::Respond {
            delay: Duration::ZERO,
            synthetic: respond::tool_error(*error_code, message.as_deref(), json),
        },
        ToolMode::Malformed {} => forward(Transform::Corrupt),
        ToolMode::Slow {
            delay_ms,
            bytes_per_second,
        } => Action::Forward {
            delay: ms(*delay_ms),
            transform: bytes_per_second.map(|rate| Transform::Drip {
                bytes_per_second: rate.max(1),
            }),
        },
        ToolMode::MaliciousResponse { payload } => {
            forward(Transform::Replace(Bytes::from(payload.clone())))
        }
        ToolMode::Reset { after_bytes } => forward(Transform::Cut {
            after: *after_bytes,
            abort: true,
        }),
        ToolMode::Partial { after_bytes } => forward(Transform::Cut {
            after: *after_bytes,
            abort: false,
        }),
        // Answered by `respond::mcp` (`action`).
        ToolMode::McpToolError { .. }
        | ToolMode::McpError { .. }
        | ToolMode::McpSessionExpired {} => Action::Forward {
            delay: Duration::ZERO,
            transform: None,
        },
    }
}

fn llm(mode: &LlmMode, provider: Provider, draw: u64) -> Action {
    let now = |synthetic| Action::Respond {
        delay: Duration::ZERO,
        synthetic,
    };
    let forward = |transform| Action::Forward {
        delay: Duration::ZERO,
        transform: Some(transform),
    };
    match mode {
        LlmMode::Timeout { delay_ms, then } => hold(
            *delay_ms,
            *then,
            respond::gateway_timeout(Some(provider), draw),
        ),
        LlmMode::RateLimit {
            retry_after_s,
            quota,
        } => now(respond::rate_limit(provider, *retry_after_s, *quota, draw)),
        LlmMode::ServerError {
            status,
            in_stream: false,
            ..
        } => now(respond::server_error(provider, *status, draw)),
        LlmMode::ContentFilter {
            signal: FilterSignal::BlockedPrompt,
        } if let Some(s) = respond::prompt_blocked(provider, draw) => now(s),
        LlmMode::ToolCallCorruption {
            corruption: Corruption::InvalidJson,
        } if let Some(s) = respond::tool_parse_error(provider) => now(s),
        LlmMode::ClientError { error } => now(respond::client_error(provider, *error, draw)),
        LlmMode::HtmlErrorPage { status } => now(respond::html_error_page(status.unwrap_or(502))),
        LlmMode::ContextLengthExceeded {} => match respond::context_length_exceeded(provider, draw)
        {
            Some(s) => now(s),
            // Ollama truncates the prompt silently: the request rewrite does it
            // (`Plan::cut_context`).
            None => Action::Forward {
                delay: Duration::ZERO,
                transform: None,
            },
        },
        // Decided on the response body as it streams back.
        LlmMode::ServerError {
            in_stream: true, ..
        }
        | LlmMode::TruncatedResponse { .. }
        | LlmMode::Empty {}
        | LlmMode::Garbage {}
        | LlmMode::ResponseDrift { .. }
        | LlmMode::StreamCut { .. }
        | LlmMode::SlowStream { .. }
        | LlmMode::ToolCallCorruption { .. }
        | LlmMode::ContentFilter { .. } => forward(Transform::Llm {
            provider,
            mode: mode.clone(),
            draw,
        }),
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

/// Asks the engine about this exchange and notes the fault and attacks on it.
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
        .map(|a| (rec.add_attack(&a.rule_id, a.what.name()), a))
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
    let mode = match &fired.what {
        Fault::Tool(m) => m.name(),
        Fault::Llm(m) => m.name(),
    };
    rec.set_fault(&fired.rule_id, mode);
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
        Ok(a) => plan.action = Some(a),
        Err(note) => {
            plan.mark = None;
            rec.not_applied(super::recorder::Owner::Fault, note);
        }
    }
    plan
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

/// Answers with a fault's synthetic response and records it.
pub fn respond(
    rec: Recorder,
    synthetic: Synthetic,
    mark: Option<HeaderValue>,
) -> Response<ProxyBody> {
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
    if let Some(m) = mark {
        resp.headers_mut().insert(FAULT_HEADER, m);
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
