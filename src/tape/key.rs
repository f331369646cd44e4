//! The request key a tape answers by: method, scheme, host, port, path, the query (its pairs
//! in order of name), and the body — JSON with `replays.match.ignore_json_fields` left out
//! and its keys sorted, else the bytes as they are; an MCP message (`RequestKey::mcp`)
//! without its JSON-RPC `id` and progress token, counters that differ from run to run
//! while the call is the same (method, tool name, arguments), since the replayed answer
//! is given the live id. Both sides are keyed after redaction
//! (the tape holds redacted requests; the proxy redacts a live one the same way first), so
//! a secret never has to match.

use serde_json::Value;

/// A request's key (compared whole; shown in miss messages by its first line).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestKey(String);

impl RequestKey {
    /// `url` is the full (redacted) URL; `ignore` lists fields as dotted paths
    /// (`user`, `metadata.session_id`).
    pub fn new(method: &str, url: &str, body: &[u8], ignore: &[String]) -> RequestKey {
        Self::keyed(method, url, body, ignore, &[])
    }

    /// An MCP message's key: as `new`, without the JSON-RPC id and progress token.
    pub fn mcp(method: &str, url: &str, body: &[u8], ignore: &[String]) -> RequestKey {
        Self::keyed(
            method,
            url,
            body,
            ignore,
            &["id", "params._meta.progressToken"],
        )
    }

    fn keyed(
        method: &str,
        url: &str,
        body: &[u8],
        ignore: &[String],
        counters: &[&str],
    ) -> RequestKey {
        let mut key = format!("{} {}\n", method.to_ascii_uppercase(), target(url));
        match serde_json::from_slice::<Value>(body) {
            Ok(mut json) if !body.is_empty() => {
                for path in counters {
                    remove(&mut json, path);
                }
                for path in ignore {
                    remove(&mut json, path);
                }
                canonical(&json, &mut key);
            }
            _ => key.push_str(&String::from_utf8_lossy(body)),
        }
        RequestKey(key)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `scheme://host:port/path?sorted query`, the port written even when it is the default.
fn target(url: &str) -> String {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return url.to_string();
    };
    let scheme = uri.scheme_str().unwrap_or("http").to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let host = uri.host().unwrap_or_default().to_ascii_lowercase();
    let mut pairs: Vec<&str> = uri
        .query()
        .map(|q| q.split('&').filter(|p| !p.is_empty()).collect())
        .unwrap_or_default();
    pairs.sort_by_key(|p| p.split_once('=').map_or(*p, |(k, _)| k));
    format!("{scheme}://{host}:{port}{}?{}", uri.path(), pairs.join("&"))
}

fn remove(v: &mut Value, path: &str) {
    let (first, rest) = match path.split_once('.') {
        Some((f, r)) => (f, Some(r)),
        None => (path, None),
    };
    let Value::Object(map) = v else { return };
    match rest {
        None => {
            map.shift_remove(first);
        }
        Some(rest) => {
            if let Some(inner) = map.get_mut(first) {
                remove(inner, rest);
            }
        }
    }
}

/// JSON with object keys sorted, so field order does not change the key.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.push_str(&v.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_message_is_keyed_without_its_id() {
        let k = |b: &str| RequestKey::mcp("POST", "http://m/mcp", b.as_bytes(), &[]);
        let call = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"w","arguments":{{"city":"Oslo"}},"_meta":{{"progressToken":{id}}}}}}}"#
            )
        };
        assert_eq!(k(&call(1)), k(&call(7)));
        let other = call(1).replace("Oslo", "Rome");
        assert_ne!(k(&call(1)), k(&other), "the arguments still count");
        let plain = |b: &str| RequestKey::new("POST", "http://m/rpc", b.as_bytes(), &[]);
        assert_ne!(
            plain(&call(1)),
            plain(&call(7)),
            "other JSON-RPC keeps its id"
        );
    }

    #[test]
    fn ignored_fields_field_order_and_default_ports_do_not_change_the_key() {
        let ignore = vec!["user".to_string(), "metadata.run".to_string()];
        let a = RequestKey::new(
            "post",
            "https://API.example/v1/chat?b=2&a=1",
            br#"{"model":"m","user":"u1","metadata":{"run":1,"keep":true},"stream_options":{}}"#,
            &ignore,
        );
        let b = RequestKey::new(
            "POST",
            "https://api.example:443/v1/chat?a=1&b=2",
            br#"{"stream_options":{},"metadata":{"keep":true,"run":2},"model":"m","user":"u2"}"#,
            &ignore,
        );
        assert_eq!(a, b);
        let other_model = RequestKey::new(
            "POST",
            "https://api.example/v1/chat?a=1&b=2",
            br#"{"model":"n","metadata":{"keep":true}}"#,
            &ignore,
        );
        assert_ne!(a, other_model);
        let other_port =
            RequestKey::new("POST", "https://api.example:8443/v1/chat?a=1&b=2", b"", &[]);
        let no_port = RequestKey::new("POST", "https://api.example/v1/chat?a=1&b=2", b"", &[]);
        assert_ne!(other_port, no_port);
        assert_eq!(
            RequestKey::new("GET", "http://h/x", b"plain", &[]).as_str(),
            "GET http://h:80/x?\nplain"
        );
    }
}
