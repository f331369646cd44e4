//! A rule that fired for one request: its id, what it does, the draw that picks its
//! payloads and canaries, and what an MCP edit of it needs (its `mcp_tool` glob, a rug
//! pull's notice).

use std::sync::Arc;

/// A rule that fired for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired<T> {
    pub rule_id: Arc<str>,
    pub what: T,
    /// The rule's draw for this call; picks payloads and seeds canary values, reproducibly.
    pub draw: u64,
    /// The rule's `mcp_tool` glob: edits of a tool list touch only the tools it matches.
    pub mcp_tool: Option<ToolGlob>,
    /// A rug pull's claim on telling its session the tool list changed.
    pub notice: Option<Arc<crate::mcp::Notice>>,
}

/// An `mcp_tool` glob, compared by its text.
#[derive(Debug, Clone)]
pub struct ToolGlob(pub globset::GlobMatcher);

impl PartialEq for ToolGlob {
    fn eq(&self, other: &Self) -> bool {
        self.0.glob() == other.0.glob()
    }
}
