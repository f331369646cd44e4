//! The bodies of one exchange as a tape keeps them: the request body, and the response
//! body as events (each SSE event or NDJSON line, or the whole body when it is not a
//! stream) with the time each arrived, so a replay can stream at the recorded pace.
//! `Capture` collects them while the proxy streams the exchange; the journal redacts them
//! (`journal::Redactor::bodies`) before it keeps them.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// The most of one body a tape keeps; past it the body is cut and marked `truncated`.
pub const MAX_BODY: usize = 16 << 20;

/// One piece of a response body and when its last byte reached the proxy, in
/// milliseconds after the request arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at_ms: f64,
    pub data: Bytes,
}

/// An exchange's bodies, as recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bodies {
    pub request: Bytes,
    pub response: Vec<Event>,
    /// A body went over `MAX_BODY` and was cut.
    pub truncated: bool,
}

impl Bodies {
    /// The whole response body.
    pub fn response_bytes(&self) -> Vec<u8> {
        self.response
            .iter()
            .flat_map(|e| e.data.iter().copied())
            .collect()
    }
}

/// Bodies being collected as the exchange streams (shared by the request tee and the
/// response observer).
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Raw>>);

#[derive(Debug, Default)]
struct Raw {
    request: Vec<u8>,
    /// Response chunks: the body so far and, per chunk, where it ended and when.
    response: Vec<u8>,
    marks: Vec<(usize, f64)>,
    truncated: bool,
}

impl Capture {
    fn lock(&self) -> std::sync::MutexGuard<'_, Raw> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn request(&self, data: &[u8]) {
        let mut raw = self.lock();
        let room = MAX_BODY.saturating_sub(raw.request.len());
        raw.truncated |= data.len() > room;
        raw.request.extend_from_slice(&data[..data.len().min(room)]);
    }

    pub fn response(&self, data: &[u8], at_ms: f64) {
        let mut raw = self.lock();
        let room = MAX_BODY.saturating_sub(raw.response.len());
        raw.truncated |= data.len() > room;
        raw.response
            .extend_from_slice(&data[..data.len().min(room)]);
        let end = raw.response.len();
        raw.marks.push((end, at_ms));
    }

    /// The bodies, the response cut into events by its content type.
    pub fn finish(&self, content_type: &str) -> Bodies {
        let mut raw = self.lock();
        let response = std::mem::take(&mut raw.response);
        let events = split(&response, content_type)
            .into_iter()
            .map(|(start, end)| Event {
                at_ms: arrival(&raw.marks, end),
                data: Bytes::copy_from_slice(&response[start..end]),
            })
            .collect();
        Bodies {
            request: Bytes::from(std::mem::take(&mut raw.request)),
            response: events,
            truncated: raw.truncated,
        }
    }
}

/// When the byte before `end` arrived: the time of the first chunk ending at or after it.
fn arrival(marks: &[(usize, f64)], end: usize) -> f64 {
    marks
        .iter()
        .find(|(e, _)| *e >= end)
        .or(marks.last())
        .map_or(0.0, |(_, t)| *t)
}

/// Whether a content type is a stream of events: SSE or NDJSON (JSON lines).
pub fn streamed(content_type: &str) -> Option<&'static str> {
    let ct = content_type.to_ascii_lowercase();
    if ct.starts_with("text/event-stream") {
        Some("\n\n")
    } else if ct.starts_with("application/x-ndjson")
        || ct.starts_with("application/jsonl")
        || ct.starts_with("application/json-seq")
    {
        Some("\n")
    } else {
        None
    }
}

/// Byte ranges of a body's events: each SSE event with its blank line, each NDJSON line
/// with its newline, a trailing partial event as one; a body that is not a stream is one.
pub fn split(body: &[u8], content_type: &str) -> Vec<(usize, usize)> {
    if body.is_empty() {
        return vec![];
    }
    let Some(sep) = streamed(content_type) else {
        return vec![(0, body.len())];
    };
    // SSE events may end with CRLF CRLF as well.
    let seps: &[&[u8]] = match sep {
        "\n\n" => &[b"\r\n\r\n", b"\n\n"],
        _ => &[b"\n"],
    };
    let mut out = vec![];
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        match seps.iter().find(|s| body[i..].starts_with(s)) {
            Some(s) => {
                i += s.len();
                out.push((start, i));
                start = i;
            }
            None => i += 1,
        }
    }
    if start < body.len() {
        out.push((start, body.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_is_cut_into_events_timed_by_the_chunk_that_completed_them() {
        let c = Capture::default();
        c.request(b"{\"q\":1}");
        c.response(b"data: a\n\nda", 5.0);
        c.response(b"ta: b\n\n", 9.0);
        c.response(b"data: [DONE]", 12.0);
        let b = c.finish("text/event-stream; charset=utf-8");
        let got: Vec<(&[u8], f64)> = b.response.iter().map(|e| (&e.data[..], e.at_ms)).collect();
        assert_eq!(
            got,
            [
                (&b"data: a\n\n"[..], 5.0),
                (&b"data: b\n\n"[..], 9.0),
                (&b"data: [DONE]"[..], 12.0)
            ]
        );
        assert_eq!(&b.request[..], b"{\"q\":1}");
        assert_eq!(b.response_bytes(), b"data: a\n\ndata: b\n\ndata: [DONE]");
    }

    #[test]
    fn ndjson_by_line_and_json_whole() {
        assert_eq!(split(b"{}\n{}\n", "application/x-ndjson"), [(0, 3), (3, 6)]);
        assert_eq!(split(b"{}\n{}\n", "application/json"), [(0, 6)]);
        assert!(split(b"", "application/json").is_empty());
    }

    #[test]
    fn bodies_past_the_cap_are_cut_and_marked() {
        let c = Capture::default();
        c.request(&vec![b'x'; MAX_BODY + 3]);
        let b = c.finish("");
        assert!(b.truncated);
        assert_eq!(b.request.len(), MAX_BODY);
    }
}
