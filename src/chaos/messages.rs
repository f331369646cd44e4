//! Where the conversation is in each provider's *request* JSON: the last user message, tool
//! results, the system prompt, the turn list. Used by context attacks to rewrite what the
//! agent sends to its LLM. Pure.

use serde_json::{Value, json};

use crate::exchange::Provider;

/// Edits the text of a message `content`: a string, or the last text part of a list of
/// parts (adding one when there is none).
pub fn edit_text(content: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match content {
        Value::String(s) => f(s),
        Value::Array(parts) => {
            let text_part = parts
                .iter_mut()
                .rev()
                .find(|p| p.get("text").is_some_and(Value::is_string));
            match text_part.and_then(|p| p.get_mut("text")) {
                Some(Value::String(s)) => f(s),
                _ => {
                    let mut s = String::new();
                    f(&mut s);
                    parts.push(json!({"type": "text", "text": s}));
                }
            }
        }
        Value::Null => {
            let mut s = String::new();
            f(&mut s);
            *content = Value::String(s);
        }
        _ => {}
    }
}

fn turns_key(p: Provider) -> &'static str {
    if p == Provider::Gemini {
        "contents"
    } else {
        "messages"
    }
}

fn user_role(p: Provider, m: &Value) -> bool {
    m["role"] == "user" && !(p == Provider::Anthropic && only_tool_results(m))
}

fn only_tool_results(m: &Value) -> bool {
    m["content"]
        .as_array()
        .is_some_and(|c| !c.is_empty() && c.iter().all(|b| b["type"] == "tool_result"))
}

/// The content of the last user message, however the provider spells it.
pub fn last_user_content(p: Provider, body: &mut Value) -> Option<&mut Value> {
    if p == Provider::Ollama && body.get("prompt").is_some() {
        return body.get_mut("prompt");
    }
    if body.get("input").is_some() && body.get("messages").is_none() {
        // OpenAI Responses API: `input` is a string or a list of items.
        let input = body.get_mut("input")?;
        if input.is_string() {
            return Some(input);
        }
        let item = input
            .as_array_mut()?
            .iter_mut()
            .rev()
            .find(|m| m["role"] == "user")?;
        return item.get_mut("content");
    }
    let turns = body.get_mut(turns_key(p))?.as_array_mut()?;
    let msg = turns.iter_mut().rev().find(|m| user_role(p, m))?;
    msg.get_mut(if p == Provider::Gemini {
        "parts"
    } else {
        "content"
    })
}

/// Calls `f` on the text of every tool result the request carries back to the LLM.
pub fn for_each_tool_result(
    p: Provider,
    body: &mut Value,
    f: &mut dyn FnMut(&mut String),
) -> usize {
    let mut n = 0;
    if let Some(items) = body.get_mut("input").and_then(Value::as_array_mut) {
        for item in items
            .iter_mut()
            .filter(|i| i["type"] == "function_call_output")
        {
            if let Some(out) = item.get_mut("output") {
                n += 1;
                edit_text(out, f);
            }
        }
    }
    let Some(turns) = body.get_mut(turns_key(p)).and_then(Value::as_array_mut) else {
        return n;
    };
    // A turn that is not an object is no message: skipped, never indexed into.
    for m in turns.iter_mut().filter(|m| m.is_object()) {
        match p {
            Provider::Openai | Provider::Ollama if m["role"] == "tool" => {
                if let Some(c) = m.get_mut("content") {
                    n += 1;
                    edit_text(c, f);
                }
            }
            Provider::Anthropic => {
                for block in m["content"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_result")
                {
                    if block.get("content").is_none() {
                        block["content"] = Value::String(String::new());
                    }
                    n += 1;
                    edit_text(&mut block["content"], f);
                }
            }
            Provider::Gemini => {
                for part in m["parts"].as_array_mut().into_iter().flatten() {
                    if let Some(resp) = part
                        .get_mut("functionResponse")
                        .and_then(|r| r.get_mut("response"))
                    {
                        n += 1;
                        longest_string(resp, f);
                    }
                }
            }
            _ => {}
        }
    }
    n
}

/// Edits the longest prose string inside `v` (a tool's JSON result): one with a space, so
/// URLs, ids and tokens stay intact; else the longest string; else adds `content` to an
/// object. False when there was nowhere to put it (no string, not an object).
pub fn longest_string(v: &mut Value, f: &mut dyn FnMut(&mut String)) -> bool {
    fn rank(s: &str) -> (bool, usize) {
        (s.contains(' '), s.len())
    }
    fn walk<'a>(v: &'a mut Value, best: &mut Option<&'a mut String>) {
        match v {
            Value::String(s) if best.as_ref().is_none_or(|b| rank(s) > rank(b)) => *best = Some(s),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, best)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, best)),
            _ => {}
        }
    }
    let mut best = None;
    walk(v, &mut best);
    match best {
        Some(s) => f(s),
        None => {
            let Value::Object(o) = v else { return false };
            let mut s = String::new();
            f(&mut s);
            o.insert("content".into(), Value::String(s));
        }
    }
    true
}

/// Adds a system instruction after the agent's own.
pub fn add_system(p: Provider, body: &mut Value, text: &str) -> bool {
    match p {
        Provider::Anthropic => {
            let system = body.get_mut("system");
            match system {
                Some(Value::String(s)) => s.push_str(&format!("\n\n{text}")),
                Some(Value::Array(blocks)) => blocks.push(json!({"type": "text", "text": text})),
                _ => body["system"] = Value::String(text.to_string()),
            }
            true
        }
        Provider::Gemini => {
            let Some(o) = body.as_object_mut() else {
                return false;
            };
            let si = o
                .entry("systemInstruction")
                .or_insert_with(|| json!({"parts": []}));
            if !si.is_object() {
                *si = json!({"parts": []});
            }
            let parts = si
                .as_object_mut()
                .map(|si| si.entry("parts").or_insert_with(|| json!([])));
            match parts {
                Some(Value::Array(a)) => a.push(json!({"text": text})),
                Some(other) => *other = json!([{"text": text}]),
                None => return false,
            }
            true
        }
        Provider::Openai | Provider::Ollama => {
            if let Some(turns) = body.get_mut("messages").and_then(Value::as_array_mut) {
                let at = turns
                    .iter()
                    .rposition(|m| m["role"] == "user")
                    .unwrap_or(turns.len());
                turns.insert(at, json!({"role": "system", "content": text}));
                true
            } else {
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
        }
    }
}

/// Inserts a fabricated user/assistant exchange before the last user message.
pub fn insert_turns(p: Provider, body: &mut Value, user: &str, assistant: &str) -> bool {
    let (user_turn, reply) = match p {
        Provider::Gemini => (
            json!({"role": "user", "parts": [{"text": user}]}),
            json!({"role": "model", "parts": [{"text": assistant}]}),
        ),
        _ => (
            json!({"role": "user", "content": user}),
            json!({"role": "assistant", "content": assistant}),
        ),
    };
    let Some(turns) = body.get_mut(turns_key(p)).and_then(Value::as_array_mut) else {
        return false;
    };
    let Some(at) = turns.iter().rposition(|m| user_role(p, m)) else {
        return false;
    };
    turns.insert(at, reply);
    turns.insert(at, user_turn);
    true
}

/// Ollama's answer to a context that is too long: early turns silently dropped, keeping
/// system messages and the newest two turns.
pub fn drop_early_turns(body: &mut Value) -> bool {
    let Some(turns) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return false;
    };
    let others: Vec<usize> = (0..turns.len())
        .filter(|i| turns[*i]["role"] != "system")
        .collect();
    if others.len() <= 2 {
        return false;
    }
    let drop: Vec<usize> = others[..others.len() - 2].to_vec();
    let mut i = 0;
    turns.retain(|_| {
        let keep = !drop.contains(&i);
        i += 1;
        keep
    });
    true
}
