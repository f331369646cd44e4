//! Header rules for a forwarding proxy: hop-by-hop stripping (RFC 9110 §7.6.1), upgrade
//! detection, proxy authentication, and copying heads into exchange records.

use base64::Engine;
use http::{HeaderMap, HeaderName, header};

/// Headers that describe one connection, never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
];

/// Whether `name` is connection-specific on its own (not by being listed in `Connection`).
fn is_hop(name: &HeaderName) -> bool {
    name == header::CONNECTION
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == header::TE
        || HOP_BY_HOP.contains(&name.as_str())
}

/// Removes connection-specific headers. With `keep_upgrade` (a WebSocket handshake),
/// `Connection: upgrade` and `Upgrade` survive so the upstream sees the handshake.
/// One pass over the names first: most heads have none, and each `remove` hashes.
pub fn strip_hop_by_hop(h: &mut HeaderMap, keep_upgrade: bool) {
    if !h.keys().any(is_hop) {
        return;
    }
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .filter(|n| !(keep_upgrade && n == header::UPGRADE))
        .collect();
    for name in named {
        h.remove(name);
    }
    let kept = |n: &HeaderName| {
        n == header::TE || (keep_upgrade && (n == header::CONNECTION || n == header::UPGRADE))
    };
    let hop: Vec<HeaderName> = h
        .keys()
        .filter(|n| is_hop(n) && !kept(n))
        .cloned()
        .collect();
    for name in hop {
        h.remove(name);
    }
    // Only `TE: trailers` may cross (gRPC needs it on HTTP/2).
    if let Some(te) = h.remove(header::TE)
        && te.to_str().is_ok_and(|v| v.contains("trailers"))
    {
        h.insert(header::TE, http::HeaderValue::from_static("trailers"));
    }
}

/// Whether a request asks to switch protocols (WebSocket and friends, HTTP/1.1 only).
pub fn is_upgrade(h: &HeaderMap) -> bool {
    h.contains_key(header::UPGRADE)
        && h.get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// A head as `(name, value)` pairs for the journal (non-UTF-8 values lossily).
/// `http::Version`'s name as its `Debug` prints it (`HTTP/1.1`, `HTTP/2.0`), without the
/// formatting machinery (once per exchange and response).
pub fn version_name(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// `uri` as `Display` writes it (`scheme://authority/path?query`), in one allocation.
pub fn url_text(uri: &http::Uri) -> String {
    let (scheme, authority) = (uri.scheme_str(), uri.authority().map(|a| a.as_str()));
    let (path, query) = (uri.path(), uri.query());
    let len = scheme.map_or(0, |s| s.len() + 3)
        + authority.map_or(0, str::len)
        + path.len()
        + query.map_or(0, |q| q.len() + 1);
    let mut out = String::with_capacity(len);
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    }
    out.push_str(authority.unwrap_or_default());
    out.push_str(path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

pub fn header_list(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    Missing,
    Malformed,
    Rejected(String),
}

/// The proxy user named by `Proxy-Authorization: Basic …`. With `users` configured the
/// credentials must match one of them; without, any name is accepted as a label.
pub fn proxy_user(h: &HeaderMap, users: &[(String, String)]) -> Result<Option<String>, AuthError> {
    let Some(value) = h.get(header::PROXY_AUTHORIZATION) else {
        return if users.is_empty() {
            Ok(None)
        } else {
            Err(AuthError::Missing)
        };
    };
    let (name, password) = decode_basic(value.as_bytes()).ok_or(AuthError::Malformed)?;
    if users.is_empty() {
        return Ok(Some(name));
    }
    let ok = users.iter().any(|(n, p)| {
        constant_time_eq(n.as_bytes(), name.as_bytes())
            & constant_time_eq(p.as_bytes(), password.as_bytes())
    });
    if ok {
        Ok(Some(name))
    } else {
        Err(AuthError::Rejected(name))
    }
}

fn decode_basic(value: &[u8]) -> Option<(String, String)> {
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, b64) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (name, password) = text.split_once(':')?;
    Some((name.to_string(), password.to_string()))
}

/// Comparison whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_text_and_version_name_write_what_display_and_debug_do() {
        for u in [
            "https://api.example.com/v1/chat?alt=sse&k=%20",
            "http://h:8080",
            "http://h/",
            "/only/path?q",
            "*",
            "h.example:443",
        ] {
            let uri: http::Uri = u.parse().unwrap();
            assert_eq!(url_text(&uri), uri.to_string(), "{u}");
        }
        use http::Version as V;
        for v in [V::HTTP_09, V::HTTP_10, V::HTTP_11, V::HTTP_2, V::HTTP_3] {
            assert_eq!(version_name(v), format!("{v:?}"));
        }
    }
    use http::HeaderValue;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn strips_connection_specific_headers_including_named_ones() {
        let mut h = map(&[
            ("connection", "keep-alive, x-trace-hop"),
            ("x-trace-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-authorization", "Basic eDp5"),
            ("te", "trailers, deflate"),
            ("transfer-encoding", "chunked"),
            ("host", "api.example"),
            ("authorization", "Bearer k"),
        ]);
        strip_hop_by_hop(&mut h, false);
        let mut names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(names, ["authorization", "host", "te"]);
        assert_eq!(h["te"], "trailers");
    }

    #[test]
    fn upgrade_handshakes_keep_their_headers() {
        let mut h = map(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "k"),
        ]);
        assert!(is_upgrade(&h));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h["upgrade"], "websocket");
        assert_eq!(h["connection"], "Upgrade");
        assert!(!is_upgrade(&map(&[("upgrade", "websocket")])));
    }

    #[test]
    fn proxy_auth() {
        let users = vec![("agent".to_string(), "pw".to_string())];
        let good = map(&[("proxy-authorization", "Basic YWdlbnQ6cHc=")]); // agent:pw
        let bad = map(&[("proxy-authorization", "Basic YWdlbnQ6bm8=")]); // agent:no
        assert_eq!(proxy_user(&good, &users), Ok(Some("agent".into())));
        assert_eq!(
            proxy_user(&bad, &users),
            Err(AuthError::Rejected("agent".into()))
        );
        assert_eq!(
            proxy_user(&HeaderMap::new(), &users),
            Err(AuthError::Missing)
        );
        assert_eq!(
            proxy_user(&map(&[("proxy-authorization", "Bearer x")]), &users),
            Err(AuthError::Malformed)
        );
        // Without configured users the name is only a label.
        assert_eq!(proxy_user(&bad, &[]), Ok(Some("agent".into())));
        assert_eq!(proxy_user(&HeaderMap::new(), &[]), Ok(None));
    }
}
