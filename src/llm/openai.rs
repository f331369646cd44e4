//! OpenAI's wire format (provider-wire-formats.md §1): Chat Completions (`choices[]`, SSE
//! ending in `[DONE]`) here, the Responses API in `responses`. Also what OpenAI-compatible
//! servers (Azure, vLLM, LM Studio, LiteLLM, Ollama's `/v1`) speak.

mod completions;
mod filter;
mod request;
pub mod responses;

pub use request::{add_system_message, content_turns, tool_message};

use crate::llm::signals::{ClientErrorKind, FilterSignal, ResponsesEvent};
use serde_json::{Value, json};

use super::detect::Api;
use super::frame::{Event, Framing};
use super::path::{All, Call, K, Seg, visit, visit_strings};
use super::request::{Turns, role_user};
use super::synthetic::{Synthetic, format_secs, request_id};
use super::wire::{ContextOverflow, Kind, Progress, Recap, Wire};
use crate::exchange::Provider;

pub struct OpenAi;

static STREAM_CALL: Call = Call {
    at: &[K("choices"), All, K("delta"), K("tool_calls"), All],
    name: &["function", "name"],
    ids: &["id"],
    marker: "tool_calls",
};
static CALL: Call = Call {
    at: &[K("choices"), All, K("message"), K("tool_calls"), All],
    name: &["function", "name"],
    ids: &["id"],
    marker: "tool_calls",
};

static STREAM_CALLS: [&Call; 4] = [
    &STREAM_CALL,
    &responses::OUTPUT,
    &responses::ITEM,
    &responses::EVENT_OUTPUT,
];
static CALLS: [&Call; 4] = [
    &CALL,
    &responses::OUTPUT,
    &responses::ITEM,
    &responses::EVENT_OUTPUT,
];

// Chat Completions' text, then the legacy Completions API's (the same in both forms).
const STREAM_TEXT: &[&[Seg]] = &[
    &[K("choices"), All, K("delta"), K("content")],
    completions::TEXT,
];
const TEXT: &[&[Seg]] = &[
    &[K("choices"), All, K("message"), K("content")],
    completions::TEXT,
];
const STREAM_ARGS: &[Seg] = &[
    K("choices"),
    All,
    K("delta"),
    K("tool_calls"),
    All,
    K("function"),
    K("arguments"),
];
const ARGS: &[Seg] = &[
    K("choices"),
    All,
    K("message"),
    K("tool_calls"),
    All,
    K("function"),
    K("arguments"),
];

/// The turns of a Chat Completions request (Ollama's `/api/chat` keeps them the same way).
pub const TURNS: Turns = Turns {
    key: "messages",
    is_user: role_user,
    content: "content",
};

fn error(status: u16, message: &str, kind: &str, code: Value, draw: u64) -> Synthetic {
    Synthetic::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
    .with("x-request-id", request_id("req_", draw))
}

impl Wire for OpenAi {
    fn owns_host(&self, host: &str) -> bool {
        host == "api.openai.com" || host.ends_with(".openai.azure.com")
    }

    /// `/chat/completions` and `/completions` also cover Azure's
    /// `/openai/deployments/{d}/…`, `/embeddings` every OpenAI-compatible server's.
    fn endpoints(&self) -> &'static [(&'static str, Api)] {
        &[
            ("/chat/completions", Api::Generate(Provider::Openai)),
            ("/completions", Api::Generate(Provider::Openai)),
            ("/v1/responses", Api::Generate(Provider::Openai)),
            ("/openai/responses", Api::Generate(Provider::Openai)),
            ("/embeddings", Api::Embed(Provider::Openai)),
        ]
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
        Some(&OpenAi)
    }

    fn classify(&self, ev: &Event) -> Kind {
        if ev.data.trim() == "[DONE]" {
            return Kind::Terminal;
        }
        if let Some(name) = ev.name.as_deref() {
            return match name {
                "response.completed" | "response.incomplete" | "response.failed" => Kind::Terminal,
                n if n.ends_with(".delta") => Kind::Content,
                _ => Kind::Meta,
            };
        }
        let choices = ev
            .json
            .as_ref()
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

    fn for_each_text(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut String)) {
        if responses::is_responses(v) {
            return responses::for_each_text(v, f);
        }
        visit_strings(v, if stream { STREAM_TEXT } else { TEXT }, f)
    }

    fn calls(&self, stream: bool) -> &'static [&'static Call] {
        if stream { &STREAM_CALLS } else { &CALLS }
    }

    fn for_each_tool_args(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut Value)) {
        if responses::is_responses(v) {
            if let Some(fragment) = responses::args_fragment(v) {
                return f(fragment);
            }
            return responses::for_each_call(v, &mut |item| {
                if let Some(a) = item.get_mut("arguments") {
                    f(a)
                }
            });
        }
        visit(v, if stream { STREAM_ARGS } else { ARGS }, f)
    }

    fn mark_truncated(&self, v: &mut Value) {
        if responses::is_responses(v) {
            return responses::mark_incomplete(v, "max_output_tokens");
        }
        visit(v, &[K("choices"), All], &mut |c| {
            if let Some(c) = c.as_object_mut() {
                c.insert("finish_reason".into(), json!("length"));
            }
        })
    }

    fn truncation_closes(&self, v: &Value) -> bool {
        v["done"] == true
    }

    fn truncation_tail(&self, ev: &Event, last: &Value, _tokens: u32) -> Vec<Event> {
        let mut finish = completions::finish_chunk(last, "length");
        if !completions::is_completion(last) {
            finish["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": "length"}]);
        }
        vec![ev.sibling(None, finish), ev.raw_sibling(None, "[DONE]")]
    }

    fn stream_error(&self, ev: &Event, progress: &Progress, form: ResponsesEvent) -> Event {
        if ev.json.as_ref().is_some_and(responses::is_responses) {
            return match form {
                ResponsesEvent::Failed => responses::failed_event(ev, progress),
                ResponsesEvent::Error => responses::error_event(ev, progress),
            };
        }
        ev.sibling(
            None,
            json!({"error": {"message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error", "param": null, "code": null}}),
        )
    }

    /// Chat Completions: `usage` {`prompt_tokens`, `completion_tokens`} of the answer, or of
    /// a stream's last chunk (sent only when the request asked `stream_options:
    /// {include_usage: true}`); the Responses API: `usage` {`input_tokens`, `output_tokens`}
    /// of the response, whole or carried by `response.completed` (`.incomplete`, `.failed`).
    fn usage(&self, v: &Value, into: &mut crate::exchange::Usage) {
        use super::usage::{count, note};
        if responses::is_responses(v) {
            let r = v.get("response").filter(|r| r.is_object()).unwrap_or(v);
            if let Some(u) = r.get("usage").filter(|u| u.is_object()) {
                let (i, o) = (count(u, "input_tokens"), count(u, "output_tokens"));
                note(into, i, o, r.get("model"));
            }
            return;
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            let (i, o) = (count(u, "prompt_tokens"), count(u, "completion_tokens"));
            note(into, i, o, v.get("model"));
        }
    }

    fn garbage_event(&self) -> Option<&'static str> {
        None
    }

    fn has_filter_signal(&self) -> bool {
        true
    }

    fn mark_filtered(&self, v: &mut Value, signal: FilterSignal) {
        filter::mark(v, signal)
    }

    fn filter_tail(&self, ev: &Event, progress: &Progress, signal: FilterSignal) -> Vec<Event> {
        filter::tail(ev, progress, signal)
    }

    fn prompt_blocked(&self, draw: u64) -> Option<Synthetic> {
        Some(filter::prompt_blocked(draw))
    }

    fn malformed_call(&self, _v: &mut Value) -> Option<bool> {
        None
    }

    fn gateway_timeout(&self, draw: u64) -> Synthetic {
        error(504, "Gateway timeout.", "server_error", Value::Null, draw)
    }

    fn rate_limit(&self, retry_after_s: f64, quota: bool, draw: u64) -> Synthetic {
        if quota {
            return error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                json!("insufficient_quota"),
                draw,
            )
            .with("x-should-retry", "false");
        }
        let secs = format_secs(retry_after_s);
        let ms = (retry_after_s * 1000.0).round().max(0.0) as u64;
        let message = format!("Rate limit reached for requests. Please try again in {secs}s.");
        let s = Synthetic::json(
            429,
            json!({"error": {"message": message, "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        );
        s.with("retry-after", secs.clone())
            .with("retry-after-ms", ms.to_string())
            .with("x-ratelimit-limit-requests", "500")
            .with("x-ratelimit-remaining-requests", "0")
            .with("x-ratelimit-reset-requests", format!("{secs}s"))
            .with("x-request-id", request_id("req_", draw))
    }

    fn server_error(&self, status: Option<u16>, draw: u64) -> Synthetic {
        let message = "The server had an error while processing your request. Sorry about that!";
        error(
            status.unwrap_or(503),
            message,
            "server_error",
            Value::Null,
            draw,
        )
    }

    fn client_error(&self, kind: ClientErrorKind, draw: u64) -> Synthetic {
        match kind {
            ClientErrorKind::Unauthorized => error(
                401,
                "Incorrect API key provided: sk-proj-****************************fl4k. You can find your API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                json!("invalid_api_key"),
                draw,
            ),
            // OpenAI has no 402: an account out of credit gets the non-retryable 429.
            ClientErrorKind::PaymentRequired => self.rate_limit(0.0, true, draw),
            ClientErrorKind::Forbidden => error(
                403,
                "Country, region, or territory not supported",
                "request_forbidden",
                json!("unsupported_country_region_territory"),
                draw,
            ),
            ClientErrorKind::ModelNotFound => error(
                404,
                "The model requested does not exist or you do not have access to it.",
                "invalid_request_error",
                json!("model_not_found"),
                draw,
            ),
            ClientErrorKind::RequestTooLarge => error(
                413,
                "Request too large: the request body exceeds the maximum size allowed.",
                "invalid_request_error",
                Value::Null,
                draw,
            ),
        }
    }

    fn context_overflow(&self, draw: u64) -> ContextOverflow {
        let message = "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.";
        let s = Synthetic::json(
            400,
            json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}}),
        );
        ContextOverflow::Reject(s.with("x-request-id", request_id("req_", draw)))
    }

    fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value> {
        TURNS.last_user_content(body)
    }

    fn for_each_tool_result(&self, body: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
        TURNS.for_each_tool_result(body, f, tool_message)
    }

    fn add_system(&self, body: &mut Value, text: &str) -> bool {
        add_system_message(body, text)
    }

    fn insert_turns(&self, body: &mut Value, user: &str, assistant: &str) -> bool {
        let (u, a) = content_turns(user, assistant);
        TURNS.insert_before_last_user(body, u, a)
    }
}
