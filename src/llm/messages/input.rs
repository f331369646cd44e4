//! A request's system instructions and input messages, by its shape: `messages` (Chat
//! Completions, Anthropic, Ollama chat), `contents` (Gemini), `input` (Responses), `prompt`
//! (completions, Ollama generate).

use serde_json::Value;

use super::{role, text, tool_call, tool_response};

/// The system instructions as parts: Anthropic's and Ollama's `system`, Gemini's
/// `systemInstruction`, the Responses API's `instructions`. (Chat Completions puts them in
/// its messages, as a `system` or `developer` turn: they stay there.)
pub fn system(request: &Value) -> Vec<Value> {
    let found = [
        "system",
        "systemInstruction",
        "system_instruction",
        "instructions",
    ]
    .iter()
    .find_map(|k| request.get(*k));
    match found {
        Some(Value::String(s)) => vec![text(s)],
        Some(Value::Array(blocks)) => blocks.iter().flat_map(parts).collect(),
        Some(v @ Value::Object(_)) => v.get("parts").map(parts).unwrap_or_else(|| parts(v)),
        Some(_) | None => vec![],
    }
}

/// The input messages, oldest first.
pub fn input(request: &Value) -> Vec<Value> {
    if let Some(Value::Array(messages)) = request.get("messages") {
        return messages.iter().filter_map(message).collect();
    }
    if let Some(Value::Array(contents)) = request.get("contents") {
        return contents.iter().filter_map(message).collect();
    }
    match request.get("input").or_else(|| request.get("prompt")) {
        Some(Value::String(s)) => vec![user(vec![text(s)])],
        Some(Value::Array(items)) => items.iter().filter_map(item).collect(),
        Some(_) | None => vec![],
    }
}

fn user(parts: Vec<Value>) -> Value {
    serde_json::json!({"role": "user", "parts": parts})
}

/// A chat turn (`role` with `content` or Gemini's `parts`, plus OpenAI's and Ollama's
/// `tool_calls`, or a `tool` turn answering `tool_call_id`).
fn message(m: &Value) -> Option<Value> {
    let r = role(m.get("role").and_then(Value::as_str));
    let mut out: Vec<Value> = match m.get("content").or_else(|| m.get("parts")) {
        Some(c) if r == "tool" => vec![tool_response(m.get("tool_call_id"), Some(c))],
        Some(c) => parts(c),
        None => vec![],
    };
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        out.extend(calls.iter().map(|c| {
            let f = c.get("function").unwrap_or(c);
            tool_call(c.get("id"), f.get("name"), f.get("arguments"))
        }));
    }
    if out.is_empty() {
        return None;
    }
    Some(serde_json::json!({"role": r, "parts": out}))
}

/// A Responses API input item: a message, a function call or a call's output.
fn item(i: &Value) -> Option<Value> {
    match i.get("type").and_then(Value::as_str) {
        Some("function_call") => Some(serde_json::json!({"role": "assistant", "parts": [
            tool_call(i.get("call_id"), i.get("name"), i.get("arguments"))
        ]})),
        Some("function_call_output") => Some(serde_json::json!({"role": "tool", "parts": [
            tool_response(i.get("call_id"), i.get("output"))
        ]})),
        Some(_) | None => match i {
            Value::String(s) => Some(user(vec![text(s)])),
            Value::Object(_) => message(i),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => None,
        },
    }
}

/// A content value's parts: a string, or blocks of any provider's kinds.
pub(super) fn parts(c: &Value) -> Vec<Value> {
    match c {
        Value::String(s) => vec![text(s)],
        Value::Array(blocks) => blocks.iter().filter_map(block).collect(),
        Value::Object(_) => block(c).into_iter().collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) => vec![],
    }
}

/// One block: text (`text`, `input_text`, `output_text`, Gemini's `{text}`), a tool call
/// (Anthropic's `tool_use`, Gemini's `functionCall`), a tool's answer (`tool_result`,
/// `functionResponse`). Others (images, audio) are left out.
fn block(b: &Value) -> Option<Value> {
    if let Some(call) = b.get("functionCall") {
        return Some(tool_call(
            call.get("id"),
            call.get("name"),
            call.get("args"),
        ));
    }
    if let Some(r) = b.get("functionResponse") {
        return Some(tool_response(
            r.get("id").or(r.get("name")),
            r.get("response"),
        ));
    }
    match b.get("type").and_then(Value::as_str) {
        Some("tool_use") => Some(tool_call(b.get("id"), b.get("name"), b.get("input"))),
        Some("tool_result") => Some(tool_response(b.get("tool_use_id"), b.get("content"))),
        Some("text" | "input_text" | "output_text") | None => {
            b.get("text").and_then(Value::as_str).map(text)
        }
        Some(_) => None,
    }
}
