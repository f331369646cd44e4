//! MCP's stdio transport as `flakestorm wrap` bridges it (pure): the names both ends agree
//! on, and what one line of newline-delimited JSON-RPC is.
//!
//! A wrapped server's messages reach the proxy as Streamable HTTP: `wrap` POSTs each line
//! the client writes through the run's proxy lane to `http://<bridge>.stdio.flakestorm.invalid/<tool>`,
//! and the proxy forwards it to the wrap's *bridge*, a Unix socket `<bridge>.sock` in the
//! proxy's private wrap directory, which writes it to the server's stdin and answers with
//! what the server wrote back. So every MCP rule, check and journal entry works on stdio
//! servers as on HTTP ones. `.invalid` (RFC 2606) never resolves: nothing else can be meant.

use serde_json::Value;

/// The host suffix of a bridged stdio server's requests.
pub const HOST_SUFFIX: &str = ".stdio.flakestorm.invalid";

/// Set in the agent's environment by a run: the proxy URL (the agent's lane) a wrap POSTs
/// through.
pub const ENV_PROXY: &str = "FLAKESTORM_WRAP_PROXY";

/// Set in the agent's environment by a run: the proxy's wrap directory, where a wrap binds
/// its bridge socket.
pub const ENV_DIR: &str = "FLAKESTORM_WRAP_DIR";

/// The response header a bridge sets when its server exited before answering: the wrap
/// then closes its stdout as the server did, rather than write an answer.
pub const EXITED_HEADER: &str = "flakestorm-wrap-exited";

/// The request header of a line the *server* wrote that is not JSON-RPC: journaled, not
/// written to the server.
pub const SERVER_LINE_HEADER: &str = "flakestorm-wrap-server-line";

/// Whether `name` can name a stdio tool: it is a URL path segment and a glob literal.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The URL a wrap's requests for `tool` go to, through bridge `bridge`.
pub fn url(bridge: &str, tool: &str) -> String {
    format!("http://{bridge}{HOST_SUFFIX}/{tool}")
}

/// The `match_url` of a stdio tool: its requests through any bridge.
pub fn tool_glob(tool: &str) -> String {
    format!("http://*{HOST_SUFFIX}/{tool}")
}

/// The bridge a request's host names, when it is a stdio bridge's host and the name is one
/// a wrap makes (lower-case letters and digits): the proxy connects to nothing else.
pub fn bridge_of(host: &str) -> Option<&str> {
    let id = host
        .len()
        .checked_sub(HOST_SUFFIX.len())
        .filter(|&at| host.is_char_boundary(at) && host[at..].eq_ignore_ascii_case(HOST_SUFFIX))
        .map(|at| &host[..at])?;
    let ok = (8..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    ok.then_some(id)
}

/// A fresh bridge id: 16 random bytes in lower-case hex (what `bridge_of` accepts).
pub fn new_bridge_id() -> String {
    random_hex(16)
}

/// `n` random bytes as lower-case hex.
pub fn random_hex(n: usize) -> String {
    use ring::rand::SecureRandom;
    let mut b = vec![0u8; n];
    // The system's generator failing leaves zeros: a name, not a secret.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The file name of bridge `id`'s socket in the wrap directory.
pub fn socket_file(id: &str) -> String {
    format!("{id}.sock")
}

/// What one line of the stdio transport is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A request: its answer carries `id` back.
    Request { id: Value },
    /// A notification (no id): nothing answers it.
    Notification,
    /// An answer to a request of the other side.
    Response { id: Value },
    /// A JSON-RPC batch (answers come as they come).
    Batch,
    /// Not a JSON-RPC 2.0 message.
    NotJson,
}

impl Line {
    pub fn read(line: &[u8]) -> Line {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return Line::NotJson;
        };
        match v {
            Value::Object(mut o) => {
                if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
                    return Line::NotJson;
                }
                let id = o.remove("id").filter(|id| !id.is_null());
                match (o.contains_key("method"), id) {
                    (true, Some(id)) => Line::Request { id },
                    (true, None) => Line::Notification,
                    (false, Some(id)) if o.contains_key("result") || o.contains_key("error") => {
                        Line::Response { id }
                    }
                    (false, _) => Line::NotJson,
                }
            }
            Value::Array(items) if !items.is_empty() => Line::Batch,
            Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_) => Line::NotJson,
        }
    }
}

/// The key an id is matched by (`1` and `"1"` are different ids).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_told_apart_as_json_rpc_defines_them() {
        let r = |s: &str| Line::read(s.as_bytes());
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Line::Request { id: json!(1) }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Line::Notification
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Line::Response { id: json!("a") }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#),
            Line::Response { id: json!("a") }
        );
        assert_eq!(r(r#"[{"jsonrpc":"2.0","method":"x"}]"#), Line::Batch);
        for not in [
            "hello from the server",
            "",
            "{}",
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            "[]",
            "42",
        ] {
            assert_eq!(r(not), Line::NotJson, "{not}");
        }
    }

    #[test]
    fn only_a_wraps_own_bridge_names_are_bridges() {
        assert_eq!(
            bridge_of("abcdef0123456789.stdio.flakestorm.invalid"),
            Some("abcdef0123456789")
        );
        assert_eq!(
            bridge_of("ABCDEF0123456789.STDIO.flakestorm.invalid"),
            None,
            "upper-case ids are not made by wrap"
        );
        for bad in [
            "stdio.flakestorm.invalid",
            ".stdio.flakestorm.invalid",
            "short.stdio.flakestorm.invalid",
            "../../etc.stdio.flakestorm.invalid",
            "abcdef0123456789.stdio.flakestorm.invalid.evil",
            "abcdef01/23456789.stdio.flakestorm.invalid",
            "api.openai.com",
        ] {
            assert_eq!(bridge_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tools_glob_takes_its_urls_through_any_bridge_and_no_other_tools() {
        let g = crate::globs::url_glob(&tool_glob("files"))
            .unwrap()
            .compile_matcher();
        assert!(g.is_match(url("abcdef0123456789", "files")));
        assert!(!g.is_match(url("abcdef0123456789", "files2")));
        assert!(!g.is_match("http://files.example/files"));
        assert!(valid_tool_name("my_files-2.v1"));
        for bad in ["", "a b", "a/b", "a*", "x?"] {
            assert!(!valid_tool_name(bad), "{bad}");
        }
    }
}
