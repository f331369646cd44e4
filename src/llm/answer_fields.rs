//! What an LLM call's bodies say that its exchange record does not (its span's GenAI
//! attributes, `crate::otel`): the model a request asked for and the one that answered,
//! the finish reasons of an answer, the provider's error code on a failed call. Read whole
//! (JSON, or Gemini's JSON array of chunks) or event by event (SSE, NDJSON), by the keys every provider uses; nothing here
//! fails: what cannot be read is absent.

use serde_json::Value;

/// The parsed JSON documents of a body: itself, or each event of a stream.
pub fn documents(body: &[u8]) -> Vec<Value> {
    let trimmed = body.trim_ascii_start();
    if trimmed.starts_with(b"{")
        && let Ok(v) = serde_json::from_slice(trimmed)
    {
        return vec![v];
    }
    // Gemini's `streamGenerateContent` without `alt=sse`: one JSON array of chunks.
    if trimmed.starts_with(b"[")
        && let Ok(Value::Array(chunks)) = serde_json::from_slice(trimmed)
    {
        return chunks;
    }
    crate::llm::frame::events(body)
        .filter_map(|e| e.json)
        .collect()
}

/// The model a request asked for: Gemini names it in the path (`/models/NAME:verb`), the
/// others in the body's `model`.
pub fn request_model(url: &str, request: &[Value]) -> Option<String> {
    if let Some(rest) = url.split("/models/").nth(1) {
        let name: String = rest
            .chars()
            .take_while(|c| !matches!(c, ':' | '/' | '?'))
            .collect();
        if !name.is_empty() {
            return Some(name);
        }
    }
    request.first()?.get("model")?.as_str().map(str::to_string)
}

/// The model an answer names (`model`, Gemini's `modelVersion`, the Responses API's
/// `response.model`).
pub fn response_model(docs: &[Value]) -> Option<String> {
    docs.iter().find_map(|d| {
        ["model", "modelVersion"]
            .iter()
            .find_map(|k| d.get(k).and_then(Value::as_str))
            .or_else(|| d.pointer("/message/model").and_then(Value::as_str))
            .or_else(|| d.pointer("/response/model").and_then(Value::as_str))
            .map(str::to_string)
    })
}

/// Keys under which providers say why generation stopped: OpenAI's `finish_reason`,
/// Anthropic's `stop_reason`, Gemini's `finishReason`, Ollama's `done_reason`.
const FINISH_KEYS: [&str; 4] = [
    "finish_reason",
    "stop_reason",
    "finishReason",
    "done_reason",
];

/// Every finish reason the answer gave, in order, each once.
pub fn finish_reasons(docs: &[Value]) -> Vec<String> {
    let mut out = vec![];
    for d in docs {
        collect_finish(d, 0, &mut out);
    }
    out
}

fn collect_finish(v: &Value, depth: usize, out: &mut Vec<String>) {
    // Finish reasons sit at most four levels down (`candidates[0].finishReason`,
    // `choices[0].finish_reason`, `delta.stop_reason`); tool arguments below are not read.
    if depth > 4 {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match v.as_str() {
                    Some(s) if FINISH_KEYS.contains(&k.as_str()) => {
                        if !out.iter().any(|o| o == s) {
                            out.push(s.to_string());
                        }
                    }
                    Some(_) | None => collect_finish(v, depth + 1, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_finish(i, depth + 1, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// The provider's code for a failed call: OpenAI's `error.code` (else `error.type`),
/// Gemini's `error.status`, Anthropic's `error.type`; in a stream, its error event's.
pub fn error_code(docs: &[Value]) -> Option<String> {
    docs.iter().find_map(|d| {
        let e = d.get("error")?;
        ["code", "status", "type"]
            .iter()
            .find_map(|k| e.get(k).and_then(Value::as_str))
            .map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn models_from_the_path_or_the_body() {
        let url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
        assert_eq!(request_model(url, &[]).as_deref(), Some("gemini-2.5-flash"));
        let body = [json!({"model": "gpt-4o-mini", "messages": []})];
        assert_eq!(
            request_model("https://api.openai.com/v1/chat/completions", &body).as_deref(),
            Some("gpt-4o-mini")
        );
    }

    #[test]
    fn finish_reasons_of_each_provider_whole_and_streamed() {
        let sse = b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
        assert_eq!(finish_reasons(&documents(sse)), ["tool_calls"]);
        let anthropic = b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n";
        assert_eq!(finish_reasons(&documents(anthropic)), ["end_turn"]);
        let gemini =
            br#"{"candidates":[{"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash"}"#;
        let docs = documents(gemini);
        assert_eq!(finish_reasons(&docs), ["STOP"]);
        assert_eq!(response_model(&docs).as_deref(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn error_codes_as_each_provider_writes_them() {
        let openai =
            br#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            error_code(&documents(openai)).as_deref(),
            Some("rate_limit_exceeded")
        );
        let anthropic = br#"{"type":"error","error":{"type":"rate_limit_error","message":"x"}}"#;
        assert_eq!(
            error_code(&documents(anthropic)).as_deref(),
            Some("rate_limit_error")
        );
        let gemini = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(
            error_code(&documents(gemini)).as_deref(),
            Some("RESOURCE_EXHAUSTED")
        );
        assert_eq!(error_code(&documents(b"upstream said no")), None);
    }
}
