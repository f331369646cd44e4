//! An answer's output messages: one per choice (candidate), its text and tool calls put
//! together from a whole answer or from a stream's deltas (Chat Completions `delta`,
//! Anthropic's content blocks, Gemini's and Ollama's chunks, the Responses API's completed
//! response or, cut short, its text deltas), with its finish reason.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::input::parts;
use super::{text, tool_call};

/// A part being put together.
enum Part {
    Text(String),
    /// A tool call: id, name and its arguments (JSON text as streamed, or as sent).
    Call(Option<Value>, Option<Value>, Args),
    /// A part read whole.
    Whole(Value),
}

enum Args {
    Streamed(String),
    Sent(Option<Value>),
}

#[derive(Default)]
struct Choice {
    parts: BTreeMap<u64, Part>,
    finish: Option<String>,
}

impl Choice {
    /// Text after the last part: added to it when it is text.
    fn push_text(&mut self, s: &str) {
        if let Some((_, Part::Text(t))) = self.parts.iter_mut().next_back() {
            t.push_str(s);
        } else {
            let key = self.next();
            self.parts.insert(key, Part::Text(s.to_string()));
        }
    }

    fn push(&mut self, part: Part) {
        let key = self.next();
        self.parts.insert(key, part);
    }

    fn next(&self) -> u64 {
        self.parts.keys().next_back().map_or(0, |k| k + 1)
    }

    /// The part at `key` (a stream's block index), text unless it was started otherwise.
    fn at(&mut self, key: u64) -> &mut Part {
        self.parts
            .entry(key)
            .or_insert_with(|| Part::Text(String::new()))
    }

    fn finish(&mut self, reason: Option<&Value>) {
        if let Some(r) = reason.and_then(Value::as_str) {
            self.finish = Some(r.to_string());
        }
    }

    fn into_message(self) -> Option<Value> {
        let parts: Vec<Value> = self
            .parts
            .into_values()
            .filter_map(|p| match p {
                Part::Text(t) if t.is_empty() => None,
                Part::Text(t) => Some(text(&t)),
                Part::Whole(v) => Some(v),
                Part::Call(id, name, args) => {
                    let args = match args {
                        Args::Streamed(s) => {
                            serde_json::from_str(&s).ok().or(Some(Value::String(s)))
                        }
                        Args::Sent(v) => v,
                    };
                    Some(tool_call(id.as_ref(), name.as_ref(), args.as_ref()))
                }
            })
            .collect();
        if parts.is_empty() && self.finish.is_none() {
            return None;
        }
        let mut m = json!({"role": "assistant", "parts": parts});
        if let Some(f) = self.finish {
            m["finish_reason"] = Value::String(f);
        }
        Some(m)
    }
}

/// The output messages of an answer's documents (a whole body, or a stream's events).
pub fn output(docs: &[Value]) -> Vec<Value> {
    let mut choices: BTreeMap<u64, Choice> = BTreeMap::new();
    let mut whole: Option<Vec<Value>> = None;
    for d in docs {
        if let Some(out) = responses_output(d) {
            whole = Some(out);
            continue;
        }
        read(d, &mut choices);
    }
    if let Some(w) = whole {
        return w;
    }
    choices
        .into_values()
        .filter_map(Choice::into_message)
        .collect()
}

/// One document's share of the choices.
fn read(d: &Value, choices: &mut BTreeMap<u64, Choice>) {
    let first = || 0;
    if let Some(Value::Array(list)) = d.get("choices") {
        for (i, c) in list.iter().enumerate() {
            let idx = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
            chat_choice(c, choices.entry(idx).or_default());
        }
    } else if let Some(Value::Array(list)) = d.get("candidates") {
        for (i, c) in list.iter().enumerate() {
            let idx = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
            let choice = choices.entry(idx).or_default();
            gemini_parts(c.pointer("/content/parts"), choice);
            choice.finish(c.get("finishReason"));
        }
    } else if let Some(kind) = d.get("type").and_then(Value::as_str) {
        let choice = choices.entry(first()).or_default();
        if kind == "response.output_text.delta" {
            // A Responses stream cut before its completed response: its text so far.
            choice.push_text(d.get("delta").and_then(Value::as_str).unwrap_or_default());
        } else {
            anthropic(kind, d, choice);
        }
    } else {
        ollama(d, choices.entry(first()).or_default());
    }
}

/// A Chat Completions choice: a whole `message`, a stream's `delta`, or a completion's
/// `text`.
fn chat_choice(c: &Value, choice: &mut Choice) {
    if let Some(m) = c.get("message") {
        for p in m.get("content").map(parts).unwrap_or_default() {
            choice.push(Part::Whole(p));
        }
        whole_calls(m.get("tool_calls"), choice);
    } else if let Some(delta) = c.get("delta") {
        if let Some(s) = delta.get("content").and_then(Value::as_str) {
            choice.push_text(s);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Calls after the text, by their own index.
            let key = 1_000 + call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let f = call.get("function");
            stream_call(
                choice.at(key),
                call.get("id"),
                f.and_then(|f| f.get("name")),
            );
            if let (Part::Call(.., Args::Streamed(a)), Some(s)) = (
                choice.at(key),
                f.and_then(|f| f.get("arguments")).and_then(Value::as_str),
            ) {
                a.push_str(s);
            }
        }
    } else if let Some(s) = c.get("text").and_then(Value::as_str) {
        choice.push_text(s);
    }
    choice.finish(c.get("finish_reason"));
}

/// Starts (or names) a streamed call at a part.
fn stream_call(part: &mut Part, id: Option<&Value>, name: Option<&Value>) {
    if !matches!(part, Part::Call(..)) {
        *part = Part::Call(None, None, Args::Streamed(String::new()));
    }
    if let Part::Call(i, n, _) = part {
        if id.is_some() {
            *i = id.cloned();
        }
        if name.is_some() {
            *n = name.cloned();
        }
    }
}

/// OpenAI's and Ollama's `tool_calls`, whole.
fn whole_calls(calls: Option<&Value>, choice: &mut Choice) {
    for c in calls.and_then(Value::as_array).into_iter().flatten() {
        let f = c.get("function").unwrap_or(c);
        let args = Args::Sent(f.get("arguments").cloned());
        choice.push(Part::Call(
            c.get("id").cloned(),
            f.get("name").cloned(),
            args,
        ));
    }
}

fn gemini_parts(list: Option<&Value>, choice: &mut Choice) {
    for p in list.and_then(Value::as_array).into_iter().flatten() {
        if let Some(s) = p.get("text").and_then(Value::as_str) {
            choice.push_text(s);
        } else if let Some(call) = p.get("functionCall") {
            let args = Args::Sent(call.get("args").cloned());
            choice.push(Part::Call(
                call.get("id").cloned(),
                call.get("name").cloned(),
                args,
            ));
        }
    }
}

/// Anthropic: a whole `message`, or a stream's content blocks and their deltas.
fn anthropic(kind: &str, d: &Value, choice: &mut Choice) {
    let index = d.get("index").and_then(Value::as_u64).unwrap_or(0);
    match kind {
        "message" => {
            for p in d.get("content").map(parts).unwrap_or_default() {
                choice.push(Part::Whole(p));
            }
            choice.finish(d.get("stop_reason"));
        }
        "content_block_start" => {
            let block = d.get("content_block").unwrap_or(&Value::Null);
            if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                stream_call(choice.at(index), block.get("id"), block.get("name"));
            } else if let Some(s) = block.get("text").and_then(Value::as_str)
                && let Part::Text(t) = choice.at(index)
            {
                t.push_str(s);
            }
        }
        "content_block_delta" => {
            let delta = d.get("delta").unwrap_or(&Value::Null);
            let s = ["text", "partial_json"]
                .iter()
                .find_map(|k| delta.get(*k).and_then(Value::as_str))
                .unwrap_or_default();
            match choice.at(index) {
                Part::Text(t) | Part::Call(.., Args::Streamed(t)) => t.push_str(s),
                Part::Call(..) | Part::Whole(_) => {}
            }
        }
        "message_delta" => choice.finish(d.pointer("/delta/stop_reason")),
        _ => {}
    }
}

/// Ollama: chat's `message` (whole or a chunk of it), generate's `response`.
fn ollama(d: &Value, choice: &mut Choice) {
    if let Some(m) = d.get("message") {
        if let Some(s) = m.get("content").and_then(Value::as_str) {
            choice.push_text(s);
        }
        whole_calls(m.get("tool_calls"), choice);
    } else if let Some(s) = d.get("response").and_then(Value::as_str) {
        choice.push_text(s);
    }
    choice.finish(d.get("done_reason"));
}

/// The Responses API's output, when the document is a response (or carries the completed
/// one): each message and function call, the response's status as the finish reason.
fn responses_output(d: &Value) -> Option<Vec<Value>> {
    let r = if d.get("object").and_then(Value::as_str) == Some("response") {
        d
    } else {
        d.get("response").filter(|r| {
            r.get("output")
                .is_some_and(|o| o.as_array().is_some_and(|a| !a.is_empty()))
        })?
    };
    let mut choice = Choice::default();
    for item in r.get("output")?.as_array()? {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => choice.push(Part::Call(
                item.get("call_id").cloned(),
                item.get("name").cloned(),
                Args::Sent(item.get("arguments").cloned()),
            )),
            Some("message") => {
                for p in item.get("content").map(parts).unwrap_or_default() {
                    choice.push(Part::Whole(p));
                }
            }
            Some(_) | None => {}
        }
    }
    choice.finish(r.get("status"));
    Some(choice.into_message().into_iter().collect())
}
