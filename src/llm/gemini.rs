//! Google Gemini's `generateContent` (provider-wire-formats.md §3; Vertex AI the same):
//! `candidates[].content.parts[]`, SSE chunks whose last carries `finishReason`,
//! `functionCall` / `functionResponse` parts, `contents` turns with role `model`, a
//! `systemInstruction`, errors in google.rpc style.

use crate::llm::signals::{ClientErrorKind, FilterSignal, ResponsesEvent};
use bytes::Bytes;
use serde_json::{Value, json};

use super::detect::Api;
use super::frame::{Event, Framing};
use super::longest_string;
use super::path::{All, Call, K, Seg, visit, visit_strings};
use super::request::{Turns, role_user};
use super::synthetic::{Synthetic, format_secs};
use super::wire::{ContextOverflow, Kind, Progress, Recap, Wire};
use crate::exchange::Provider;

pub struct Gemini;

/// The part is the call (its id, if any, sits beside `functionCall`).
static CALL: Call = Call {
    at: &[K("candidates"), All, K("content"), K("parts"), All],
    name: &["functionCall", "name"],
    ids: &["id"],
    marker: "functionCall",
};
static CALLS: [&Call; 1] = [&CALL];

const TEXT: &[&[Seg]] = &[&[
    K("candidates"),
    All,
    K("content"),
    K("parts"),
    All,
    K("text"),
]];
const ARGS: &[Seg] = &[
    K("candidates"),
    All,
    K("content"),
    K("parts"),
    All,
    K("functionCall"),
    K("args"),
];

const TURNS: Turns = Turns {
    key: "contents",
    is_user: role_user,
    content: "parts",
};

fn tool_results(m: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
    let mut n = 0;
    for part in m["parts"].as_array_mut().into_iter().flatten() {
        if let Some(resp) = part
            .get_mut("functionResponse")
            .and_then(|r| r.get_mut("response"))
        {
            n += 1;
            longest_string(resp, f);
        }
    }
    n
}

/// The four harm categories Gemini rates; `blocked`: dangerous content rated `HIGH` and
/// marked as what blocked the text.
fn safety_ratings(blocked: bool) -> Value {
    let negligible = |c: &str| json!({"category": c, "probability": "NEGLIGIBLE"});
    let dangerous = if blocked {
        json!({"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true})
    } else {
        negligible("HARM_CATEGORY_DANGEROUS_CONTENT")
    };
    json!([
        negligible("HARM_CATEGORY_SEXUALLY_EXPLICIT"),
        negligible("HARM_CATEGORY_HATE_SPEECH"),
        negligible("HARM_CATEGORY_HARASSMENT"),
        dangerous
    ])
}

fn error(status: u16, kind: &str, message: &str) -> Synthetic {
    Synthetic::json(
        status,
        json!({"error": {"code": status, "message": message, "status": kind}}),
    )
}

impl Wire for Gemini {
    fn owns_host(&self, host: &str) -> bool {
        host == "generativelanguage.googleapis.com" || host.ends_with("-aiplatform.googleapis.com")
    }

    fn endpoints(&self) -> &'static [(&'static str, Api)] {
        &[]
    }

    fn exact_api(&self, _path: &str) -> Option<Api> {
        None
    }

    /// `models/{m}:method` (Vertex: `…/publishers/google/models/{m}:method`).
    fn method_api(&self, method: &str) -> Option<Api> {
        match method {
            "generateContent" | "streamGenerateContent" => Some(Api::Generate(Provider::Gemini)),
            "embedContent" | "batchEmbedContents" => Some(Api::Embed(Provider::Gemini)),
            "countTokens" | "computeTokens" | "batchGenerateContent" | "asyncBatchEmbedContent" => {
                Some(Api::Auxiliary)
            }
            _ => None,
        }
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn recap(&self) -> Option<&'static dyn Recap> {
        None
    }

    fn classify(&self, ev: &Event) -> Kind {
        let done = ev
            .json
            .as_ref()
            .and_then(|j| j["candidates"].as_array())
            .is_some_and(|c| c.iter().any(|c| c.get("finishReason").is_some()));
        if done { Kind::Finish } else { Kind::Content }
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
        visit(v, &[K("candidates"), All], &mut |c| {
            if let Some(c) = c.as_object_mut() {
                c.insert("finishReason".into(), json!("MAX_TOKENS"));
            }
        })
    }

    /// Every chunk can be the last: the trimmed one carries the finish reason itself.
    fn truncation_closes(&self, _v: &Value) -> bool {
        true
    }

    fn truncation_tail(&self, _ev: &Event, _last: &Value, _tokens: u32) -> Vec<Event> {
        vec![]
    }

    fn stream_error(&self, ev: &Event, _progress: &Progress, _form: ResponsesEvent) -> Event {
        ev.sibling(
            None,
            json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}),
        )
    }

    /// `usageMetadata` of an answer or a stream chunk (cumulative; the last chunk has them
    /// all): `promptTokenCount` (+ `toolUsePromptTokenCount`) in, `candidatesTokenCount`
    /// (+ `thoughtsTokenCount`) out; the model is `modelVersion`.
    fn usage(&self, v: &Value, into: &mut crate::exchange::Usage) {
        use super::usage::{count, note, sum};
        let Some(u) = v.get("usageMetadata").filter(|u| u.is_object()) else {
            return;
        };
        let input = sum(&[
            count(u, "promptTokenCount"),
            count(u, "toolUsePromptTokenCount"),
        ]);
        let output = sum(&[
            count(u, "candidatesTokenCount"),
            count(u, "thoughtsTokenCount"),
        ]);
        note(into, input, output, v.get("modelVersion"));
    }

    fn garbage_event(&self) -> Option<&'static str> {
        None
    }

    fn has_filter_signal(&self) -> bool {
        true
    }

    /// A blocked prompt is a 200 with `promptFeedback.blockReason` and no candidates; a
    /// stopped answer a candidate without content, `finishReason` `SAFETY` (a refusal too:
    /// Gemini has no other) or `RECITATION`, with the ratings that decided it.
    fn mark_filtered(&self, v: &mut Value, signal: FilterSignal) {
        let reason = match signal {
            FilterSignal::BlockedPrompt => {
                *v = json!({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": safety_ratings(true)},
                    "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
                    "modelVersion": v["modelVersion"], "responseId": v["responseId"]});
                return;
            }
            FilterSignal::Recitation => "RECITATION",
            FilterSignal::Filtered | FilterSignal::Refusal => "SAFETY",
        };
        visit(v, &[K("candidates"), All], &mut |c| {
            if let Some(c) = c.as_object_mut() {
                c.remove("content");
                c.insert("finishReason".into(), json!(reason));
                c.insert(
                    "safetyRatings".into(),
                    safety_ratings(signal != FilterSignal::Recitation),
                );
            }
        })
    }

    /// One last chunk in the same style, marked as above; the stream ends with it.
    fn filter_tail(&self, ev: &Event, _progress: &Progress, signal: FilterSignal) -> Vec<Event> {
        let mut last = ev.json.clone().unwrap_or_else(|| json!({}));
        if last.get("candidates").is_none() {
            last["candidates"] = json!([{"index": 0}]);
        }
        self.mark_filtered(&mut last, signal);
        vec![ev.sibling(None, last)]
    }

    fn prompt_blocked(&self, _draw: u64) -> Option<Synthetic> {
        None
    }

    /// The call is gone and the candidate finishes with `MALFORMED_FUNCTION_CALL`.
    fn malformed_call(&self, v: &mut Value) -> Option<bool> {
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
        Some(changed)
    }

    fn gateway_timeout(&self, _draw: u64) -> Synthetic {
        error(
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired before operation could complete.",
        )
    }

    fn rate_limit(&self, retry_after_s: f64, _quota: bool, _draw: u64) -> Synthetic {
        let secs = format_secs(retry_after_s);
        let message = "Resource has been exhausted (e.g. check quota).";
        let mut s = error(429, "RESOURCE_EXHAUSTED", message);
        let retry = json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{secs}s")}]);
        s.body = Bytes::from(
            json!({"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": retry}})
                .to_string(),
        );
        s
    }

    fn client_error(&self, kind: ClientErrorKind, draw: u64) -> Synthetic {
        match kind {
            // The live API answers a bad key with 400, not 401.
            ClientErrorKind::Unauthorized => error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
            ),
            // No 402: an exhausted quota or spend cap is the 429.
            ClientErrorKind::PaymentRequired => self.rate_limit(30.0, true, draw),
            ClientErrorKind::Forbidden => error(
                403,
                "PERMISSION_DENIED",
                "The caller does not have permission",
            ),
            ClientErrorKind::ModelNotFound => error(
                404,
                "NOT_FOUND",
                "models/gemini-model is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
            ),
            // The live API answers an oversized body with 400.
            ClientErrorKind::RequestTooLarge => error(
                400,
                "INVALID_ARGUMENT",
                "Request payload size exceeds the limit: 20971520 bytes.",
            ),
        }
    }

    fn server_error(&self, status: Option<u16>, _draw: u64) -> Synthetic {
        match status.unwrap_or(503) {
            500 => error(
                500,
                "INTERNAL",
                "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            ),
            s => error(
                s,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
            ),
        }
    }

    fn context_overflow(&self, _draw: u64) -> ContextOverflow {
        ContextOverflow::Reject(error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
        ))
    }

    fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value> {
        TURNS.last_user_content(body)
    }

    fn for_each_tool_result(&self, body: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize {
        TURNS.for_each_tool_result(body, f, tool_results)
    }

    fn add_system(&self, body: &mut Value, text: &str) -> bool {
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

    fn insert_turns(&self, body: &mut Value, user: &str, assistant: &str) -> bool {
        let u = json!({"role": "user", "parts": [{"text": user}]});
        let a = json!({"role": "model", "parts": [{"text": assistant}]});
        TURNS.insert_before_last_user(body, u, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safety_recitation_and_a_blocked_prompt_are_geminis_shapes() {
        let answer = json!({"candidates": [{"index": 0, "finishReason": "STOP",
            "content": {"role": "model", "parts": [{"text": "Sure"}]}}], "modelVersion": "g", "responseId": "r1"});
        let mut v = answer.clone();
        Gemini.mark_filtered(&mut v, FilterSignal::Filtered);
        let c = &v["candidates"][0];
        assert_eq!(c["finishReason"], "SAFETY");
        assert!(c.get("content").is_none());
        assert_eq!(c["safetyRatings"][3]["blocked"], true);
        let mut v = answer.clone();
        Gemini.mark_filtered(&mut v, FilterSignal::Recitation);
        assert_eq!(v["candidates"][0]["finishReason"], "RECITATION");
        let mut v = answer;
        Gemini.mark_filtered(&mut v, FilterSignal::BlockedPrompt);
        assert!(v.get("candidates").is_none());
        assert_eq!(v["promptFeedback"]["blockReason"], "SAFETY");
        assert_eq!(v["responseId"], "r1");
        let frame = "data: {\"candidates\":[{\"index\":0,\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"x\"}]}}]}\r\n\r\n";
        let ev = Event::parse(frame.as_bytes(), Framing::Sse);
        let tail = Gemini.filter_tail(&ev, &Progress::default(), FilterSignal::Filtered);
        assert_eq!(tail.len(), 1);
        let bytes = String::from_utf8(tail[0].encode().to_vec()).unwrap();
        assert!(bytes.ends_with("\r\n\r\n"), "keeps Gemini's CRLF framing");
        assert!(bytes.contains(r#""finishReason":"SAFETY""#), "{bytes}");
    }
}
