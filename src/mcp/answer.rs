//! The answers a real MCP server gives when a tool or the session fails, as JSON-RPC
//! bodies: a tool result flagged `isError` (the tool ran and failed), a JSON-RPC error
//! (the server could not run it), and the body of the 404 that ends a session.

use serde_json::{Value, json};

/// A `tools/call` result with `isError: true`: what a server sends when the tool itself
/// failed (the MCP spec's "tool execution error", which the model is meant to see).
/// `modern`: the request speaks the sessionless protocol (2026-07-28 on), whose results
/// say `resultType`; a client of that era refuses a result without it.
pub fn tool_error(id: &Value, message: &str, modern: bool) -> Vec<u8> {
    tool_result(id, message, true, modern)
}

/// A `tools/call` result carrying `text` (a replayed tool answer, or a tool's failure).
pub fn tool_result(id: &Value, text: &str, is_error: bool, modern: bool) -> Vec<u8> {
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if modern {
        result["resultType"] = "complete".into();
    }
    let v = json!({"jsonrpc": "2.0", "id": id, "result": result});
    v.to_string().into_bytes()
}

/// Whether an `MCP-Protocol-Version` is of the sessionless era (2026-07-28 on): versions
/// are dates, so they compare as text.
pub fn is_modern(version: &str) -> bool {
    let v = version.trim();
    v.starts_with(|c: char| c.is_ascii_digit()) && v >= "2026-07-28"
}

/// A JSON-RPC error answer (`-32603` internal error, `-32602` invalid params, or a
/// server-defined code); `message` defaults to the JSON-RPC name of the code.
pub fn rpc_error(id: &Value, code: i32, message: Option<&str>) -> Vec<u8> {
    let message = message.unwrap_or(match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32603 => "Internal error",
        _ => "Server error",
    });
    let v = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    v.to_string().into_bytes()
}

/// The body of the 404 a server answers a request of a session it no longer knows with
/// (the form the MCP Python SDK's server sends).
pub fn session_expired() -> Vec<u8> {
    let v = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": "Session not found"},
    });
    v.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_the_request_id_and_the_spec_shapes() {
        let e: Value = serde_json::from_slice(&tool_error(&json!(7), "down", false)).unwrap();
        assert!(e["result"].get("resultType").is_none());
        let m: Value = serde_json::from_slice(&tool_error(&json!(7), "down", true)).unwrap();
        assert_eq!(m["result"]["resultType"], "complete");
        assert!(is_modern("2026-07-28") && !is_modern("2025-11-25") && !is_modern("DRAFT-2026"));
        assert_eq!(e["id"], 7);
        assert_eq!(e["result"]["isError"], true);
        assert_eq!(e["result"]["content"][0]["text"], "down");
        let r: Value = serde_json::from_slice(&rpc_error(&json!("a"), -32602, None)).unwrap();
        assert_eq!(
            (r["id"].as_str(), r["error"]["code"].as_i64()),
            (Some("a"), Some(-32602))
        );
        assert_eq!(r["error"]["message"], "Invalid params");
    }
}
