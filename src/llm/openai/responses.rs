//! The OpenAI Responses API (`/v1/responses`), whose shape differs from Chat Completions:
//! text lives in `output[].content[].text`, and a stream repeats it in `*.delta`, `*.done`,
//! `output_item.*` and the final `response.completed` events. Every copy is rewritten so
//! that an SDK reading deltas and one reading the final response see the same answer.
//! Requests: the user's input and tool outputs sit in `input`.

use serde_json::{Value, json};

use crate::llm::frame::Event;
use crate::llm::path::{All, Call, If, K, at, visit};
use crate::llm::wire::{Progress, Recap};

/// The Responses API's streams repeat what they sent; Chat Completions' events (the same
/// `Wire`) are not theirs, and each method leaves them alone.
impl Recap for super::OpenAi {
    fn repeats_output(&self, v: &Value) -> bool {
        is_responses(v)
    }

    fn is_args_fragment(&self, v: &Value) -> bool {
        v["type"] == "response.function_call_arguments.delta"
    }

    fn text_delta_part(&self, v: &Value) -> Option<(String, u64)> {
        delta_key(v)
    }

    fn for_each_repeated_text(&self, v: &mut Value, f: &mut dyn FnMut(&str, u64, &mut String)) {
        if is_responses(v) {
            for_each_whole_text(v, f)
        }
    }

    fn observe(&self, progress: &mut Progress, v: &Value) {
        if is_responses(v) {
            observe(progress, v)
        }
    }

    fn record_sent(&self, progress: &mut Progress, v: &mut Value) {
        if is_responses(v) {
            for_each_text(v, &mut |s| progress.said.push_str(s))
        }
    }

    fn truncated_summary(&self, ev: &Event, progress: &Progress) -> Option<Event> {
        let ours = ev.json.as_ref().is_some_and(is_responses);
        ours.then(|| incomplete_event(ev, progress, "max_output_tokens"))
    }
}

/// Whether a JSON value is a Responses API object or stream event.
pub fn is_responses(v: &Value) -> bool {
    v["object"] == "response"
        || v["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("response."))
}

fn each_output_text(output: &mut Value, f: &mut dyn FnMut(&mut String)) {
    for item in output.as_array_mut().into_iter().flatten() {
        if let Some(content) = item.get_mut("content") {
            each_content_text(content, f);
        }
    }
}

fn each_content_text(content: &mut Value, f: &mut dyn FnMut(&mut String)) {
    for part in content.as_array_mut().into_iter().flatten() {
        if let Some(Value::String(s)) = part.get_mut("text") {
            f(s);
        }
    }
}

fn string_at(v: &mut Value, key: &str, f: &mut dyn FnMut(&mut String)) {
    if let Some(Value::String(s)) = v.get_mut(key) {
        f(s);
    }
}

/// Every copy of the answer text in a response object or stream event.
pub fn for_each_text(v: &mut Value, f: &mut dyn FnMut(&mut String)) {
    if v["object"] == "response" {
        return each_output_text(&mut v["output"], f);
    }
    match v["type"].as_str().unwrap_or_default() {
        "response.output_text.delta" => string_at(v, "delta", f),
        "response.output_text.done" => string_at(v, "text", f),
        "response.content_part.added" | "response.content_part.done" => {
            string_at(&mut v["part"], "text", f)
        }
        "response.output_item.added" | "response.output_item.done" => {
            if let Some(content) = at(v, &["item", "content"]) {
                each_content_text(content, f)
            }
        }
        _ => {
            if let Some(output) = at(v, &["response", "output"]) {
                each_output_text(output, f)
            }
        }
    }
}

/// Every copy of a text part that repeats it whole (`output_text.done`, `content_part.*`,
/// `output_item.*`, the response in `response.*` events), with the message item id and the
/// content index it belongs to: what a stream rewrite that changed the deltas must make
/// agree with them. Deltas are not visited.
pub fn for_each_whole_text(v: &mut Value, f: &mut dyn FnMut(&str, u64, &mut String)) {
    let key = |v: &Value| {
        (
            v["item_id"].as_str().unwrap_or_default().to_string(),
            v["content_index"].as_u64().unwrap_or(0),
        )
    };
    let item_parts = |item: &mut Value, f: &mut dyn FnMut(&str, u64, &mut String)| {
        let id = item["id"].as_str().unwrap_or_default().to_string();
        let parts = item.get_mut("content").and_then(Value::as_array_mut);
        for (i, part) in parts.into_iter().flatten().enumerate() {
            if let Some(Value::String(s)) = part.get_mut("text") {
                f(&id, i as u64, s);
            }
        }
    };
    match v["type"].as_str().unwrap_or_default() {
        "response.output_text.done" => {
            let (id, i) = key(v);
            string_at(v, "text", &mut |s| f(&id, i, s));
        }
        "response.content_part.added" | "response.content_part.done" => {
            let (id, i) = key(v);
            string_at(&mut v["part"], "text", &mut |s| f(&id, i, s));
        }
        "response.output_item.added" | "response.output_item.done" => {
            if let Some(item) = v.get_mut("item") {
                item_parts(item, f);
            }
        }
        t if t.ends_with(".delta") => {}
        _ => {
            let output = at(v, &["response", "output"]).and_then(Value::as_array_mut);
            for item in output.into_iter().flatten() {
                item_parts(item, f);
            }
        }
    }
}

/// The message item and content index a `response.output_text.delta` belongs to.
pub fn delta_key(v: &Value) -> Option<(String, u64)> {
    (v["type"] == "response.output_text.delta").then(|| {
        (
            v["item_id"].as_str().unwrap_or_default().to_string(),
            v["content_index"].as_u64().unwrap_or(0),
        )
    })
}

/// Function call items: in a whole response, in `output_item.*` events and in the final
/// response an event carries.
pub static OUTPUT: Call = Call {
    at: &[K("output"), All, If("type", "function_call")],
    name: &["name"],
    ids: &["call_id", "id"],
    marker: "function_call",
};
pub static ITEM: Call = Call {
    at: &[K("item"), If("type", "function_call")],
    name: &["name"],
    ids: &["call_id", "id"],
    marker: "function_call",
};
pub static EVENT_OUTPUT: Call = Call {
    at: &[K("response"), K("output"), All, If("type", "function_call")],
    name: &["name"],
    ids: &["call_id", "id"],
    marker: "function_call",
};

/// Every function call item (with `name` and `arguments`).
pub fn for_each_call(v: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    for c in [&OUTPUT, &ITEM, &EVENT_OUTPUT] {
        visit(v, c.at, f);
    }
}

/// The arguments text of a streamed call event (`…arguments.delta` or `…arguments.done`).
pub fn args_fragment(v: &mut Value) -> Option<&mut Value> {
    let key = match v["type"].as_str()? {
        "response.function_call_arguments.delta" => "delta",
        "response.function_call_arguments.done" => "arguments",
        _ => return None,
    };
    v.get_mut(key)
}

/// A whole response cut short (`reason`: `max_output_tokens` at the token limit,
/// `content_filter` by the filter), as the API reports it: the response and its message
/// items are `incomplete`.
pub fn mark_incomplete(v: &mut Value, reason: &str) {
    v["status"] = json!("incomplete");
    v["incomplete_details"] = json!({"reason": reason});
    for item in v["output"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message")
    {
        item["status"] = json!("incomplete");
    }
}

/// The event that ends a stream cut short (`reason` as in `mark_incomplete`), carrying
/// the text sent so far. `base` is the response object from `response.created` (id,
/// model, …); `item_id` the message item the deltas belonged to.
pub fn incomplete_event(ev: &Event, progress: &Progress, reason: &str) -> Event {
    let Progress {
        base,
        said: text,
        sequence,
        item_id,
    } = progress;
    let sequence = sequence + 1;
    let mut response = if base.is_object() {
        base.clone()
    } else {
        json!({"object": "response"})
    };
    response["output"] = json!([{"type": "message", "id": item_id, "role": "assistant", "status": "incomplete",
        "content": [{"type": "output_text", "text": text, "annotations": []}]}]);
    mark_incomplete(&mut response, reason);
    let data =
        json!({"type": "response.incomplete", "sequence_number": sequence, "response": response});
    ev.sibling(Some("response.incomplete"), data)
}

/// A server failure after the stream began: `response.failed`, as the API sends it.
pub fn failed_event(ev: &Event, progress: &Progress) -> Event {
    let (base, sequence) = (&progress.base, progress.sequence + 1);
    let mut response = if base.is_object() {
        base.clone()
    } else {
        json!({"object": "response"})
    };
    response["status"] = json!("failed");
    response["error"] = json!({"code": "server_error", "message": "The server had an error while processing your request. Sorry about that!"});
    let data =
        json!({"type": "response.failed", "sequence_number": sequence, "response": response});
    ev.sibling(Some("response.failed"), data)
}

/// A failure after the stream began as the top-level `error` event. The API reference
/// puts `code` and `message` at the top; the live API nests them under `error` (seen in
/// openai/openai-dotnet#881), which is what makes the Python SDK raise `APIError`.
pub fn error_event(ev: &Event, progress: &Progress) -> Event {
    let data = json!({"type": "error", "sequence_number": progress.sequence + 1,
        "error": {"type": "server_error", "code": "server_error",
            "message": "The server had an error while processing your request. Sorry about that!",
            "param": null}});
    ev.sibling(Some("error"), data)
}

/// Notes the response object (`response.created`, `response.in_progress`), the sequence
/// number and the message item the text deltas belong to.
pub fn observe(progress: &mut Progress, j: &Value) {
    if matches!(
        j["type"].as_str(),
        Some("response.created" | "response.in_progress")
    ) {
        progress.base = j["response"].clone();
    }
    progress.sequence = j["sequence_number"].as_u64().unwrap_or(progress.sequence);
    if j["type"] == "response.output_text.delta" {
        progress.item_id = j["item_id"].clone();
    }
}

/// Whether a request is a Responses API one (`input`, no `messages`).
pub fn is_request(body: &Value) -> bool {
    body.get("input").is_some() && body.get("messages").is_none()
}

/// The user's last input: `input` itself when a string, else its last user item's content.
pub fn last_user_input(body: &mut Value) -> Option<&mut Value> {
    let input = body.get_mut("input")?;
    if input.is_string() {
        return Some(input);
    }
    let item = input
        .as_array_mut()?
        .iter_mut()
        .rev()
        .find(|m| m["role"] == "user")?;
    item.get_mut("content")
}

/// Calls `f` on every `function_call_output` item's output; how many there were.
pub fn for_each_tool_output(body: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
    let mut n = 0;
    if let Some(items) = body.get_mut("input").and_then(Value::as_array_mut) {
        for item in items
            .iter_mut()
            .filter(|i| i["type"] == "function_call_output")
        {
            if let Some(out) = item.get_mut("output") {
                n += 1;
                crate::llm::request::edit_text(out, f);
            }
        }
    }
    n
}
