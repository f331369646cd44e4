//! An LLM call's prompt and answer as the OpenTelemetry GenAI conventions' messages
//! (`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`): each
//! message a role and its parts (`text`, `tool_call`, `tool_call_response`), an answer's with
//! its finish reason. Read from the request and answer documents by their shape, so every
//! provider's API (Chat Completions, Responses, Anthropic Messages, Gemini, Ollama chat and
//! generate) is read by one reader; a stream's deltas are put together. Parts of other
//! kinds (images, audio) are left out. Nothing here fails: what cannot be read is absent.
//! `bounded` keeps the conventions' JSON under a size, whole.

mod input;
mod output;

pub use input::{input, system};
pub use output::output;

use serde_json::{Value, json};

/// A `text` part.
fn text(content: &str) -> Value {
    json!({"type": "text", "content": content})
}

/// A `tool_call` part: `arguments` as sent (an object, or the JSON text a provider sends).
fn tool_call(id: Option<&Value>, name: Option<&Value>, arguments: Option<&Value>) -> Value {
    let mut part = json!({"type": "tool_call"});
    for (key, v) in [("id", id), ("name", name), ("arguments", arguments)] {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            part[key] = v.clone();
        }
    }
    part
}

/// A `tool_call_response` part.
fn tool_response(id: Option<&Value>, response: Option<&Value>) -> Value {
    let mut part = json!({"type": "tool_call_response"});
    if let Some(id) = id.filter(|v| !v.is_null()) {
        part["id"] = id.clone();
    }
    part["response"] = response.cloned().unwrap_or(Value::Null);
    part
}

/// The conventions' role for a provider's (Gemini's `model` is the assistant).
fn role(r: Option<&str>) -> &str {
    match r {
        Some("model") => "assistant",
        Some(r) => r,
        None => "user",
    }
}

/// `list` as JSON text of at most `max` bytes, whole: each text part cut to half of it, then
/// the oldest entries left out (the latest turns say most about what the call did). `None`
/// when the list is empty or not even its latest entry fits.
pub fn bounded(list: &[Value], max: usize) -> Option<String> {
    if list.is_empty() {
        return None;
    }
    // Each entry is written once; the newest that fit are kept (a long history costs
    // its length, not its length times its turns).
    let mut kept: Vec<String> = vec![];
    let mut len = 2; // the brackets
    for m in list.iter().rev() {
        let mut m = m.clone();
        cut_texts(&mut m, max / 2);
        let s = serde_json::to_string(&m).unwrap_or_default();
        let more = s.len() + usize::from(!kept.is_empty());
        if len + more > max {
            break;
        }
        len += more;
        kept.push(s);
    }
    if kept.is_empty() {
        return None;
    }
    kept.reverse();
    Some(format!("[{}]", kept.join(",")))
}

/// Cuts every `content` string below `v` to `max` bytes (at a character boundary).
fn cut_texts(v: &mut Value, max: usize) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if let Value::String(s) = v {
                    if k == "content" && s.len() > max {
                        let mut end = max;
                        while !s.is_char_boundary(end) {
                            end -= 1;
                        }
                        s.truncate(end);
                        s.push('…');
                    }
                } else {
                    cut_texts(v, max);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| cut_texts(i, max)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
