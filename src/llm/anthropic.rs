//! Anthropic's Messages API (provider-wire-formats.md §2): `content[]` blocks, named SSE
//! events (`content_block_delta`, `message_delta`, `message_stop`), `tool_use` blocks,
//! `tool_result` blocks in user turns, a top-level `system`, errors with `request-id`.

use crate::llm::signals::{ClientErrorKind, FilterSignal, ResponsesEvent};
use serde_json::{Value, json};

use super::detect::Api;
use super::frame::{Event, Framing};
use super::openai::content_turns;
use super::path::{All, Call, If, K, Seg, visit, visit_strings};
use super::request::{Turns, edit_text};
use super::synthetic::{Synthetic, format_secs, request_id};
use super::wire::{ContextOverflow, Kind, Progress, Recap, Wire};
use crate::exchange::Provider;

pub struct Anthropic;

static STREAM_CALL: Call = Call {
    at: &[K("content_block"), If("type", "tool_use")],
    name: &["name"],
    ids: &["id"],
    marker: "tool_use",
};
static CALL: Call = Call {
    at: &[K("content"), All, If("type", "tool_use")],
    name: &["name"],
    ids: &["id"],
    marker: "tool_use",
};
static STREAM_CALLS: [&Call; 1] = [&STREAM_CALL];
static CALLS: [&Call; 1] = [&CALL];

const STREAM_TEXT: &[&[Seg]] = &[&[K("delta"), K("text")]];
const TEXT: &[&[Seg]] = &[&[K("content"), All, K("text")]];
/// Streamed arguments arrive as `partial_json` text; whole ones are `input` objects.
const STREAM_ARGS: &[Seg] = &[K("delta"), K("partial_json")];
const ARGS: &[Seg] = &[K("content"), All, If("type", "tool_use"), K("input")];

/// A user turn holding only tool results is the agent's, not the user's.
fn is_user(m: &Value) -> bool {
    m["role"] == "user" && !only_tool_results(m)
}

fn only_tool_results(m: &Value) -> bool {
    m["content"]
        .as_array()
        .is_some_and(|c| !c.is_empty() && c.iter().all(|b| b["type"] == "tool_result"))
}

const TURNS: Turns = Turns {
    key: "messages",
    is_user,
    content: "content",
};

fn tool_results(m: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
    let mut n = 0;
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
    n
}

/// The live API's answer when the organisation's prepaid credits are used up.
const CREDIT_BALANCE_TOO_LOW: &str = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.";

fn error(status: u16, kind: &str, message: &str, draw: u64) -> Synthetic {
    let id = request_id("req_", draw);
    Synthetic::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": id}),
    )
    .with("request-id", id)
}

impl Wire for Anthropic {
    fn owns_host(&self, host: &str) -> bool {
        host == "api.anthropic.com"
    }

    fn endpoints(&self) -> &'static [(&'static str, Api)] {
        &[("/v1/messages", Api::Generate(Provider::Anthropic))]
    }

    fn exact_api(&self, _path: &str) -> Option<Api> {
        None
    }

    fn method_api(&self, _method: &str) -> Option<Api> {
        None
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn recap(&self) -> Option<&'static dyn Recap> {
        None
    }

    fn classify(&self, ev: &Event) -> Kind {
        let j = ev.json.as_ref();
        match j.and_then(|j| j["type"].as_str()).or(ev.name.as_deref()) {
            Some("message_stop") => Kind::Terminal,
            Some("message_delta") => Kind::Finish,
            Some("content_block_delta") => Kind::Content,
            _ => Kind::Meta,
        }
    }

    fn for_each_text(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut String)) {
        visit_strings(v, if stream { STREAM_TEXT } else { TEXT }, f)
    }

    fn calls(&self, stream: bool) -> &'static [&'static Call] {
        if stream { &STREAM_CALLS } else { &CALLS }
    }

    fn for_each_tool_args(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut Value)) {
        visit(v, if stream { STREAM_ARGS } else { ARGS }, f)
    }

    fn mark_truncated(&self, v: &mut Value) {
        v["stop_reason"] = json!("max_tokens");
    }

    fn truncation_closes(&self, v: &Value) -> bool {
        v["done"] == true
    }

    fn truncation_tail(&self, ev: &Event, last: &Value, tokens: u32) -> Vec<Event> {
        let index = last["index"].clone();
        vec![
            ev.sibling(
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": index}),
            ),
            ev.sibling(
                Some("message_delta"),
                json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                    "usage": {"output_tokens": tokens}}),
            ),
            ev.sibling(Some("message_stop"), json!({"type": "message_stop"})),
        ]
    }

    fn stream_error(&self, ev: &Event, _progress: &Progress, _form: ResponsesEvent) -> Event {
        ev.sibling(
            Some("error"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )
    }

    /// `usage` {`input_tokens`, `output_tokens`} of a message, of `message_start`'s message
    /// (the input and a first output count) and of `message_delta` (the output so far, and
    /// in newer streams the input again). Prompt tokens written to or read from the cache
    /// are input too.
    fn usage(&self, v: &Value, into: &mut crate::exchange::Usage) {
        use super::usage::{count, note, sum};
        let msg = v.get("message").filter(|m| m.is_object()).unwrap_or(v);
        let Some(u) = msg.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let input = sum(&[
            count(u, "input_tokens"),
            count(u, "cache_creation_input_tokens"),
            count(u, "cache_read_input_tokens"),
        ]);
        note(into, input, count(u, "output_tokens"), msg.get("model"));
    }

    fn garbage_event(&self) -> Option<&'static str> {
        Some("content_block_delta")
    }

    /// Anthropic's one signal is `stop_reason: "refusal"` (its streaming classifiers stop
    /// an answer, or the model declines): every `signal` is that.
    fn has_filter_signal(&self) -> bool {
        true
    }

    /// A whole answer refused carries no content blocks.
    fn mark_filtered(&self, v: &mut Value, _signal: FilterSignal) {
        v["content"] = json!([]);
        v["stop_reason"] = json!("refusal");
        v["stop_sequence"] = Value::Null;
    }

    /// The open block is closed (unless `ev` would have opened it), then `message_delta`
    /// with `stop_reason: "refusal"` and `message_stop`, as when the classifier intervenes.
    fn filter_tail(&self, ev: &Event, _progress: &Progress, _signal: FilterSignal) -> Vec<Event> {
        let j = ev.json.clone().unwrap_or(Value::Null);
        let mut out = vec![];
        if j["type"] != "content_block_start" {
            out.push(ev.sibling(
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": j["index"]}),
            ));
        }
        out.push(ev.sibling(
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null},
                "usage": {"output_tokens": 0}}),
        ));
        out.push(ev.sibling(Some("message_stop"), json!({"type": "message_stop"})));
        out
    }

    fn prompt_blocked(&self, _draw: u64) -> Option<Synthetic> {
        None
    }

    /// A whole answer's `input` is always an object at Anthropic, even when the model
    /// got the call wrong: what reaches the agent then is an object missing an argument
    /// (the first one here). Stream fragments (`partial_json`) are broken as JSON text.
    fn malformed_call(&self, v: &mut Value) -> Option<bool> {
        if v.get("content").is_none_or(|c| !c.is_array()) {
            return None;
        }
        let mut changed = false;
        visit(v, ARGS, &mut |input| {
            if let Some(args) = input.as_object_mut()
                && let Some(first) = args.keys().next().cloned()
            {
                args.shift_remove(&first);
                changed = true;
            }
        });
        Some(changed)
    }

    fn gateway_timeout(&self, draw: u64) -> Synthetic {
        error(504, "timeout_error", "Request timed out", draw)
    }

    fn rate_limit(&self, retry_after_s: f64, quota: bool, draw: u64) -> Synthetic {
        if quota {
            // An exhausted credit balance is not a 429 at Anthropic: the live API answers
            // 400 `invalid_request_error`, which no SDK retries.
            return error(400, "invalid_request_error", CREDIT_BALANCE_TOO_LOW, draw);
        }
        let message = "Number of request tokens has exceeded your per-minute rate limit";
        error(429, "rate_limit_error", message, draw)
            .with("retry-after", format_secs(retry_after_s))
            .with("anthropic-ratelimit-requests-limit", "50")
            .with("anthropic-ratelimit-requests-remaining", "0")
    }

    fn server_error(&self, status: Option<u16>, draw: u64) -> Synthetic {
        match status.unwrap_or(529) {
            529 => error(529, "overloaded_error", "Overloaded", draw),
            504 => error(504, "timeout_error", "Request timed out", draw),
            s => error(s, "api_error", "Internal server error", draw),
        }
    }

    fn client_error(&self, kind: ClientErrorKind, draw: u64) -> Synthetic {
        // The messages of Anthropic's error reference (docs: "HTTP errors").
        match kind {
            ClientErrorKind::Unauthorized => {
                error(401, "authentication_error", "invalid x-api-key", draw)
            }
            ClientErrorKind::PaymentRequired => error(
                402,
                "billing_error",
                "There is an issue with your account's billing: check Plans & Billing.",
                draw,
            ),
            ClientErrorKind::Forbidden => error(
                403,
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
                draw,
            ),
            ClientErrorKind::ModelNotFound => {
                error(404, "not_found_error", "model: not found", draw)
            }
            ClientErrorKind::RequestTooLarge => error(
                413,
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.",
                draw,
            ),
        }
    }

    fn context_overflow(&self, draw: u64) -> ContextOverflow {
        let message = "prompt is too long: 210517 tokens > 200000 maximum";
        ContextOverflow::Reject(error(400, "invalid_request_error", message, draw))
    }

    fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value> {
        TURNS.last_user_content(body)
    }

    fn for_each_tool_result(&self, body: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
        TURNS.for_each_tool_result(body, f, tool_results)
    }

    fn add_system(&self, body: &mut Value, text: &str) -> bool {
        match body.get_mut("system") {
            Some(Value::String(s)) => s.push_str(&format!("\n\n{text}")),
            Some(Value::Array(blocks)) => blocks.push(json!({"type": "text", "text": text})),
            _ => body["system"] = Value::String(text.to_string()),
        }
        true
    }

    fn insert_turns(&self, body: &mut Value, user: &str, assistant: &str) -> bool {
        let (u, a) = content_turns(user, assistant);
        TURNS.insert_before_last_user(body, u, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Server tools (`server_tool_use`: web search, code execution) run at Anthropic, not in
    /// the agent: they are not the agent's calls, for reading or for corrupting.
    #[test]
    fn only_tool_use_blocks_are_the_agents_calls() {
        let mut v = json!({"content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
            {"type": "tool_use", "id": "toolu_1", "name": "email", "input": {"to": "a"}}]});
        let mut names = vec![];
        crate::llm::path::each_call_name(&mut v, Anthropic.calls(false), &mut |n| {
            names.push(n.as_str().unwrap_or_default().to_string())
        });
        assert_eq!(names, ["email"]);
        let mut args = 0;
        Anthropic.for_each_tool_args(&mut v, false, &mut |_| args += 1);
        assert_eq!(args, 1);
        assert_eq!(crate::llm::tool_calls(v.to_string().as_bytes()), ["email"]);
    }

    /// A broken call in a whole answer stays an object (the only shape the API sends),
    /// missing its first argument; stream events are left to the JSON-text corruption.
    #[test]
    fn a_broken_whole_call_is_an_object_missing_an_argument() {
        let mut v = json!({"content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
             "input": {"city_name": "Paris", "unit": "celsius"}}]});
        assert_eq!(Anthropic.malformed_call(&mut v), Some(true));
        assert_eq!(v["content"][1]["input"], json!({"unit": "celsius"}));
        let mut none = json!({"content": [{"type": "tool_use", "name": "f", "input": {}}]});
        assert_eq!(Anthropic.malformed_call(&mut none), Some(false));
        let mut delta = json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1}"}});
        assert_eq!(Anthropic.malformed_call(&mut delta), None);
    }

    #[test]
    fn a_refusal_is_stop_reason_refusal_plain_and_streamed() {
        let mut v = json!({"type": "message", "content": [{"type": "text", "text": "Sure"}],
            "stop_reason": "end_turn"});
        Anthropic.mark_filtered(&mut v, FilterSignal::Refusal);
        assert_eq!(v["stop_reason"], "refusal");
        assert_eq!(v["content"], json!([]));
        let frame = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n";
        let ev = Event::parse(frame.as_bytes(), Framing::Sse);
        let bytes: String = Anthropic
            .filter_tail(&ev, &Progress::default(), FilterSignal::Filtered)
            .iter()
            .map(|e| String::from_utf8(e.encode().to_vec()).unwrap())
            .collect();
        assert_eq!(
            bytes,
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":0}}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
        assert!(Anthropic.prompt_blocked(0).is_none());
    }
}
