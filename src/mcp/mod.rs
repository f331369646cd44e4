//! MCP (Model Context Protocol) over Streamable HTTP, on the wire (pure): JSON-RPC 2.0
//! messages POSTed to one endpoint and answered as JSON or as an SSE stream. Owns reading
//! a request (method, id, tool name), the answers a real MCP server gives when a tool or
//! the session fails, and the edits the proxy makes to a server's answers (text injected
//! into a tool result, a data fault on one (`plant`), poisoned or changed tool lists, a
//! shadowing tool, the request id of a replayed answer). The proxy decides when; this module only knows the protocol.
//! `stdio` names what `flakestorm wrap` and the proxy agree on to carry the stdio transport.

mod answer;
mod edit;
mod notice;
mod read;
mod sse;
pub mod stdio;

pub use answer::{is_modern, rpc_error, session_expired, tool_error, tool_result};
pub use edit::{
    Edit, EditError, NO_ROOM_FOR_NOTICE, Planting, PoisonPlace, apply, apply_planting,
    list_changed_event, missing,
};
pub use notice::{Notice, Told};
pub use read::{
    SESSION_HEADER, has_mcp_header, head_says_mcp, known_method, marker, read_request, scan_prefix,
};
pub use sse::{Scan, corrupt_last_event, event_data, next_event, next_event_from};

/// Largest MCP message the proxy reads to know it; a longer one is forwarded unread (and
/// journaled as `(unread)`).
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;
