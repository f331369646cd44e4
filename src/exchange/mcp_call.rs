//! The MCP message an exchange carried (`McpCall`), as the proxy read it from a request,
//! and the method names it is asked about; a relayed TCP connection's bytes (`TcpBytes`),
//! the other protocol an exchange may carry besides HTTP.

use serde::{Deserialize, Serialize};

/// One MCP (Model Context Protocol, Streamable HTTP) request as the proxy read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCall {
    /// The JSON-RPC method (`initialize`, `tools/list`, `tools/call`,
    /// `notifications/initialized`, …), or what the message is when it is not a request:
    /// `(response)` (the client answering a server's request), `(batch)`, `(stream)` (a GET
    /// opening the server's stream), `(end session)` (DELETE), `(unread)` (over the size
    /// limit, or the upload failed), `(not json-rpc)`. Parenthesised names never collide
    /// with a JSON-RPC method.
    pub method: String,
    /// `tools/call`: the MCP tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The JSON-RPC request id (answers carry it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// A tag of the request's `Mcp-Session-Id` (a hash: the handle itself is redacted),
    /// telling sessions apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// True when no `tools:` entry says `protocol: mcp` and the headers and body said so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detected: bool,
    /// Why the message was not read (`(unread)`, `(not json-rpc)`): its size, or the
    /// content type seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `stdio` for a server bridged by `flakestorm wrap` (else Streamable HTTP, unsaid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

impl McpCall {
    /// A JSON-RPC request or notification the proxy read (not a marker like `(stream)`).
    pub fn is_request(&self) -> bool {
        !self.method.starts_with('(')
    }

    /// `tools/call` of a named tool.
    pub fn tool_call(&self) -> Option<&str> {
        (self.method == TOOLS_CALL)
            .then_some(self.tool.as_deref())
            .flatten()
    }

    /// The tool this message called, for counting calls: a `tools/call`'s, or the one a
    /// message too long to read named in its first bytes.
    pub fn called_tool(&self) -> Option<&str> {
        match self.method.as_str() {
            TOOLS_CALL | "(unread)" => self.tool.as_deref(),
            _ => None,
        }
    }
}

/// The MCP method that calls a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// The MCP method that lists tools.
pub const TOOLS_LIST: &str = "tools/list";

/// What a relayed TCP connection carried: bytes from the agent, and to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpBytes {
    pub sent: u64,
    pub received: u64,
}
