//! Where things are in each provider's JSON (provider-wire-formats.md §1–§4): text,
//! finish reasons, tool calls, in stream chunks and in whole responses; and the events a
//! provider sends to end a stream early or report an error inside it.

use serde_json::{Value, json};

use super::frame::Event;
use super::responses;
use crate::exchange::Provider;

/// What role an event plays in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Carries generated text or tool-call pieces.
    Content,
    /// Carries the finish reason (for Gemini and Ollama also the last event).
    Finish,
    /// Ends the stream (`[DONE]`, `message_stop`, `response.completed`).
    Terminal,
    Error,
    /// Anything else (`message_start`, `ping`, usage-only chunks).
    Meta,
}

pub fn classify(p: Provider, ev: &Event) -> Kind {
    let j = ev.json.as_ref();
    if j.is_some_and(|j| {
        j.get("error").is_some() || j.get("type").and_then(Value::as_str) == Some("error")
    }) {
        return Kind::Error;
    }
    match p {
        Provider::Openai => {
            if ev.data.trim() == "[DONE]" {
                return Kind::Terminal;
            }
            if let Some(name) = ev.name.as_deref() {
                return match name {
                    "response.completed" | "response.incomplete" | "response.failed" => {
                        Kind::Terminal
                    }
                    n if n.ends_with(".delta") => Kind::Content,
                    _ => Kind::Meta,
                };
            }
            let choices = j
                .and_then(|j| j["choices"].as_array())
                .map(Vec::as_slice)
                .unwrap_or_default();
            if choices.iter().any(|c| !c["finish_reason"].is_null()) {
                Kind::Finish
            } else if choices.is_empty() {
                Kind::Meta
            } else {
                Kind::Content
            }
        }
        Provider::Anthropic => match j.and_then(|j| j["type"].as_str()).or(ev.name.as_deref()) {
            Some("message_stop") => Kind::Terminal,
            Some("message_delta") => Kind::Finish,
            Some("content_block_delta") => Kind::Content,
            _ => Kind::Meta,
        },
        Provider::Gemini => {
            let done = j
                .and_then(|j| j["candidates"].as_array())
                .is_some_and(|c| c.iter().any(|c| c.get("finishReason").is_some()));
            if done { Kind::Finish } else { Kind::Content }
        }
        Provider::Ollama => {
            if j.is_some_and(|j| j["done"] == json!(true)) {
                Kind::Finish
            } else {
                Kind::Content
            }
        }
    }
}

enum Seg {
    K(&'static str),
    All,
}
use Seg::{All, K};

/// Calls `f` on every value at `path` (`All` walks an array).
fn visit(v: &mut Value, path: &[Seg], f: &mut dyn FnMut(&mut Value)) {
    match path.split_first() {
        None => f(v),
        Some((K(k), rest)) => {
            if let Some(c) = v.get_mut(*k) {
                visit(c, rest, f);
            }
        }
        Some((All, rest)) => {
            if let Value::Array(a) = v {
                for c in a.iter_mut() {
                    visit(c, rest, f);
                }
            }
        }
    }
}

fn text_paths(p: Provider, stream: bool) -> &'static [&'static [Seg]] {
    match (p, stream) {
        (Provider::Openai, true) => &[&[K("choices"), All, K("delta"), K("content")]],
        (Provider::Openai, false) => &[&[K("choices"), All, K("message"), K("content")]],
        (Provider::Anthropic, true) => &[&[K("delta"), K("text")]],
        (Provider::Anthropic, false) => &[&[K("content"), All, K("text")]],
        (Provider::Gemini, _) => &[&[
            K("candidates"),
            All,
            K("content"),
            K("parts"),
            All,
            K("text"),
        ]],
        (Provider::Ollama, _) => &[&[K("message"), K("content")], &[K("response")]],
    }
}

/// Calls `f` on every piece of generated text in a stream chunk or a whole response.
pub fn for_each_text(p: Provider, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut String)) {
    if p == Provider::Openai && responses::is_responses(v) {
        return responses::for_each_text(v, f);
    }
    for path in text_paths(p, stream) {
        visit(v, path, &mut |t| {
            if let Value::String(s) = t {
                f(s);
            }
        });
    }
}

/// Whether any text is present.
pub fn has_text(p: Provider, v: &mut Value, stream: bool) -> bool {
    let mut any = false;
    for_each_text(p, v, stream, &mut |s| any |= !s.is_empty());
    any
}

/// Whether a stream chunk carries generated text or tool-call pieces (an OpenAI role
/// chunk with empty content does not).
pub fn carries_output(p: Provider, v: &mut Value) -> bool {
    let mut any = has_text(p, v, true);
    for_each_tool_args(p, v, true, &mut |a| {
        any |= !(a.is_null() || a.as_str() == Some(""))
    });
    for_each_tool_name(p, v, true, &mut |n| {
        any |= n.as_str().is_some_and(|s| !s.is_empty())
    });
    any
}

fn tool_name_paths(p: Provider, stream: bool) -> &'static [&'static [Seg]] {
    match (p, stream) {
        (Provider::Openai, true) => &[&[
            K("choices"),
            All,
            K("delta"),
            K("tool_calls"),
            All,
            K("function"),
            K("name"),
        ]],
        (Provider::Openai, false) => &[&[
            K("choices"),
            All,
            K("message"),
            K("tool_calls"),
            All,
            K("function"),
            K("name"),
        ]],
        (Provider::Anthropic, true) => &[&[K("content_block"), K("name")]],
        (Provider::Anthropic, false) => &[&[K("content"), All, K("name")]],
        (Provider::Gemini, _) => &[&[
            K("candidates"),
            All,
            K("content"),
            K("parts"),
            All,
            K("functionCall"),
            K("name"),
        ]],
        (Provider::Ollama, _) => &[&[K("message"), K("tool_calls"), All, K("function"), K("name")]],
    }
}

/// Tool-call arguments: JSON text (OpenAI `arguments`, Anthropic `partial_json` deltas) or
/// objects (Anthropic `input`, Gemini `args`, Ollama `arguments`).
fn tool_args_paths(p: Provider, stream: bool) -> &'static [&'static [Seg]] {
    match (p, stream) {
        (Provider::Openai, true) => &[&[
            K("choices"),
            All,
            K("delta"),
            K("tool_calls"),
            All,
            K("function"),
            K("arguments"),
        ]],
        (Provider::Openai, false) => &[&[
            K("choices"),
            All,
            K("message"),
            K("tool_calls"),
            All,
            K("function"),
            K("arguments"),
        ]],
        (Provider::Anthropic, true) => &[&[K("delta"), K("partial_json")]],
        (Provider::Anthropic, false) => &[&[K("content"), All, K("input")]],
        (Provider::Gemini, _) => &[&[
            K("candidates"),
            All,
            K("content"),
            K("parts"),
            All,
            K("functionCall"),
            K("args"),
        ]],
        (Provider::Ollama, _) => &[&[
            K("message"),
            K("tool_calls"),
            All,
            K("function"),
            K("arguments"),
        ]],
    }
}

pub fn for_each_tool_name(p: Provider, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut Value)) {
    if p == Provider::Openai && responses::is_responses(v) {
        return responses::for_each_call(v, &mut |item| f(&mut item["name"]));
    }
    for path in tool_name_paths(p, stream) {
        visit(v, path, f);
    }
}

pub fn for_each_tool_args(p: Provider, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut Value)) {
    if p == Provider::Openai && responses::is_responses(v) {
        if let Some(fragment) = responses::args_fragment(v) {
            return f(fragment);
        }
        return responses::for_each_call(v, &mut |item| f(&mut item["arguments"]));
    }
    for path in tool_args_paths(p, stream) {
        visit(v, path, f);
    }
}

/// Marks a whole response (or a Gemini/Ollama chunk) as cut by the token limit.
pub fn mark_truncated(p: Provider, v: &mut Value) {
    if p == Provider::Openai && responses::is_responses(v) {
        return responses::mark_incomplete(v);
    }
    match p {
        Provider::Openai => visit(v, &[K("choices"), All], &mut |c| {
            if let Some(c) = c.as_object_mut() {
                c.insert("finish_reason".into(), json!("length"));
            }
        }),
        Provider::Anthropic => v["stop_reason"] = json!("max_tokens"),
        Provider::Gemini => visit(v, &[K("candidates"), All], &mut |c| {
            if let Some(c) = c.as_object_mut() {
                c.insert("finishReason".into(), json!("MAX_TOKENS"));
            }
        }),
        Provider::Ollama => {
            v["done"] = json!(true);
            v["done_reason"] = json!("length");
        }
    }
}

/// Events that end a stream as the provider does when it hits the token limit, after
/// `ev` (the last content event, already trimmed). `last` is the newest JSON chunk seen.
pub fn truncation_tail(p: Provider, ev: &Event, last: &Value, tokens: u32) -> Vec<Event> {
    match p {
        Provider::Openai => {
            let mut finish = last.clone();
            finish["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": "length"}]);
            vec![ev.sibling(None, finish), ev.raw_sibling(None, "[DONE]")]
        }
        Provider::Anthropic => {
            let index = last["index"].clone();
            vec![
                ev.sibling(Some("content_block_stop"), json!({"type": "content_block_stop", "index": index})),
                ev.sibling(
                    Some("message_delta"),
                    json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                        "usage": {"output_tokens": tokens}}),
                ),
                ev.sibling(Some("message_stop"), json!({"type": "message_stop"})),
            ]
        }
        // The trimmed chunk itself carries the finish reason (`mark_truncated`).
        Provider::Gemini => vec![],
        Provider::Ollama => {
            let mut done = json!({"model": last["model"], "created_at": last["created_at"], "done": true,
                "done_reason": "length", "eval_count": tokens});
            if last.get("response").is_some() {
                done["response"] = json!("");
            } else {
                done["message"] = json!({"role": "assistant", "content": ""});
            }
            vec![ev.sibling(None, done)]
        }
    }
}

/// The provider's mid-stream error (an overload arriving after the 200 began).
pub fn stream_error(p: Provider, ev: &Event) -> Event {
    match p {
        Provider::Openai => ev.sibling(
            None,
            json!({"error": {"message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error", "param": null, "code": null}}),
        ),
        Provider::Anthropic => ev.sibling(
            Some("error"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Provider::Gemini => ev.sibling(
            None,
            json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}),
        ),
        Provider::Ollama => ev.sibling(None, json!({"error": "model runner has unexpectedly stopped"})),
    }
}

/// A frame whose data is not valid JSON, named so every SDK version tries to parse it.
pub fn garbage_frame(p: Provider, ev: &Event) -> Event {
    let name = (p == Provider::Anthropic).then_some("content_block_delta");
    // Cut off mid-string: no JSON parser accepts it.
    ev.raw_sibling(
        name,
        r#"{"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {"content": "\ufffd"#,
    )
}

/// What Gemini answers when the model wrote a broken function call: the call is gone and
/// the candidate finishes with `MALFORMED_FUNCTION_CALL`.
pub fn gemini_malformed_call(v: &mut Value) -> bool {
    let mut changed = false;
    visit(v, &[K("candidates"), All], &mut |c| {
        let parts = c.get_mut("content").and_then(|c| c.get_mut("parts"));
        let Some(parts) = parts.and_then(Value::as_array_mut) else {
            return;
        };
        let before = parts.len();
        parts.retain(|part| part.get("functionCall").is_none());
        if parts.len() != before {
            c["finishReason"] = json!("MALFORMED_FUNCTION_CALL");
            changed = true;
        }
    });
    changed
}

/// What Ollama answers when it cannot parse the model's tool call: no `tool_calls`, the
/// raw (here broken) call text as the message content.
pub fn ollama_unparsed_call(v: &mut Value) -> bool {
    let Some(calls) = v["message"].get_mut("tool_calls").map(Value::take) else {
        return false;
    };
    let Some(first) = calls.as_array().and_then(|c| c.first()) else {
        return false;
    };
    let f = &first["function"];
    let text = format!(
        "{{\"name\": \"{}\", \"arguments\": {}",
        f["name"].as_str().unwrap_or(""),
        f["arguments"]
    );
    v["message"]["content"] = Value::String(text);
    if let Some(m) = v["message"].as_object_mut() {
        m.remove("tool_calls");
    }
    true
}
