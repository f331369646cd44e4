//! What a chaos rule did to an exchange, by name: every tool and LLM fault mode, every
//! context attack, and what a replay does in their place. Carried typed from the proxy
//! to the report (`FaultRecord.mode`, rule statistics, metrics); the names are serde's
//! and the config's, kept by the derive, never by hand.

use serde::{Deserialize, Serialize};

/// A fault mode, an attack type, or a replay's answer. A tool and an LLM `timeout` (and
/// `empty`) are one kind: the record's target says which.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum FaultKind {
    // Tool faults (`timeout` is also an LLM fault).
    Timeout,
    Error,
    Malformed,
    Slow,
    MaliciousResponse,
    Reset,
    Partial,
    McpToolError,
    McpError,
    McpSessionExpired,
    // Plausible-but-wrong data (`empty`, shared with the LLM fault, is below).
    Corrupt,
    Stale,
    // LLM faults (`empty` is also a tool fault).
    TruncatedResponse,
    RateLimit,
    Empty,
    Garbage,
    ResponseDrift,
    ServerError,
    StreamCut,
    SlowStream,
    ToolCallCorruption,
    ContextLengthExceeded,
    ClientError,
    HtmlErrorPage,
    ContentFilter,
    // Context attacks.
    IndirectInjection,
    MemoryPoisoning,
    Overflow,
    ConflictingContext,
    InjectionViaContext,
    McpToolPoisoning,
    McpRugPull,
    McpShadowing,
    /// A replay session or tape answered the call with its recorded answer.
    Replayed,
    /// A replay had no recorded answer for the call (`on_miss`).
    ReplayMiss,
    /// A name this build does not know (a report or journal of a newer build): read so the
    /// rest of the record still is, never made.
    #[serde(other)]
    Unknown,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The fault holds a call back while still forwarding it, so its upstream may time
    /// out because of the fault and not the environment (`run::environment`).
    pub fn holds_upstream(self) -> bool {
        match self {
            FaultKind::Slow | FaultKind::SlowStream => true,
            FaultKind::Timeout
            | FaultKind::Error
            | FaultKind::Malformed
            | FaultKind::MaliciousResponse
            | FaultKind::Reset
            | FaultKind::Partial
            | FaultKind::McpToolError
            | FaultKind::McpError
            | FaultKind::McpSessionExpired
            | FaultKind::Corrupt
            | FaultKind::Stale
            | FaultKind::TruncatedResponse
            | FaultKind::RateLimit
            | FaultKind::Empty
            | FaultKind::Garbage
            | FaultKind::ResponseDrift
            | FaultKind::ServerError
            | FaultKind::StreamCut
            | FaultKind::ToolCallCorruption
            | FaultKind::ContextLengthExceeded
            | FaultKind::ClientError
            | FaultKind::HtmlErrorPage
            | FaultKind::ContentFilter
            | FaultKind::IndirectInjection
            | FaultKind::MemoryPoisoning
            | FaultKind::Overflow
            | FaultKind::ConflictingContext
            | FaultKind::InjectionViaContext
            | FaultKind::McpToolPoisoning
            | FaultKind::McpRugPull
            | FaultKind::McpShadowing
            | FaultKind::Replayed
            | FaultKind::ReplayMiss
            | FaultKind::Unknown => false,
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    /// Journals, reports, metrics and tapes carry the names: each is serde's, and reads
    /// back as itself.
    #[test]
    fn every_kind_is_named_as_serde_does_and_reads_back() {
        let kinds: Vec<FaultKind> = FaultKind::iter().collect();
        assert_eq!(kinds.len(), 36);
        for k in kinds {
            let name = serde_json::to_value(k).unwrap();
            assert_eq!(name, k.as_str());
            assert_eq!(serde_json::from_value::<FaultKind>(name).unwrap(), k);
        }
        assert_eq!(FaultKind::McpRugPull.to_string(), "mcp_rug_pull");
        let newer = serde_json::from_value::<FaultKind>("a_mode_of_a_newer_build".into());
        assert_eq!(newer.unwrap(), FaultKind::Unknown);
    }

    #[test]
    fn only_the_slow_modes_hold_a_forwarded_call() {
        let holding: Vec<FaultKind> = FaultKind::iter().filter(|k| k.holds_upstream()).collect();
        assert_eq!(holding, [FaultKind::Slow, FaultKind::SlowStream]);
    }
}
