//! Ollama's native API (provider-wire-formats.md §4): `/api/chat` (`message`) and
//! `/api/generate` (`prompt` / `response`), NDJSON streams whose last line is `done: true`,
//! `tool_calls` with object arguments, `{"error": …}` bodies; a prompt over the context
//! window is cut silently, not refused.

use crate::llm::signals::{ClientErrorKind, FilterSignal, ResponsesEvent};
use serde_json::{Value, json};

use super::detect::Api;
use super::frame::{Event, Framing};
use super::openai::{TURNS, add_system_message, content_turns, tool_message};
use super::path::{All, Call, K, Seg, visit, visit_strings};
use super::synthetic::{Synthetic, format_secs};
use super::wire::{ContextOverflow, Kind, Progress, Recap, Wire};
use crate::exchange::Provider;

pub struct Ollama;

/// What Ollama answers when the model's tool call does not parse as JSON (its tool
/// parser's `error parsing tool call: raw='…', err=…`, Go's `encoding/json` wording): 500
/// with `{"error": …}`, on streamed requests too, since the call is parsed before the
/// stream opens. The raw text is a call cut off mid-arguments.
pub fn tool_parse_error() -> Synthetic {
    let raw = r#"{"name": "lookup", "arguments": {"query": "Paris"#;
    Synthetic::json(
        500,
        json!({"error": format!("error parsing tool call: raw='{raw}', err=unexpected end of JSON input")}),
    )
}

static CALL: Call = Call {
    at: &[K("message"), K("tool_calls"), All],
    name: &["function", "name"],
    ids: &["id"],
    marker: "tool_calls",
};
static CALLS: [&Call; 1] = [&CALL];

const TEXT: &[&[Seg]] = &[&[K("message"), K("content")], &[K("response")]];
const ARGS: &[Seg] = &[
    K("message"),
    K("tool_calls"),
    All,
    K("function"),
    K("arguments"),
];

impl Wire for Ollama {
    /// Its default host is any `host:11434`: the path decides.
    fn owns_host(&self, _host: &str) -> bool {
        false
    }

    fn endpoints(&self) -> &'static [(&'static str, Api)] {
        &[]
    }

    fn exact_api(&self, path: &str) -> Option<Api> {
        match path {
            "/api/chat" | "/api/generate" => Some(Api::Generate(Provider::Ollama)),
            "/api/embed" | "/api/embeddings" => Some(Api::Embed(Provider::Ollama)),
            "/api/tags" | "/api/show" | "/api/ps" | "/api/version" | "/api/pull" | "/api/push"
            | "/api/create" | "/api/copy" | "/api/delete" => Some(Api::Auxiliary),
            _ if path.starts_with("/api/blobs/") => Some(Api::Auxiliary),
            _ => None,
        }
    }

    fn method_api(&self, _method: &str) -> Option<Api> {
        None
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn recap(&self) -> Option<&'static dyn Recap> {
        None
    }

    fn classify(&self, ev: &Event) -> Kind {
        if ev.json.as_ref().is_some_and(|j| j["done"] == json!(true)) {
            Kind::Finish
        } else {
            Kind::Content
        }
    }

    fn for_each_text(&self, v: &mut Value, _stream: bool, f: &mut dyn FnMut(&mut String)) {
        visit_strings(v, TEXT, f)
    }

    fn calls(&self, _stream: bool) -> &'static [&'static Call] {
        &CALLS
    }

    fn for_each_tool_args(&self, v: &mut Value, _stream: bool, f: &mut dyn FnMut(&mut Value)) {
        visit(v, ARGS, f)
    }

    fn mark_truncated(&self, v: &mut Value) {
        v["done"] = json!(true);
        v["done_reason"] = json!("length");
    }

    fn truncation_closes(&self, v: &Value) -> bool {
        v["done"] == true
    }

    fn truncation_tail(&self, ev: &Event, last: &Value, tokens: u32) -> Vec<Event> {
        let mut done = json!({"model": last["model"], "created_at": last["created_at"], "done": true,
            "done_reason": "length", "eval_count": tokens});
        if last.get("response").is_some() {
            done["response"] = json!("");
        } else {
            done["message"] = json!({"role": "assistant", "content": ""});
        }
        vec![ev.sibling(None, done)]
    }

    fn stream_error(&self, ev: &Event, _progress: &Progress, _form: ResponsesEvent) -> Event {
        ev.sibling(
            None,
            json!({"error": "model runner has unexpectedly stopped"}),
        )
    }

    /// `prompt_eval_count` and `eval_count` of the answer or of a stream's `done` line
    /// (Ollama leaves `prompt_eval_count` out when the whole prompt came from its cache).
    fn usage(&self, v: &Value, into: &mut crate::exchange::Usage) {
        use super::usage::{count, note};
        let (i, o) = (count(v, "prompt_eval_count"), count(v, "eval_count"));
        note(into, i, o, v.get("model"));
    }

    fn garbage_event(&self) -> Option<&'static str> {
        None
    }

    /// A local model has no content filter: it refuses in plain text, if at all.
    fn has_filter_signal(&self) -> bool {
        false
    }

    fn mark_filtered(&self, _v: &mut Value, _signal: FilterSignal) {}

    fn filter_tail(&self, _ev: &Event, _progress: &Progress, _signal: FilterSignal) -> Vec<Event> {
        vec![]
    }

    fn prompt_blocked(&self, _draw: u64) -> Option<Synthetic> {
        None
    }

    /// Never reached: Ollama answers a call it cannot parse with an error, not a body
    /// (`tool_parse_error`, sent before forwarding), so there is no answer to rewrite.
    fn malformed_call(&self, _v: &mut Value) -> Option<bool> {
        Some(false)
    }

    fn gateway_timeout(&self, _draw: u64) -> Synthetic {
        Synthetic::json(504, json!({"error": "timed out waiting for the model"}))
    }

    fn rate_limit(&self, retry_after_s: f64, _quota: bool, _draw: u64) -> Synthetic {
        Synthetic::json(429, json!({"error": "too many requests"}))
            .with("retry-after", format_secs(retry_after_s))
    }

    fn server_error(&self, status: Option<u16>, _draw: u64) -> Synthetic {
        Synthetic::json(
            status.unwrap_or(500),
            json!({"error": "model runner has unexpectedly stopped"}),
        )
    }

    fn client_error(&self, kind: ClientErrorKind, _draw: u64) -> Synthetic {
        // Ollama answers every error as `{"error": text}` with its status.
        let (status, text) = match kind {
            ClientErrorKind::Unauthorized => (401, "unauthorized"),
            ClientErrorKind::PaymentRequired => (402, "payment required"),
            ClientErrorKind::Forbidden => (403, "forbidden"),
            ClientErrorKind::ModelNotFound => (404, "model not found, try pulling it first"),
            ClientErrorKind::RequestTooLarge => (413, "request entity too large"),
        };
        Synthetic::json(status, json!({"error": text}))
    }

    fn context_overflow(&self, _draw: u64) -> ContextOverflow {
        ContextOverflow::DropEarlyTurns
    }

    fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value> {
        if body.get("prompt").is_some() {
            return body.get_mut("prompt");
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_parse_failure_is_ollamas_500_with_its_wording() {
        let s = tool_parse_error();
        assert_eq!(s.status, 500);
        assert_eq!(
            s.headers,
            [("content-type", "application/json".to_string())]
        );
        let v: Value = serde_json::from_slice(&s.body).unwrap();
        let e = v["error"].as_str().unwrap();
        assert!(e.starts_with("error parsing tool call: raw='{"), "{e}");
        assert!(e.ends_with("', err=unexpected end of JSON input"), "{e}");
    }

    #[test]
    fn there_is_no_content_filter_signal() {
        assert!(!Ollama.has_filter_signal());
        assert!(Ollama.prompt_blocked(0).is_none());
    }
}
