//! A whole response body under a data fault: what it is (JSON or text, by its content type,
//! else by its bytes; anything else is not planted in, saying why), the edit made, and the
//! size of the new body, known before its bytes are built (the proxy checks it against
//! `proxy.max_rewrite_bytes` first).

use bytes::Bytes;
use serde_json::Value;

use super::canary::Canaries;
use super::json::{self, Record};
use super::text::{self, Replacement};
use super::{Mode, Plan, PlantError};
use crate::exchange::Planted;

/// A body edited: its new document, not yet written out, and the values planted in it.
#[derive(Debug)]
pub struct Edited {
    doc: Doc,
    pub planted: Vec<Planted>,
}

#[derive(Debug)]
enum Doc {
    Json(Value),
    Text(String, Vec<Replacement>),
    Empty,
}

impl Edited {
    /// The new body's length in bytes.
    pub fn len(&self) -> usize {
        match &self.doc {
            Doc::Json(v) => {
                let mut count = Count(0);
                // Writing to a counter fails only if serialising fails, which a `Value` does not.
                let _ = serde_json::to_writer(&mut count, v);
                count.0
            }
            Doc::Text(s, reps) => text::len_after(s, reps),
            Doc::Empty => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The new body.
    pub fn into_bytes(self) -> Bytes {
        match self.doc {
            Doc::Json(v) => Bytes::from(v.to_string()),
            Doc::Text(s, reps) => Bytes::from(text::apply(&s, &reps)),
            Doc::Empty => Bytes::new(),
        }
    }
}

/// Counts what is written.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The media type of a `Content-Type`, lowercase, without parameters.
fn mime(content_type: &str) -> String {
    let m = content_type.split(';').next().unwrap_or_default();
    m.trim().to_ascii_lowercase()
}

/// Whether a body of `content_type` may be planted in, decided before it is held: JSON,
/// text, or no type (its bytes decide); the error says why not (a stream, a binary type).
pub fn plantable(content_type: &str) -> Result<(), PlantError> {
    let m = mime(content_type);
    if m.contains("event-stream") || m.contains("ndjson") || m.contains("json-seq") {
        return Err(format!("the body is {m}, a stream, not one JSON or text document").into());
    }
    if m.is_empty() || m.contains("json") || m.starts_with("text/") || m.contains("xml") {
        Ok(())
    } else {
        Err(format!("the body is {m}, neither JSON nor text").into())
    }
}

/// `plan` made on `body` of `content_type`; the error says why it was not.
pub fn edit_body(plan: &Plan, body: &[u8], content_type: &str) -> Result<Edited, PlantError> {
    plantable(content_type)?;
    Ok(edit(plan, body, content_type)?)
}

fn edit(plan: &Plan, body: &[u8], content_type: &str) -> Result<Edited, String> {
    if body.trim_ascii().is_empty() {
        return Err(super::nothing_found(&plan.mode, "body"));
    }
    let m = mime(content_type);
    let sniffed =
        body.trim_ascii_start().starts_with(b"{") || body.trim_ascii_start().starts_with(b"[");
    if m.contains("json") || sniffed {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => return json_body(plan, v),
            Err(e) if m.contains("json") => return Err(format!("the body is not valid JSON: {e}")),
            Err(_) => {}
        }
    }
    let Ok(s) = std::str::from_utf8(body) else {
        return Err(format!(
            "the body is {}, and its bytes are not UTF-8 text",
            if m.is_empty() { "untyped" } else { &m }
        ));
    };
    text_body(plan, s)
}

fn json_body(plan: &Plan, mut v: Value) -> Result<Edited, String> {
    let mut planted = vec![];
    let mut rec = Record {
        root: "$",
        out: &mut planted,
    };
    match &plan.mode {
        Mode::Empty => {
            let doc = Doc::Json(json::empty(&v)?);
            return Ok(Edited { doc, planted });
        }
        Mode::Corrupt { fields } => {
            let mut numbers = vec![];
            json::numbers(&v, &mut numbers);
            let mut c = Canaries::new(plan.draw, numbers);
            json::corrupt(&mut v, fields, &mut c, &mut rec);
        }
        Mode::Stale { days } => json::stale(&mut v, *days, &mut rec),
    }
    if planted.is_empty() {
        return Err(super::nothing_found(&plan.mode, "body"));
    }
    Ok(Edited {
        doc: Doc::Json(v),
        planted,
    })
}

fn text_body(plan: &Plan, s: &str) -> Result<Edited, String> {
    let mut reps = match &plan.mode {
        Mode::Empty => {
            return Ok(Edited {
                doc: Doc::Empty,
                planted: vec![],
            });
        }
        Mode::Corrupt { fields } if !fields.is_empty() => {
            return Err("the body is text: `fields:` paths name values of JSON bodies".into());
        }
        Mode::Corrupt { .. } => text::corrupt(s, &mut Canaries::new(plan.draw, text::values(s))),
        Mode::Stale { days } => text::stale(s, *days),
    };
    if reps.is_empty() {
        return Err(super::nothing_found(&plan.mode, "body"));
    }
    reps.truncate(super::MAX_PLANTED);
    let planted = reps
        .iter()
        .map(|r| Planted {
            path: super::TEXT.into(),
            original: Some(s[r.start..r.end].to_string()),
            planted: r.new.clone(),
        })
        .collect();
    Ok(Edited {
        doc: Doc::Text(s.to_string(), reps),
        planted,
    })
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
