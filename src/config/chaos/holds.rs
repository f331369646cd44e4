//! Which fault modes hold a call back while still forwarding it, so that its upstream may
//! time out because of the fault and not the environment (`run::environment`): an
//! exhaustive match per mode enum, so a new mode must say.

use super::{LlmMode, ToolMode};

/// Whether the fault mode named `name` (a journal's `fault.mode`) holds an exchange back
/// while it forwards it, so that its upstream may time out because of the fault, not the
/// environment. Read through the mode enums, so a new mode must say (`holds_upstream`).
pub fn holds_upstream(name: &str) -> bool {
    let bare = serde_json::json!({ "mode": name });
    let tool = serde_json::from_value::<ToolMode>(bare.clone()).is_ok_and(|m| m.holds_upstream());
    tool || serde_json::from_value::<LlmMode>(bare).is_ok_and(|m| m.holds_upstream())
}

impl ToolMode {
    /// The fault delays a call it still forwards (see [`holds_upstream`](fn@holds_upstream)).
    pub fn holds_upstream(&self) -> bool {
        match self {
            ToolMode::Slow { .. } => true,
            ToolMode::Timeout { .. }
            | ToolMode::Error { .. }
            | ToolMode::Malformed {}
            | ToolMode::MaliciousResponse { .. }
            | ToolMode::Reset { .. }
            | ToolMode::Partial { .. }
            | ToolMode::McpToolError { .. }
            | ToolMode::McpError { .. }
            | ToolMode::McpSessionExpired {} => false,
        }
    }
}

impl LlmMode {
    /// The fault delays a call it still forwards (see [`holds_upstream`](fn@holds_upstream)).
    pub fn holds_upstream(&self) -> bool {
        match self {
            LlmMode::SlowStream { .. } => true,
            LlmMode::Timeout { .. }
            | LlmMode::TruncatedResponse { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::Empty {}
            | LlmMode::Garbage {}
            | LlmMode::ResponseDrift { .. }
            | LlmMode::ServerError { .. }
            | LlmMode::StreamCut { .. }
            | LlmMode::ToolCallCorruption { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. }
            | LlmMode::ContentFilter { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modes that hold a forwarded call back are told by their journal names, from
    /// the enums (the run's environment check read a hand-kept list before).
    #[test]
    fn the_modes_that_hold_upstream_are_found_by_name() {
        for name in ["slow", "slow_stream"] {
            assert!(holds_upstream(name), "{name}");
        }
        let others = [
            "timeout",
            "error",
            "malformed",
            "reset",
            "partial",
            "rate_limit",
            "truncated_response",
            "stream_cut",
            "server_error",
            "replayed",
            "indirect_injection",
            "nonsense",
        ];
        for name in others {
            assert!(!holds_upstream(name), "{name}");
        }
        // A delaying mode needs nothing but its name to be read (every field defaults).
        let slow: ToolMode = serde_json::from_value(serde_json::json!({"mode": "slow"})).unwrap();
        assert_eq!(slow.name(), "slow");
    }
}
