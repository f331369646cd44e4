//! What an MCP request is: recognised by its head (the Streamable HTTP transport's
//! headers), then read from its JSON-RPC body.

use http::{HeaderMap, Method, header};
use serde_json::Value;

use crate::exchange::{McpCall, TOOLS_CALL};

/// The header that carries an MCP session's id.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Whether a request's head says MCP: a session id or protocol version header, or a POST
/// that accepts both JSON and an event stream, which the transport requires of every
/// client POST.
pub fn head_says_mcp(method: &Method, headers: &HeaderMap) -> bool {
    if headers.contains_key(SESSION_HEADER) || headers.contains_key("mcp-protocol-version") {
        return true;
    }
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    method == Method::POST
        && accept.contains("application/json")
        && accept.contains("text/event-stream")
}

/// A message that is not a request the proxy read: `(stream)`, `(unread)`, … with why.
pub fn marker(method: &str, note: Option<String>, detected: bool) -> McpCall {
    McpCall {
        method: method.into(),
        tool: None,
        id: None,
        detected,
        note,
    }
}

/// Reads a POSTed MCP message. A body that is not JSON-RPC 2.0 is `(not json-rpc)`, its
/// note naming the content type seen.
pub fn read_request(body: &[u8], content_type: Option<&str>, detected: bool) -> McpCall {
    let not_rpc = || {
        let ct = content_type.unwrap_or("none");
        marker(
            "(not json-rpc)",
            Some(format!(
                "the body is not a JSON-RPC 2.0 message (content type `{ct}`)"
            )),
            detected,
        )
    };
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return not_rpc();
    };
    let rpc = |v: &Value| v.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    match &json {
        Value::Object(o) if rpc(&json) => {
            let Some(method) = o.get("method").and_then(Value::as_str) else {
                let answer = o.contains_key("result") || o.contains_key("error");
                return match answer {
                    true => marker("(response)", None, detected),
                    false => not_rpc(),
                };
            };
            let tool = (method == TOOLS_CALL)
                .then(|| json.pointer("/params/name").and_then(Value::as_str))
                .flatten()
                .map(str::to_string);
            McpCall {
                method: method.to_string(),
                tool,
                id: o.get("id").cloned(),
                detected,
                note: None,
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(rpc) => {
            marker("(batch)", None, detected)
        }
        Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::String(_)
        | Value::Object(_)
        | Value::Array(_) => not_rpc(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_is_read_with_its_tool_and_id() {
        let call = read_request(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#,
            Some("application/json"),
            false,
        );
        assert_eq!(call.method, "tools/call");
        assert_eq!(call.tool_call(), Some("get_weather"));
        assert_eq!(call.id, Some(Value::from(3)));
        let n = read_request(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            None,
            true,
        );
        assert_eq!(
            (n.method.as_str(), n.id, n.detected),
            ("notifications/initialized", None, true)
        );
    }

    #[test]
    fn what_is_not_a_request_says_what_it_is() {
        let r = read_request(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, None, false);
        assert_eq!(r.method, "(response)");
        let b = read_request(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            None,
            false,
        );
        assert_eq!(b.method, "(batch)");
        let html = read_request(b"<html>", Some("text/html"), false);
        assert_eq!(html.method, "(not json-rpc)");
        assert!(html.note.unwrap().contains("`text/html`"));
        let v1 = read_request(
            br#"{"jsonrpc":"1.0","method":"x"}"#,
            Some("application/json"),
            false,
        );
        assert_eq!(v1.method, "(not json-rpc)");
    }

    #[test]
    fn the_head_of_an_mcp_post_says_so() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            "application/json, text/event-stream".parse().unwrap(),
        );
        assert!(head_says_mcp(&Method::POST, &h));
        assert!(!head_says_mcp(&Method::GET, &h));
        let mut plain = HeaderMap::new();
        plain.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert!(!head_says_mcp(&Method::POST, &plain));
        plain.insert(SESSION_HEADER, "abc".parse().unwrap());
        assert!(head_says_mcp(&Method::GET, &plain));
    }
}
