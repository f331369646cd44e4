//! Redaction at the journal's boundary (design.md rule 9): secret header and query values,
//! and each cookie, replaced wherever they appear, in the exchange and in its kept bodies
//! (fields named like them in JSON, form-encoded and SSE `data:` JSON bodies).

use crate::exchange::{Exchange, Outcome};
use crate::tape::Bodies;

/// Written in place of a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Header names whose values are always secret.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "set-cookie",
    // An MCP session's handle: whoever holds it speaks in that session.
    "mcp-session-id",
];

/// Query parameters whose values are always secret (`?key=` is Gemini's API key;
/// `?session_id=` the older MCP transport's session handle, as `Mcp-Session-Id` is the
/// current one's).
const SECRET_QUERY: &[&str] = &[
    "key",
    "api_key",
    "api-key",
    "access_token",
    "token",
    "session_id",
];

/// JSON body fields whose string values are always secret (besides the names above).
const SECRET_FIELDS: &[&str] = &[
    "password",
    "secret",
    "client_secret",
    "apikey",
    "api_key",
    "access_token",
    "refresh_token",
];

/// Secret values shorter than this are not searched for in bodies (they would match
/// ordinary text).
const MIN_SECRET_LEN: usize = 6;

/// What the journal redacts, built from the defaults plus configured extras.
#[derive(Debug, Clone)]
pub struct Redactor {
    headers: Names,
    query: Names,
}

/// Lowercase names, looked up without regard to case. A dozen short names: a scan that
/// mostly stops at the length beats lowercasing and hashing every header of every exchange.
#[derive(Debug, Clone)]
struct Names(Vec<String>);

impl Names {
    fn new<'a>(names: impl Iterator<Item = &'a str>) -> Self {
        let mut names: Vec<String> = names.map(str::to_ascii_lowercase).collect();
        names.sort_unstable();
        names.dedup();
        Names(names)
    }

    fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new(&[], &[])
    }
}

impl Redactor {
    pub fn new(extra_headers: &[String], extra_query: &[String]) -> Self {
        let names = |base: &[&'static str], extra: &[String]| {
            Names::new(base.iter().copied().chain(extra.iter().map(String::as_str)))
        };
        Redactor {
            headers: names(SECRET_HEADERS, extra_headers),
            query: names(SECRET_QUERY, extra_query),
        }
    }

    fn headers(&self, headers: &mut [(String, String)]) {
        for (name, value) in headers.iter_mut() {
            if self.headers.contains(name) {
                *value = REDACTED.to_string();
            }
        }
    }

    /// Replaces the values of secret query parameters in a URL.
    pub fn url(&self, url: &str) -> String {
        let Some((base, query)) = url.split_once('?') else {
            return url.to_string();
        };
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        let parts: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if self.query.contains(k) => {
                    format!("{k}={REDACTED}")
                }
                _ => pair.to_string(),
            })
            .collect();
        let mut out = format!("{base}?{}", parts.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
        out
    }

    /// The secret values `ex` carries before it is redacted: secret header values (and the
    /// credential after an auth scheme such as `Bearer`) and secret query values.
    pub fn secrets(&self, ex: &Exchange) -> Vec<String> {
        let mut out = vec![];
        let mut headers: Vec<&(String, String)> = ex.request.headers.iter().collect();
        if let Outcome::Response { response, .. } = &ex.outcome {
            headers.extend(response.headers.iter());
        }
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if self.headers.contains(&name) {
                out.push(value.trim().to_string());
                // `Bearer <token>`; a cookie's space is between its pairs (below).
                if let Some((_, cred)) = value.trim().split_once(' ')
                    && !name.ends_with("cookie")
                {
                    out.push(cred.trim().to_string());
                }
            }
            // Each cookie may turn up alone in a body (an echo, a debug dump): every
            // `name=value` pair and its value are secrets of their own.
            let pairs: Vec<&str> = match name.as_str() {
                "cookie" => value.split(';').collect(),
                // The attributes after the first `;` (Path, HttpOnly, ...) are not secret.
                "set-cookie" => value.split(';').take(1).collect(),
                _ => vec![],
            };
            for pair in pairs {
                let pair = pair.trim();
                out.push(pair.to_string());
                if let Some((_, v)) = pair.split_once('=') {
                    out.push(v.trim().trim_matches('"').to_string());
                }
            }
        }
        if let Some((_, query)) = ex.request.url.split_once('?') {
            let query = query.split('#').next().unwrap_or_default();
            for pair in query.split('&') {
                if let Some((k, v)) = pair.split_once('=')
                    && self.query.contains(k)
                {
                    out.push(v.to_string());
                }
            }
        }
        out.retain(|s| s.len() >= MIN_SECRET_LEN && s != REDACTED);
        // Longest first, so a value containing another is replaced whole.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out.dedup();
        out
    }

    /// Redacts a body: every occurrence of `secrets`, then the values of fields named like a
    /// secret header, query parameter or credential: string fields of a JSON body, pairs of
    /// an `application/x-www-form-urlencoded` body, and string fields of the JSON payload of
    /// SSE `data:` lines. The body's kind is told from its bytes, not its content type, so a
    /// replay's request key (which has no headers to hand) redacts the same way.
    pub fn body(&self, body: &[u8], secrets: &[String]) -> Vec<u8> {
        let mut out = body.to_vec();
        for s in secrets {
            out = replace_all(&out, s.as_bytes(), REDACTED.as_bytes());
        }
        if let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(&out) {
            if self.json_fields(&mut json) {
                return serde_json::to_vec(&json).unwrap_or(out);
            }
            return out;
        }
        if let Some(form) = self.form(&out) {
            return form;
        }
        if let Some(sse) = self.sse(&out) {
            return sse;
        }
        out
    }

    /// Whether a body field named `name` holds a secret. A bare `key` is Gemini's API key
    /// in a query string, but in a body it is mostly data (`{"key": "AAPL"}`): redacting it
    /// would lose the value and make different requests one tape key. Its value is still
    /// redacted wherever the query's secret value appears.
    fn secret_name(&self, name: &str) -> bool {
        self.headers.contains(name)
            || (self.query.contains(name) && !name.eq_ignore_ascii_case("key"))
            || SECRET_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name))
    }

    /// A form body (`a=1&password=x`) with its secret-named values replaced; `None` when the
    /// body is not form-shaped or has no secret-named pair.
    fn form(&self, body: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(body)
            .ok()?
            .trim_end_matches(['\r', '\n']);
        // Form encoding has no spaces or controls; anything else is prose or binary.
        let form_byte = |b: u8| b.is_ascii_graphic();
        if text.is_empty() || !text.bytes().all(form_byte) || !text.contains('=') {
            return None;
        }
        let key_ok = |k: &str| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.%+[]*~".contains(&b))
        };
        let mut changed = false;
        let mut parts = vec![];
        for pair in text.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if !key_ok(k) {
                return None;
            }
            if self.secret_name(&form_decode(k)) && v != REDACTED {
                parts.push(format!("{k}={REDACTED}"));
                changed = true;
            } else {
                parts.push(pair.to_string());
            }
        }
        changed.then(|| parts.join("&").into_bytes())
    }

    /// An SSE body (or chunk of one) whose `data:` lines carrying JSON have their
    /// secret-named fields replaced; `None` when no line changed.
    fn sse(&self, body: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(body).ok()?;
        let mut changed = false;
        let lines: Vec<String> = text
            .split('\n')
            .map(|line| {
                let (line, cr) = match line.strip_suffix('\r') {
                    Some(l) => (l, "\r"),
                    None => (line, ""),
                };
                let Some(payload) = line.strip_prefix("data:") else {
                    return format!("{line}{cr}");
                };
                let space = if payload.starts_with(' ') { " " } else { "" };
                let Ok(mut json) = serde_json::from_str::<serde_json::Value>(payload) else {
                    return format!("{line}{cr}");
                };
                if !self.json_fields(&mut json) {
                    return format!("{line}{cr}");
                }
                changed = true;
                let json = serde_json::to_string(&json).unwrap_or_default();
                format!("data:{space}{json}{cr}")
            })
            .collect();
        changed.then(|| lines.join("\n").into_bytes())
    }

    /// Redacts an exchange's captured bodies with the secrets of its raw (unredacted) record.
    pub fn bodies(&self, raw: &Exchange, bodies: &mut Bodies) {
        let secrets = self.secrets(raw);
        bodies.request = self.body(&bodies.request, &secrets).into();
        for e in &mut bodies.response {
            e.data = self.body(&e.data, &secrets).into();
        }
    }

    /// Replaces secret-named string fields anywhere in `v`; whether it changed anything.
    fn json_fields(&self, v: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match v {
            Value::Object(map) => {
                let mut changed = false;
                for (k, val) in map.iter_mut() {
                    if self.secret_name(k) && val.is_string() && val.as_str() != Some(REDACTED) {
                        *val = Value::String(REDACTED.into());
                        changed = true;
                    } else {
                        changed |= self.json_fields(val);
                    }
                }
                changed
            }
            Value::Array(list) => list
                .iter_mut()
                .fold(false, |c, item| self.json_fields(item) | c),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
        }
    }

    pub fn exchange(&self, ex: &mut Exchange) {
        ex.request.url = self.url(&ex.request.url);
        self.headers(&mut ex.request.headers);
        if let Outcome::Response { response, .. } = &mut ex.outcome {
            self.headers(&mut response.headers);
        }
    }
}

/// A form key (no `&` or `=` in it) decoded: `+` is a space, `%XX` a byte, undecodable
/// escapes are kept as they are, and bytes that are not UTF-8 become U+FFFD.
fn form_decode(k: &str) -> String {
    form_urlencoded::parse(k.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// Every occurrence of `needle` in `hay` replaced by `with`.
fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() || memchr::memmem::find(hay, needle).is_none() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = memchr::memmem::find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_mcp_transports_session_handle_is_hidden_like_a_key() {
        let r = Redactor::new(&[], &[]);
        assert_eq!(
            r.url("https://mcp.example/messages?session_id=4f9c2a&x=1"),
            format!("https://mcp.example/messages?session_id={REDACTED}&x=1")
        );
    }

    #[test]
    fn form_keys_are_decoded_as_forms_are() {
        assert_eq!(form_decode("client%5Fsecret"), "client_secret");
        assert_eq!(form_decode("a+b%2"), "a b%2");
        assert_eq!(form_decode("%zz%C3%A9%FF"), "%zz\u{e9}\u{fffd}");
    }
}
