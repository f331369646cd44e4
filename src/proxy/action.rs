//! What a fired chaos rule does to an exchange: answer at once (after an optional hold)
//! with a provider-, tool- or MCP-shaped response, drop the connection, or forward and
//! transform the response on its way back (a data fault plants in it, seeded by its draw).
#![deny(clippy::wildcard_enum_match_arm)]

use std::time::Duration;

use bytes::Bytes;

use super::fault_body::Transform;
use crate::chaos::respond::{self, Synthetic};
use crate::chaos::spec::{Corruption, FilterSignal, LlmMode, TimeoutEnd, ToolMode};
use crate::chaos::{Fault, Fired};
use crate::exchange::{McpCall, Provider, Target};

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
        Fault::Tool(mode) => match mode.plan(fired.draw) {
            Some(plan) => Ok(Action::Forward {
                delay: Duration::ZERO,
                transform: Some(Transform::Plant(plan?)),
            }),
            None => Ok(tool(mode, json)),
        },
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
        // Answered by `respond::mcp`, planted by `Transform::Plant` (`action`).
        ToolMode::McpToolError { .. }
        | ToolMode::McpError { .. }
        | ToolMode::McpSessionExpired {}
        | ToolMode::Corrupt { .. }
        | ToolMode::Empty {}
        | ToolMode::Stale { .. } => Action::Forward {
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
