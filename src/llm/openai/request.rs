//! Edits to a Chat Completions request (and to Ollama's `/api/chat`, which keeps its turns
//! the same way) that the context attacks make: a tool message's content, a system message,
//! a user/assistant pair.

use serde_json::{Value, json};

use crate::llm::request::edit_text;

/// A `role: tool` message's content (Chat Completions and Ollama).
pub fn tool_message(m: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
    if m["role"] != "tool" {
        return 0;
    }
    m.get_mut("content").map_or(0, |c| {
        edit_text(c, f);
        1
    })
}

/// A system message before the last user turn, or (Responses API, raw prompts) appended
/// to `instructions` / `system`.
pub fn add_system_message(body: &mut Value, text: &str) -> bool {
    if let Some(turns) = body.get_mut("messages").and_then(Value::as_array_mut) {
        let at = turns
            .iter()
            .rposition(|m| m["role"] == "user")
            .unwrap_or(turns.len());
        turns.insert(at, json!({"role": "system", "content": text}));
        return true;
    }
    let key = if body.get("instructions").is_some() {
        "instructions"
    } else {
        "system"
    };
    match body.get_mut(key) {
        Some(Value::String(s)) => {
            s.push_str(&format!("\n\n{text}"));
            true
        }
        _ => false,
    }
}

/// A user/assistant pair in `content` style (Chat Completions, Anthropic, Ollama).
pub fn content_turns(user: &str, assistant: &str) -> (Value, Value) {
    (
        json!({"role": "user", "content": user}),
        json!({"role": "assistant", "content": assistant}),
    )
}
