//! Request-side helpers every provider file shares: editing message text, finding the
//! last user turn in a turn list, and the conversation cut a provider makes when the
//! context is too long. Where each provider keeps its turns is in its own file. Pure.

use serde_json::{Value, json};

use super::openai::responses;

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
        // Numbers, booleans, objects: not message text; left as they are.
        Value::Bool(_) | Value::Number(_) | Value::Object(_) => {}
    }
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
            Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
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

/// Edits the tool results in one turn; how many.
pub type EachTurn = fn(&mut Value, &mut dyn FnMut(&mut String)) -> usize;

/// A provider's turn list: under `key`, the user's turns picked by `is_user`, their
/// content under `content`.
pub struct Turns {
    pub key: &'static str,
    pub is_user: fn(&Value) -> bool,
    pub content: &'static str,
}

impl Turns {
    /// The last user message's content; a Responses API request (`input`, no `messages`)
    /// is read as one, whatever the provider.
    pub fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value> {
        if responses::is_request(body) {
            return responses::last_user_input(body);
        }
        let turns = body.get_mut(self.key)?.as_array_mut()?;
        let msg = turns.iter_mut().rev().find(|m| (self.is_user)(m))?;
        msg.get_mut(self.content)
    }

    /// Inserts `user` and `reply` turns before the last user turn.
    pub fn insert_before_last_user(&self, body: &mut Value, user: Value, reply: Value) -> bool {
        let Some(turns) = body.get_mut(self.key).and_then(Value::as_array_mut) else {
            return false;
        };
        let Some(at) = turns.iter().rposition(|m| (self.is_user)(m)) else {
            return false;
        };
        turns.insert(at, reply);
        turns.insert(at, user);
        true
    }

    /// Calls `each` on every turn that is an object (a turn that is not is no message:
    /// skipped, never indexed into), after the Responses API's `function_call_output`
    /// items; the number of tool results edited.
    pub fn for_each_tool_result(
        &self,
        body: &mut Value,
        f: &mut dyn FnMut(&mut String),
        each: EachTurn,
    ) -> usize {
        let mut n = responses::for_each_tool_output(body, f);
        let Some(turns) = body.get_mut(self.key).and_then(Value::as_array_mut) else {
            return n;
        };
        for m in turns.iter_mut().filter(|m| m.is_object()) {
            n += each(m, f);
        }
        n
    }
}

/// The user role, in every provider that spells it `role: user`.
pub fn role_user(m: &Value) -> bool {
    m["role"] == "user"
}

/// A context too long for the model, cut the way Ollama does: early turns silently
/// dropped, keeping system messages and the newest two turns; a `/api/generate` prompt
/// (no turns) loses its first half, as Ollama keeps the newest tokens of a prompt over
/// `num_ctx`.
pub fn drop_early_turns(body: &mut Value) -> bool {
    if let Some(Value::String(prompt)) = body.get_mut("prompt") {
        let half = prompt.chars().count() / 2;
        let Some((at, _)) = prompt.char_indices().nth(half).filter(|_| half > 0) else {
            return false;
        };
        prompt.replace_range(..at, "");
        return true;
    }
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
