//! Journal exchanges (already redacted) and their captured bodies as HAR entries, and tapes
//! written to disk whole (a temporary file renamed into place, so a reader never sees half
//! a tape).

use std::path::Path;

use base64::Engine as _;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

use super::bodies::{Bodies, streamed};
use super::har::{
    Cache, Content, Creator, Entry, Har, Log, NameValue, PostData, Request, Response, TimedEvent,
    Timings,
};
use crate::exchange::{BodyEnd, Exchange, Outcome, Target};

/// A tape with no entries yet.
pub fn empty(comment: Option<String>) -> Har {
    Har {
        log: Log {
            version: "1.2".into(),
            creator: Creator {
                name: "flakestorm".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            pages: vec![],
            entries: vec![],
            comment,
        },
    }
}

/// What a tape says an exchange's target is: the tool's name, the LLM provider,
/// `embeddings:<provider>`, or `other`.
pub fn target_name(t: &Target) -> String {
    match t {
        Target::Llm { provider } => provider.as_str().into(),
        Target::Embeddings { provider } => format!("embeddings:{}", provider.as_str()),
        Target::Tool { name } => name.clone(),
        Target::Other => "other".into(),
    }
}

/// The target a tape's `_target` names: the inverse of [`target_name`], providers read by
/// their serde names (a tool named like a provider reads as that provider).
pub fn target_of(name: &str) -> Target {
    let provider = |s: &str| serde_json::from_value(serde_json::Value::String(s.into())).ok();
    if name == "other" {
        return Target::Other;
    }
    if let Some(rest) = name.strip_prefix("embeddings:") {
        return provider(rest).map_or(Target::Other, |provider| Target::Embeddings { provider });
    }
    match provider(name) {
        Some(provider) => Target::Llm { provider },
        None => Target::Tool { name: name.into() },
    }
}

/// One exchange as a HAR entry; `case` names the case it belongs to.
pub fn entry(ex: &Exchange, bodies: Option<&Bodies>, case: Option<&str>) -> Entry {
    let empty = Bodies::default();
    let b = bodies.unwrap_or(&empty);
    let (response, error) = response(ex, b);
    let total = ex.timings.total_ms.max(0.0);
    let wait = ex
        .timings
        .upstream_headers_ms
        .unwrap_or(total)
        .clamp(0.0, total);
    Entry {
        started_date_time: iso8601(ex.timings.started_at_ms),
        time: total,
        request: request(ex, b),
        response,
        cache: Cache {},
        timings: Timings {
            blocked: -1.0,
            dns: -1.0,
            connect: -1.0,
            send: 0.0,
            wait,
            receive: total - wait,
            ssl: -1.0,
        },
        id: Some(ex.id),
        target: Some(target_name(&ex.target)),
        case: case.map(str::to_string),
        // A fault noted but not applied left the answer as the upstream sent it.
        fault: ex
            .fault
            .as_ref()
            .filter(|f| f.applied)
            .map(|f| format!("{}/{}", f.rule, f.mode)),
        // A replay of this entry carries them to the agent again: its `when` reads them.
        attacks: ex
            .attacks
            .iter()
            .filter(|a| a.applied)
            .map(|a| format!("{}/{}", a.rule, a.mode))
            .collect(),
        mcp: ex.mcp.clone(),
        comment: None,
        error,
    }
}

fn pairs(headers: &[(String, String)]) -> Vec<NameValue> {
    headers
        .iter()
        .map(|(name, value)| NameValue {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// HAR's version names (`HTTP/1.1`, `HTTP/2`) from the journal's (`HTTP/1.1`, `HTTP/2.0`).
fn version(v: &str) -> String {
    match v {
        "HTTP/2.0" => "HTTP/2".into(),
        "HTTP/3.0" => "HTTP/3".into(),
        other => other.into(),
    }
}

fn request(ex: &Exchange, b: &Bodies) -> Request {
    let r = &ex.request;
    let query = r.url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split('#').next().unwrap_or_default();
    let query_string = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            NameValue {
                name: name.into(),
                value: value.into(),
            }
        })
        .collect();
    let post_data = (!b.request.is_empty()).then(|| {
        let (text, encoding) = text(&b.request);
        PostData {
            mime_type: header(&r.headers, "content-type").unwrap_or("").into(),
            params: vec![],
            text,
            encoding,
        }
    });
    Request {
        method: r.method.clone(),
        url: r.url.clone(),
        http_version: version(&r.version),
        // Cookies are secrets: their headers are redacted, and they are not listed.
        cookies: vec![],
        headers: pairs(&r.headers),
        query_string,
        post_data,
        headers_size: -1,
        body_size: b.request.len() as i64,
    }
}

/// A body as HAR text: as is when UTF-8, else base64.
fn text(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.into(), None),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            Some("base64".into()),
        ),
    }
}

fn response(ex: &Exchange, b: &Bodies) -> (Response, Option<String>) {
    let (status, version_, headers, error) = match &ex.outcome {
        Outcome::Response { response, body } => {
            let error = match body {
                BodyEnd::Complete | BodyEnd::Upgraded => None,
                BodyEnd::ClientDisconnected => Some("the client left before the body ended".into()),
                BodyEnd::UpstreamAborted { message } | BodyEnd::ProxyAborted { message } => {
                    Some(message.clone())
                }
            };
            (
                response.status,
                version(&response.version),
                response.headers.clone(),
                error,
            )
        }
        // HAR's convention for a request with no response: status 0.
        Outcome::Error { error, status } => (
            status.unwrap_or(0),
            String::new(),
            vec![],
            Some(format!("{}: {}", error.kind, error.message)),
        ),
    };
    let mime = header(&headers, "content-type").unwrap_or("").to_string();
    let body = b.response_bytes();
    let (text_, encoding) = text(&body);
    let events = match streamed(&mime) {
        Some(_) if encoding.is_none() => b
            .response
            .iter()
            .map(|e| TimedEvent {
                offset_ms: e.at_ms,
                text: String::from_utf8_lossy(&e.data).into_owned(),
            })
            .collect(),
        _ => vec![],
    };
    let response = Response {
        status,
        status_text: http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("")
            .into(),
        http_version: version_,
        cookies: vec![],
        headers: pairs(&headers),
        content: Content {
            size: body.len() as i64,
            mime_type: mime,
            text: (!body.is_empty()).then_some(text_),
            encoding,
            events,
            truncated: b.truncated,
        },
        redirect_url: header(&headers, "location").unwrap_or("").into(),
        headers_size: -1,
        body_size: body.len() as i64,
    };
    (response, error)
}

/// Unix milliseconds as ISO 8601 with milliseconds and `Z` (the epoch's date and time for
/// one out of range, its milliseconds kept).
pub fn iso8601(ms: u64) -> String {
    const ISO: &[BorrowedFormatItem<'_>] =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    let secs = i64::try_from(ms / 1000).unwrap_or(0);
    let t =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    // Below 1000, so always a valid millisecond.
    let t = t.replace_millisecond((ms % 1000) as u16).unwrap_or(t);
    t.format(ISO).unwrap_or_default()
}

/// Writes `har` to `path` whole (`save_bytes`).
pub fn save(har: &Har, path: &Path) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(har).map_err(std::io::Error::other)?;
    save_bytes(path, &text)
}

/// Writes `bytes` to `path` whole and private (`files::write_private`: 0600, renamed into
/// place): a tape holds the agent's traffic.
pub fn save_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::files::write_private(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests_support::exchange;
    use crate::tape::Capture;

    #[test]
    fn times_are_iso_8601_in_utc_with_milliseconds() {
        assert_eq!(iso8601(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso8601(5), "1970-01-01T00:00:00.005Z");
        assert_eq!(iso8601(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso8601(253_402_300_800_042), "1970-01-01T00:00:00.042Z");
    }

    #[test]
    fn an_sse_exchange_keeps_its_events_and_offsets() {
        let ex = exchange(
            Target::Llm {
                provider: crate::exchange::Provider::Openai,
            },
            "https://api.openai.com/v1/chat/completions?x=1",
        )
        .request_headers(&[("content-type", "application/json")])
        .response(200, &[("content-type", "text/event-stream")])
        .timed(1_700_000_000_123, 40.0)
        .build();
        let c = Capture::default();
        c.request(br#"{"stream":true}"#);
        c.response(b"data: {}\n\n", 10.0);
        c.response(b"data: [DONE]\n\n", 30.0);
        let e = entry(&ex, Some(&c.finish("text/event-stream")), Some("case-1"));
        assert_eq!(e.started_date_time, "2023-11-14T22:13:20.123Z");
        assert_eq!(e.target.as_deref(), Some("openai"));
        assert_eq!(e.request.query_string[0].name, "x");
        assert_eq!(e.request.post_data.unwrap().text, r#"{"stream":true}"#);
        let offsets: Vec<f64> = e
            .response
            .content
            .events
            .iter()
            .map(|e| e.offset_ms)
            .collect();
        assert_eq!(offsets, [10.0, 30.0]);
        assert_eq!(
            e.response.content.text.as_deref(),
            Some("data: {}\n\ndata: [DONE]\n\n")
        );
        assert_eq!(
            (e.time, e.timings.wait, e.timings.receive),
            (40.0, 40.0, 0.0)
        );
    }

    #[test]
    fn binary_bodies_are_base64_and_errors_have_status_0() {
        let ex = exchange(Target::Other, "http://h/x")
            .error(
                crate::exchange::ErrorSource::Upstream,
                crate::exchange::ErrorKind::UpstreamConnect,
                None,
            )
            .build();
        let c = Capture::default();
        c.request(&[0xff, 0x00]);
        let e = entry(&ex, Some(&c.finish("")), None);
        let post = e.request.post_data.unwrap();
        assert_eq!(
            (post.text.as_str(), post.encoding.as_deref()),
            ("/wA=", Some("base64"))
        );
        assert_eq!(e.response.status, 0);
        assert!(e.error.unwrap().starts_with("upstream_connect"));
    }

    #[test]
    fn a_target_name_reads_back_as_its_target() {
        use crate::exchange::Provider;
        let providers = [
            Provider::Openai,
            Provider::Anthropic,
            Provider::Gemini,
            Provider::Ollama,
        ];
        let mut all = vec![
            Target::Other,
            Target::Tool {
                name: "web_search".into(),
            },
        ];
        for provider in providers {
            all.push(Target::Llm { provider });
            all.push(Target::Embeddings { provider });
        }
        for t in all {
            assert_eq!(target_of(&target_name(&t)), t);
        }
        assert_eq!(target_of("embeddings:nope"), Target::Other);
    }
}
