//! Responses a fault answers with instead of the upstream: byte for byte what the real
//! provider (or a real gateway in front of a tool) sends, so the agent's SDK raises what it
//! raises in production (provider-wire-formats.md §1.4, §2.3, §3.3, §4, §5). A provider's
//! own errors are its `llm::Wire`'s; this module owns tool and gateway errors.
#![deny(clippy::wildcard_enum_match_arm)]

use bytes::Bytes;
use serde_json::json;

use crate::chaos::spec::{ClientErrorKind, ToolMode};
use crate::exchange::{McpCall, Provider};
pub use crate::llm::Synthetic;
use crate::llm::{ContextOverflow, wire};

/// A tool error: JSON when the caller speaks JSON, else the status text.
pub fn tool_error(status: u16, message: Option<&str>, wants_json: bool) -> Synthetic {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let message = message.unwrap_or(reason);
    if wants_json {
        Synthetic::json(
            status,
            json!({"error": {"code": status, "message": message}}),
        )
    } else {
        Synthetic {
            status,
            headers: vec![("content-type", "text/plain; charset=utf-8".into())],
            body: Bytes::from(format!("{message}\n")),
        }
    }
}

/// What a gateway answers when the upstream did not answer in time: the provider's own
/// timeout error, or a proxy's plain text in front of anything else.
pub fn gateway_timeout(provider: Option<Provider>, draw: u64) -> Synthetic {
    match provider {
        None => Synthetic {
            status: 504,
            headers: vec![("content-type", "text/plain".into())],
            body: Bytes::from_static(b"upstream request timeout"),
        },
        Some(p) => wire(p).gateway_timeout(draw),
    }
}

/// 429 as the provider sends it. `quota`: OpenAI's non-retryable `insufficient_quota`.
pub fn rate_limit(provider: Provider, retry_after_s: f64, quota: bool, draw: u64) -> Synthetic {
    wire(provider).rate_limit(retry_after_s, quota, draw)
}

/// A provider outage: OpenAI/Gemini/Ollama 503 (or `status`), Anthropic 529 overloaded.
pub fn server_error(provider: Provider, status: Option<u16>, draw: u64) -> Synthetic {
    wire(provider).server_error(status, draw)
}

/// A gateway's own HTML error page (nginx's, the most common in front of APIs), as a load
/// balancer answers when the provider behind it is down.
pub fn html_error_page(status: u16) -> Synthetic {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let page = format!(
        "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} \
         {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    );
    Synthetic {
        status,
        headers: vec![
            ("content-type", "text/html".into()),
            ("server", "nginx".into()),
        ],
        body: Bytes::from(page),
    }
}

/// A prompt the provider's filter blocks before any answer, where that is an error
/// (Azure OpenAI's 400 `content_filter`); `None` where an answer carries the block.
pub fn prompt_blocked(provider: Provider, draw: u64) -> Option<Synthetic> {
    wire(provider).prompt_blocked(draw)
}

/// A tool call the provider could not parse, where that is an error rather than an
/// answer (Ollama's 500 `error parsing tool call`); `None` elsewhere.
pub fn tool_parse_error(provider: Provider) -> Option<Synthetic> {
    match provider {
        Provider::Ollama => Some(crate::llm::ollama::tool_parse_error()),
        Provider::Openai | Provider::Anthropic | Provider::Gemini => None,
    }
}

/// A request the provider refuses (bad key, billing, permission, unknown model, too
/// large), in its own form: never retried by its SDK.
pub fn client_error(provider: Provider, kind: ClientErrorKind, draw: u64) -> Synthetic {
    wire(provider).client_error(kind, draw)
}

/// The provider's "prompt too long" error; `None` where it cuts the prompt silently
/// instead (Ollama), which is a request rewrite.
pub fn context_length_exceeded(provider: Provider, draw: u64) -> Option<Synthetic> {
    match wire(provider).context_overflow(draw) {
        ContextOverflow::Reject(s) => Some(s),
        ContextOverflow::DropEarlyTurns => None,
    }
}

/// Why an MCP fault cannot answer this request (not an MCP request, a notification, no
/// session to lose): the words are all there is. It becomes a skip note on the exchange,
/// which is text, hence `From<NoMcpAnswer> for String`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoMcpAnswer(String);

impl From<NoMcpAnswer> for String {
    fn from(e: NoMcpAnswer) -> String {
        e.0
    }
}

/// What an MCP server answers a request with under `mcp_tool_error`, `mcp_error` or
/// `mcp_session_expired` (`mode`); `call` is the request as read, `session` its
/// `Mcp-Session-Id`, `version` its `MCP-Protocol-Version`. The error says why this request cannot get that answer (it is not an
/// MCP request, a notification has no id to answer, a request outside a session cannot
/// lose it); the request then goes on untouched.
pub fn mcp(
    mode: &ToolMode,
    call: Option<&McpCall>,
    at: (Option<&str>, Option<&str>),
) -> Result<Synthetic, NoMcpAnswer> {
    mcp_answer(mode, call, at).map_err(NoMcpAnswer)
}

fn mcp_answer(
    mode: &ToolMode,
    call: Option<&McpCall>,
    (session, version): (Option<&str>, Option<&str>),
) -> Result<Synthetic, String> {
    let call = call
        .filter(|c| c.is_request())
        .ok_or_else(|| "not an MCP request".to_string())?;
    let id = || {
        call.id
            .as_ref()
            .ok_or_else(|| format!("`{}` is a notification: it gets no answer", call.method))
    };
    let json = |status: u16, body: Vec<u8>| {
        let s = Synthetic {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: Bytes::from(body),
        };
        match session {
            Some(sid) if status == 200 => s.with(crate::mcp::SESSION_HEADER, sid),
            Some(_) | None => s,
        }
    };
    match mode {
        ToolMode::McpToolError { message } => {
            let message = message.clone().unwrap_or_else(|| {
                let tool = call.tool.as_deref().unwrap_or("tool");
                format!("Error executing tool {tool}: the service is unavailable")
            });
            let modern = version.is_some_and(crate::mcp::is_modern);
            Ok(json(200, crate::mcp::tool_error(id()?, &message, modern)))
        }
        ToolMode::McpError { code, message } => Ok(json(
            200,
            crate::mcp::rpc_error(id()?, *code, message.as_deref()),
        )),
        ToolMode::McpSessionExpired {} => match session {
            Some(_) => Ok(json(404, crate::mcp::session_expired())),
            None => Err("the request carries no Mcp-Session-Id: it has no session to lose".into()),
        },
        ToolMode::Timeout { .. }
        | ToolMode::Error { .. }
        | ToolMode::Malformed {}
        | ToolMode::Slow { .. }
        | ToolMode::MaliciousResponse { .. }
        | ToolMode::Reset { .. }
        | ToolMode::Partial { .. }
        | ToolMode::Corrupt { .. }
        | ToolMode::Empty {}
        | ToolMode::Stale { .. } => Err(format!("`{}` is not an MCP answer", mode.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &Synthetic) -> serde_json::Value {
        serde_json::from_slice(&s.body).unwrap()
    }

    fn header<'a>(s: &'a Synthetic, name: &str) -> Option<&'a str> {
        s.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn rate_limits_carry_what_each_sdk_reads() {
        let o = rate_limit(Provider::Openai, 2.0, false, 1);
        assert_eq!(
            (
                o.status,
                header(&o, "retry-after"),
                header(&o, "retry-after-ms")
            ),
            (429, Some("2"), Some("2000"))
        );
        assert_eq!(body(&o)["error"]["code"], "rate_limit_exceeded");
        let q = rate_limit(Provider::Openai, 1.0, true, 1);
        assert_eq!(
            (
                body(&q)["error"]["type"].as_str(),
                header(&q, "x-should-retry")
            ),
            (Some("insufficient_quota"), Some("false"))
        );
        let a = rate_limit(Provider::Anthropic, 0.5, false, 1);
        assert_eq!(
            (
                body(&a)["type"].as_str(),
                body(&a)["error"]["type"].as_str()
            ),
            (Some("error"), Some("rate_limit_error"))
        );
        assert_eq!(header(&a, "retry-after"), Some("0.5"));
        assert!(header(&a, "request-id").unwrap().starts_with("req_"));
        // An exhausted Anthropic credit balance is a 400, which no SDK retries.
        let aq = rate_limit(Provider::Anthropic, 0.5, true, 1);
        assert_eq!(
            (aq.status, body(&aq)["error"]["type"].as_str()),
            (400, Some("invalid_request_error"))
        );
        assert!(
            body(&aq)["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Your credit balance is too low")
        );
        assert_eq!(header(&aq, "retry-after"), None);
        let g = rate_limit(Provider::Gemini, 30.0, false, 1);
        assert_eq!(body(&g)["error"]["details"][0]["retryDelay"], "30s");
        assert_eq!(
            body(&rate_limit(Provider::Ollama, 1.0, false, 1))["error"],
            "too many requests"
        );
    }

    #[test]
    fn outages_and_context_errors_by_provider() {
        let a = server_error(Provider::Anthropic, None, 9);
        assert_eq!(
            (a.status, body(&a)["error"]["type"].as_str()),
            (529, Some("overloaded_error"))
        );
        assert_eq!(server_error(Provider::Openai, Some(500), 9).status, 500);
        assert_eq!(
            body(&server_error(Provider::Gemini, None, 9))["error"]["status"],
            "UNAVAILABLE"
        );
        let c = context_length_exceeded(Provider::Openai, 3).unwrap();
        assert_eq!(
            (c.status, body(&c)["error"]["code"].as_str()),
            (400, Some("context_length_exceeded"))
        );
        assert!(
            context_length_exceeded(Provider::Ollama, 3).is_none(),
            "Ollama truncates silently"
        );
    }

    #[test]
    fn tool_errors_follow_the_callers_format() {
        let j = tool_error(503, None, true);
        assert_eq!(
            body(&j),
            json!({"error": {"code": 503, "message": "Service Unavailable"}})
        );
        let t = tool_error(502, Some("bad gateway upstream"), false);
        assert_eq!(t.body, "bad gateway upstream\n");
    }
}
