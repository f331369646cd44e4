//! What kind of rule a mode makes, beyond its name: the modes and attacks that are MCP's
//! alone, the data faults (what they plant), the attacks on LLM requests, and an attack's
//! payload given but empty.

use super::modes::{AttackMode, ToolMode};
use crate::plant;

impl ToolMode {
    /// Modes that answer in MCP's own forms: they apply to MCP requests only.
    pub fn mcp_only(&self) -> bool {
        matches!(
            self,
            ToolMode::McpToolError { .. }
                | ToolMode::McpError { .. }
                | ToolMode::McpSessionExpired {}
        )
    }

    /// A data fault: it changes the data of a real JSON or text response.
    pub fn is_data_fault(&self) -> bool {
        matches!(
            self,
            ToolMode::Corrupt { .. } | ToolMode::Empty {} | ToolMode::Stale { .. }
        )
    }

    /// A data fault (`corrupt`, `empty`, `stale`) as it fires with `draw`: what it plants
    /// (`None` for the other modes). The error (a `fields:` entry that is no JSON path)
    /// cannot happen on rules compiled at load, which checked every entry.
    pub fn plan(&self, draw: u64) -> Option<Result<plant::Plan, plant::PlantError>> {
        let mode = match self {
            ToolMode::Corrupt { fields } => return Some(plant::Plan::corrupt(fields, draw)),
            ToolMode::Empty {} => plant::Mode::Empty,
            ToolMode::Stale { days } => plant::Mode::Stale { days: *days },
            ToolMode::Timeout { .. }
            | ToolMode::Error { .. }
            | ToolMode::Malformed {}
            | ToolMode::Slow { .. }
            | ToolMode::MaliciousResponse { .. }
            | ToolMode::Reset { .. }
            | ToolMode::Partial { .. }
            | ToolMode::McpToolError { .. }
            | ToolMode::McpError { .. }
            | ToolMode::McpSessionExpired {} => return None,
        };
        Some(Ok(plant::Plan { mode, draw }))
    }
}

impl AttackMode {
    /// A payload (or a field an attack needs) given but empty: a load error.
    pub fn lacks_payload(&self) -> bool {
        let empty = |v: &Option<String>| v.as_ref().is_some_and(String::is_empty);
        match self {
            AttackMode::IndirectInjection { payloads, payload } => {
                payloads.iter().chain(payload).all(String::is_empty)
            }
            AttackMode::MemoryPoisoning { payload, .. }
            | AttackMode::InjectionViaContext { payload } => payload.is_empty(),
            // Its size is a number, checked against its range.
            AttackMode::Overflow { .. } | AttackMode::ConflictingContext { .. } => false,
            AttackMode::McpToolPoisoning { payload, .. }
            | AttackMode::McpRugPull { payload, .. } => empty(payload),
            AttackMode::McpShadowing {
                shadows,
                name,
                payload,
            } => shadows.is_empty() || empty(name) || empty(payload),
        }
    }

    /// Attacks that rewrite outgoing LLM requests: no MCP message is theirs.
    pub fn on_llm_requests(&self) -> bool {
        matches!(
            self,
            AttackMode::MemoryPoisoning { .. }
                | AttackMode::Overflow { .. }
                | AttackMode::ConflictingContext { .. }
                | AttackMode::InjectionViaContext { .. }
        )
    }

    /// Attacks on MCP tool lists: they apply to MCP answers only.
    pub fn mcp_only(&self) -> bool {
        matches!(
            self,
            AttackMode::McpToolPoisoning { .. }
                | AttackMode::McpRugPull { .. }
                | AttackMode::McpShadowing { .. }
        )
    }
}
