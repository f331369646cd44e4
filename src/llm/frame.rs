//! Framing of streamed LLM bodies: SSE events (terminated by a blank line, `\n` or
//! `\r\n`; Gemini really sends `\r\n\r\n`) and NDJSON lines (Ollama). Frames are split
//! incrementally as chunks arrive and re-encoded in the style they came in. The one framer:
//! the chaos rewriter and the tool-call reader both use it.

use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use memchr::memmem::Finder;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Sse,
    Ndjson,
}

/// Splits a byte stream into whole frames (each with its terminator).
#[derive(Debug)]
pub struct Splitter {
    framing: Framing,
    buf: BytesMut,
    /// How much of `buf` is known to hold no terminator: a frame arriving in small chunks
    /// is scanned once, not once per chunk (quadratic in a hostile upstream's hands).
    scanned: usize,
}

impl Splitter {
    pub fn new(framing: Framing) -> Self {
        Splitter {
            framing,
            buf: BytesMut::new(),
            scanned: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        self.buf.extend_from_slice(chunk);
        let mut frames = vec![];
        while let Some(end) = self.frame_end() {
            frames.push(self.buf.split_to(end).freeze());
            self.scanned = 0;
        }
        // A terminator may straddle chunks: rescan its longest prefix next time.
        self.scanned = self.buf.len().saturating_sub(3);
        frames
    }

    /// How many bytes wait for their frame's end.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Bytes after the last complete frame (an unterminated tail).
    pub fn rest(&mut self) -> Bytes {
        self.scanned = 0;
        std::mem::take(&mut self.buf).freeze()
    }

    fn frame_end(&self) -> Option<usize> {
        let from = self.scanned.min(self.buf.len());
        let b = &self.buf[from..];
        let end = match self.framing {
            Framing::Ndjson => b.iter().position(|&c| c == b'\n').map(|i| i + 1),
            Framing::Sse => {
                let lf = LF.find(b).map(|i| i + 2);
                let crlf = CRLF.find(b).map(|i| i + 4);
                match (lf, crlf) {
                    (Some(a), Some(c)) => Some(a.min(c)),
                    (a, c) => a.or(c),
                }
            }
        };
        end.map(|e| e + from)
    }
}

/// The two ends of an SSE event, each searched for with a searcher built once.
static LF: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\n\n"));
static CRLF: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\r\n\r\n"));

/// One SSE event or NDJSON line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    /// The SSE `id` (the daemon's event numbers); read, not written back by `encode`.
    pub id: Option<String>,
    /// The `data` (SSE: `data:` lines joined by `\n`; NDJSON: the line).
    pub data: String,
    pub json: Option<serde_json::Value>,
    crlf: bool,
    framing: Framing,
}

impl Event {
    pub fn parse(frame: &[u8], framing: Framing) -> Event {
        let text = String::from_utf8_lossy(frame);
        let crlf = text.contains("\r\n");
        let (name, id, data) = match framing {
            Framing::Ndjson => (None, None, text.trim_end_matches(['\r', '\n']).to_string()),
            Framing::Sse => {
                let (mut name, mut id) = (None, None);
                let mut data: Vec<&str> = vec![];
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v));
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.strip_prefix(' ').unwrap_or(v).to_string());
                    }
                }
                (name, id, data.join("\n"))
            }
        };
        // Only an object is a provider event: rewrites index into it.
        let json = serde_json::from_str(&data)
            .ok()
            .filter(serde_json::Value::is_object);
        Event {
            name,
            id,
            data,
            json,
            crlf,
            framing,
        }
    }

    /// A new event in the same style (framing, line endings) as `self`.
    pub fn sibling(&self, name: Option<&str>, json: serde_json::Value) -> Event {
        Event {
            name: name.map(str::to_string),
            id: None,
            data: json.to_string(),
            json: Some(json),
            crlf: self.crlf,
            framing: self.framing,
        }
    }

    /// A raw `data` payload (e.g. `[DONE]`, or deliberately invalid JSON).
    pub fn raw_sibling(&self, name: Option<&str>, data: &str) -> Event {
        Event {
            name: name.map(str::to_string),
            id: None,
            data: data.to_string(),
            json: None,
            crlf: self.crlf,
            framing: self.framing,
        }
    }

    /// Bytes for this event; the JSON, if any, is what gets written.
    pub fn encode(&self) -> Bytes {
        let data = self
            .json
            .as_ref()
            .map_or_else(|| self.data.clone(), |j| j.to_string());
        let nl = if self.crlf { "\r\n" } else { "\n" };
        match self.framing {
            Framing::Ndjson => Bytes::from(format!("{data}\n")),
            Framing::Sse => {
                let mut out = String::new();
                if let Some(n) = &self.name {
                    out.push_str(&format!("event: {n}{nl}"));
                }
                out.push_str(&format!("data: {data}{nl}{nl}"));
                Bytes::from(out)
            }
        }
    }
}

/// Every event of a whole body that is SSE or NDJSON, not knowing which (SSE when a line
/// starts with `data:`), split by the same `Splitter` as a live stream, an unterminated
/// last event included.
pub fn events(body: &[u8]) -> impl Iterator<Item = Event> {
    let (framing, frames) = frames(body);
    frames
        .into_iter()
        .filter(|f| !f.is_empty())
        .map(move |f| Event::parse(&f, framing))
}

/// A whole SSE or NDJSON body's framing (SSE when a line starts with `data:`) and its raw
/// frames, split as a live stream is (`events` parses them).
pub fn frames(body: &[u8]) -> (Framing, Vec<Bytes>) {
    let sse = body.starts_with(b"data:") || memchr::memmem::find(body, b"\ndata:").is_some();
    let framing = if sse { Framing::Sse } else { Framing::Ndjson };
    let mut s = Splitter::new(framing);
    let mut frames = s.push(body);
    frames.push(s.rest());
    (framing, frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sse_across_chunks_with_either_line_ending() {
        let mut s = Splitter::new(Framing::Sse);
        assert!(s.push(b"data: {\"a\":1}\n").is_empty());
        let f = s.push(b"\ndata: {\"b\"");
        assert_eq!(f, vec![Bytes::from_static(b"data: {\"a\":1}\n\n")]);
        let f = s.push(b":2}\r\n\r\nevent: x\ndata: y\n\n");
        assert_eq!(f.len(), 2);
        let e = Event::parse(&f[0], Framing::Sse);
        assert_eq!(e.json, Some(serde_json::json!({"b": 2})));
        assert_eq!(
            e.encode(),
            Bytes::from_static(b"data: {\"b\":2}\r\n\r\n"),
            "keeps CRLF style"
        );
        let e = Event::parse(&f[1], Framing::Sse);
        assert_eq!((e.name.as_deref(), e.data.as_str()), (Some("x"), "y"));
    }

    #[test]
    fn fields_are_read_with_or_without_the_space_after_the_colon() {
        let e = Event::parse(b"id:7\nevent:case\ndata:x\ndata: y\n\n", Framing::Sse);
        let fields = (e.id.as_deref(), e.name.as_deref(), e.data.as_str());
        assert_eq!(fields, (Some("7"), Some("case"), "x\ny"));
        let e = Event::parse(b"id: 8\r\ndata:  z\r\n\r\n", Framing::Sse);
        assert_eq!((e.id.as_deref(), e.data.as_str()), (Some("8"), " z"));
        assert_eq!(e.encode(), Bytes::from_static(b"data:  z\r\n\r\n"));
    }

    #[test]
    fn a_whole_body_is_split_as_sse_or_ndjson() {
        let names = |body: &[u8]| -> Vec<serde_json::Value> {
            events(body).filter_map(|e| e.json).collect()
        };
        let sse = b"event: a\ndata: {\"x\":1}\n\ndata: {\"x\":\n\ndata: {\"x\":2}";
        assert_eq!(
            names(sse),
            [serde_json::json!({"x": 1}), serde_json::json!({"x": 2})]
        );
        let nd = b"{\"y\":1}\n\n{\"y\":2}\r\n{\"y\":3}";
        assert_eq!(names(nd).len(), 3);
    }

    #[test]
    fn splits_ndjson_lines() {
        let mut s = Splitter::new(Framing::Ndjson);
        let f = s.push(b"{\"done\":false}\n{\"done\":tr");
        assert_eq!(f.len(), 1);
        assert_eq!(s.push(b"ue}\n").len(), 1);
        assert!(s.rest().is_empty());
    }
}
