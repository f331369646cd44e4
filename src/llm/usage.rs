//! The tokens an LLM answer reported, read from the bytes the agent received: a whole JSON
//! body (or Gemini's JSON array of chunks), an SSE stream or NDJSON, in any provider's
//! shape (each provider file's `Wire::usage` says where its figures sit). Streams report
//! usage late (OpenAI's last chunk, Anthropic's `message_delta`, Gemini's last chunk,
//! Ollama's `done` line) and cumulatively, so a later figure replaces an earlier one.
//! An answer that carried none leaves its counts unknown, never 0.

use memchr::memmem::Finder;
use serde_json::Value;
use std::sync::LazyLock;

use super::frame::Event;
use super::{all, wire};
use crate::exchange::Usage;

/// Bytes every usage figure's key contains (`usage`, `usageMetadata`, `eval_count`): a
/// stream event without one is not parsed (this runs on every LLM answer).
static MARKERS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
    [
        Finder::new(b"usage"),
        Finder::new(b"Usage"),
        Finder::new(b"eval_count"),
    ]
});

fn marked(bytes: &[u8]) -> bool {
    MARKERS.iter().any(|m| m.find(bytes).is_some())
}

/// What `body` (an answer as the agent received it) reported; unknown counts when nothing.
pub fn usage(body: &[u8]) -> Usage {
    let mut found = Usage::default();
    if !marked(body) {
        return found;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(chunks)) => chunks.iter().for_each(|v| read(v, &mut found)),
        Ok(v) => read(&v, &mut found),
        Err(_) => each_marked_event(body, &mut |v| read(v, &mut found)),
    }
    found
}

/// Calls `f` on the JSON of each stream event that may carry usage, in order.
fn each_marked_event(body: &[u8], f: &mut dyn FnMut(&Value)) {
    let (framing, frames) = super::frame::frames(body);
    for frame in frames.iter().filter(|f| marked(f)) {
        if let Some(v) = Event::parse(frame, framing).json {
            f(&v);
        }
    }
}

/// Every provider's reader: the body's own shape decides (an `llm:` entry's declared
/// provider may serve another's format); shapes two providers share mean the same.
fn read(v: &Value, into: &mut Usage) {
    for p in all() {
        wire(p).usage(v, into);
    }
}

/// A token count at `key` of `v`, when it is a non-negative integer.
pub(super) fn count(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Sets what is known: a figure present replaces the earlier one (streams are cumulative).
pub(super) fn note(
    into: &mut Usage,
    input: Option<u64>,
    output: Option<u64>,
    model: Option<&Value>,
) {
    if input.is_none() && output.is_none() {
        return;
    }
    if input.is_some() {
        into.input_tokens = input;
    }
    if output.is_some() {
        into.output_tokens = output;
    }
    if let Some(m) = model.and_then(Value::as_str).filter(|m| !m.is_empty()) {
        // A model name is a label of metrics and reports: bounded.
        into.model = Some(crate::text::cut(m, 100));
    }
}

/// The sum of the counts present, `None` when none is.
pub(super) fn sum(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().flatten().copied().reduce(u64::saturating_add)
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
