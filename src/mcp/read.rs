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
    if has_mcp_header(headers) {
        return true;
    }
    // Asked of every tool request: no allocation, the method first.
    let accepts = |kind: &[u8]| {
        headers.get_all(header::ACCEPT).iter().any(|v| {
            v.as_bytes()
                .windows(kind.len())
                .any(|w| w.eq_ignore_ascii_case(kind))
        })
    };
    method == Method::POST && accepts(b"application/json") && accepts(b"text/event-stream")
}

/// Whether `method` is one MCP defines (its method families): with only an `Accept` header
/// to go by, other JSON-RPC over HTTP (agent-to-agent protocols, say) is not MCP.
pub fn known_method(method: &str) -> bool {
    const FAMILIES: &[&str] = &[
        "tools/",
        "resources/",
        "prompts/",
        "notifications/",
        "completion/",
        "logging/",
        "sampling/",
        "elicitation/",
        "roots/",
        "subscriptions/",
        "tasks/",
    ];
    matches!(method, "initialize" | "ping" | "server/discover")
        || FAMILIES.iter().any(|f| method.starts_with(f))
}

/// Whether a request carries one of MCP's own headers (not just an `Accept` any
/// JSON-RPC-over-SSE client sends).
pub fn has_mcp_header(headers: &HeaderMap) -> bool {
    headers.contains_key(SESSION_HEADER) || headers.contains_key("mcp-protocol-version")
}

/// A message that is not a request the proxy read: `(stream)`, `(unread)`, … with why.
pub fn marker(method: &str, note: Option<String>, detected: bool) -> McpCall {
    McpCall {
        transport: None,
        method: method.into(),
        tool: None,
        id: None,
        session: None,
        detected,
        note,
    }
}

/// The method and `params.name` of a JSON-RPC message from its first bytes alone (a
/// message over the read limit): a small scan of the JSON's tokens, tracking the key path,
/// that stops where the bytes do. Nested keys named `method` or `name` do not count.
pub fn scan_prefix(b: &[u8]) -> (Option<String>, Option<String>) {
    let (mut method, mut name) = (None, None);
    // Only the top two levels hold the keys sought (`method`, `params.name`): the key
    // being read at each of those (arrays hold `None`), and how deep the rest goes, so
    // deep nesting costs nothing per string.
    let mut path: Vec<Option<String>> = vec![];
    let mut objects: Vec<bool> = vec![];
    let mut depth = 0usize;
    let mut key_next = false;
    let mut i = 0;
    while i < b.len() && (method.is_none() || name.is_none()) {
        match b[i] {
            open @ (b'{' | b'[') => {
                depth += 1;
                if depth <= 2 {
                    objects.push(open == b'{');
                    path.push(None);
                }
                key_next = depth <= 2 && open == b'{';
            }
            b'}' | b']' => {
                if depth <= 2 {
                    objects.pop();
                    path.pop();
                }
                depth = depth.saturating_sub(1);
                key_next = false;
            }
            b',' => key_next = depth <= 2 && objects.last() == Some(&true),
            b':' => key_next = false,
            b'"' => {
                if depth > 2 {
                    let Some(end) = string_end(b, i) else { break };
                    i = end;
                    continue;
                }
                let Some((s, end)) = string_at(b, i) else {
                    break;
                };
                match (key_next, path.last_mut()) {
                    (true, Some(slot)) => *slot = Some(s),
                    (true, None) | (false, _) => {
                        let keys: Vec<&str> =
                            path.iter().map(|k| k.as_deref().unwrap_or("")).collect();
                        match keys.as_slice() {
                            ["method"] => method = Some(s),
                            ["params", "name"] => name = Some(s),
                            _ => {}
                        }
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (method, name)
}

/// The index after the JSON string starting at `b[at]` (a `"`), without decoding it;
/// `None` when the bytes end inside it.
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The JSON string starting at `b[at]` (a `"`), decoded, and the index after it; `None`
/// when the bytes end inside it.
fn string_at(b: &[u8], at: usize) -> Option<(String, usize)> {
    let end = string_end(b, at)?;
    let s = serde_json::from_slice::<String>(&b[at..end]).ok()?;
    Some((s, end))
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
                transport: None,
                method: method.to_string(),
                tool,
                id: o.get("id").cloned(),
                session: None,
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
    fn the_first_bytes_of_a_long_message_say_its_method_and_tool() {
        let head = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"clientInfo":{"name":"mcp"}},"name":"send_email","arguments":{"body":"aaaa"#;
        assert_eq!(
            scan_prefix(head),
            (Some("tools/call".into()), Some("send_email".into()))
        );
        let escaped = br#"{"params":{"name":"a\"b"},"method":"x"}"#;
        assert_eq!(
            scan_prefix(escaped),
            (Some("x".into()), Some("a\"b".into()))
        );
        assert_eq!(scan_prefix(br#"{"method":"tools/ca"#), (None, None));
        assert_eq!(
            scan_prefix(br#"[{"method":"ping"}]"#),
            (None, None),
            "not top level"
        );
        // Nested keys named alike do not count, and deep nesting is read in one pass
        // (a hostile 4 MiB of brackets and strings once cost a vector per string).
        let nested = br#"{"params":{"arguments":{"name":"x","method":"y"},"name":"t"},"method":"tools/call"}"#;
        assert_eq!(
            scan_prefix(nested),
            (Some("tools/call".into()), Some("t".into()))
        );
        let mut deep = vec![b'['; 200_000];
        deep.extend(b"\"\",".repeat(200_000));
        assert_eq!(scan_prefix(&deep), (None, None));
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
