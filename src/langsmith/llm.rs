//! A trace's `llm` runs as HAR tape entries, so a replay can answer the agent's LLM calls
//! too. LangSmith keeps what the model was asked and answered, not the HTTP exchange, so
//! each entry is rebuilt: runs traced by the SDK's OpenAI/Anthropic wrappers hold the
//! provider's own request (`inputs`) and answer (`outputs`), kept as they are; LangChain
//! chat-model runs (`outputs.generations`) get a provider wire answer built from the
//! generation's text and tool calls, and a request body of `model` and `messages`. The URL
//! is the provider's public endpoint (`ls_provider`: openai, anthropic). Other providers are
//! left out, named in the import's notes.

use serde_json::{Value, json};

use super::run::{Run, lookup};
use super::session::message_text;
use crate::tape::har::{Cache, Content, Entry, NameValue, PostData, Request, Response, Timings};

/// The tape entry of an `llm` run, or why it has none (a note, not an error).
pub fn entry(r: &Run) -> Result<Result<Entry, String>, String> {
    // An LLM call that failed (a 429, a timeout, a filter) or never ended has no answer to
    // rebuild: the replay's call follows `on_miss`. One such run must not sink the import.
    if r.errored || r.outputs.is_null() {
        let why = r.error.as_deref().unwrap_or("no outputs");
        let why = why.lines().next().unwrap_or_default();
        return Ok(Err(format!(
            "llm run {} ({}): no tape entry: the run has no answer ({why}); the replay's \
             LLM call follows replays.on_miss",
            r.id, r.name
        )));
    }
    let provider = provider(r);
    let (url, request, response) = match provider.as_str() {
        "openai" => {
            let response = if r.outputs.get("choices").is_some() {
                r.outputs.clone()
            } else {
                openai_answer(r)?
            };
            let request = wire_request(r, false);
            (
                "https://api.openai.com/v1/chat/completions",
                request,
                response,
            )
        }
        "anthropic" => {
            let response = if r.outputs.get("type").and_then(Value::as_str) == Some("message") {
                r.outputs.clone()
            } else {
                anthropic_answer(r)?
            };
            let request = wire_request(r, true);
            ("https://api.anthropic.com/v1/messages", request, response)
        }
        other => {
            return Ok(Err(format!(
                "llm run {} ({}): no tape entry: provider `{other}` (flakestorm rebuilds \
                 OpenAI and Anthropic answers only)",
                r.id, r.name
            )));
        }
    };
    Ok(Ok(rebuilt(r, url, &request, &response, provider)))
}

/// The tape entry of LLM run `r`: a `POST` of `request` to `url`, answered 200 with
/// `response` after the run's latency.
fn rebuilt(r: &Run, url: &str, request: &Value, response: &Value, provider: String) -> Entry {
    let latency = r.latency_ms() as f64;
    let body = response.to_string();
    let req = request.to_string();
    Entry {
        started_date_time: crate::tape::write::iso8601(r.start_ms),
        time: latency,
        request: Request {
            method: "POST".into(),
            url: url.into(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: vec![header("content-type", "application/json")],
            query_string: vec![],
            body_size: req.len() as i64,
            post_data: Some(PostData {
                mime_type: "application/json".into(),
                params: vec![],
                text: req,
                encoding: None,
            }),
            headers_size: -1,
        },
        response: Response {
            status: 200,
            status_text: "OK".into(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: vec![header("content-type", "application/json")],
            content: Content {
                size: body.len() as i64,
                mime_type: "application/json".into(),
                text: Some(body.clone()),
                encoding: None,
                events: vec![],
                truncated: false,
            },
            redirect_url: String::new(),
            headers_size: -1,
            body_size: body.len() as i64,
        },
        cache: Cache {},
        timings: waited(latency),
        id: None,
        target: Some(provider),
        case: None,
        fault: None,
        attacks: vec![],
        mcp: None,
        comment: Some(format!(
            "rebuilt from LangSmith llm run {} ({})",
            r.id, r.name
        )),
        error: None,
    }
}

/// HAR timings of a call that waited `latency` ms for its answer (nothing else is known).
fn waited(latency: f64) -> Timings {
    Timings {
        blocked: -1.0,
        dns: -1.0,
        connect: -1.0,
        send: 0.0,
        wait: latency,
        receive: 0.0,
        ssl: -1.0,
    }
}

fn header(name: &str, value: &str) -> NameValue {
    NameValue {
        name: name.into(),
        value: value.into(),
    }
}

/// `extra.metadata.ls_provider`, else guessed from `extra.invocation_params._type`.
fn provider(r: &Run) -> String {
    if let Some(p) = lookup(&r.extra, "metadata.ls_provider").and_then(Value::as_str) {
        return p.to_ascii_lowercase();
    }
    let kind = lookup(&r.extra, "invocation_params._type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    ["openai", "anthropic"]
        .into_iter()
        .find(|p| kind.contains(p))
        .unwrap_or("unknown")
        .to_string()
}

fn model(r: &Run) -> Value {
    lookup(&r.extra, "metadata.ls_model_name")
        .or_else(|| lookup(&r.extra, "invocation_params.model"))
        .or_else(|| lookup(&r.extra, "invocation_params.model_name"))
        .or_else(|| r.inputs.get("model"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The request: the wrapper's own (inputs with `messages` and `model`), else `model` and
/// the messages in the provider's shape.
fn wire_request(r: &Run, anthropic: bool) -> Value {
    let own = r.inputs.get("model").is_some() && r.inputs.get("messages").is_some();
    if own {
        return r.inputs.clone();
    }
    let list = match r.inputs.get("messages") {
        Some(Value::Array(l)) => match l.first() {
            Some(Value::Array(batch)) => batch.clone(),
            _ => l.clone(),
        },
        _ => vec![],
    };
    let mut system = vec![];
    let mut messages = vec![];
    for m in &list {
        let role = role(m);
        let text = message_text(m).unwrap_or_default();
        if anthropic && role == "system" {
            system.push(text);
        } else {
            messages.push(json!({"role": role, "content": text}));
        }
    }
    let mut body = json!({"model": model(r), "messages": messages});
    if anthropic && !system.is_empty() {
        body["system"] = json!(system.join("\n"));
    }
    body
}

/// A message's role: its `role`, or LangChain's message class.
fn role(m: &Value) -> String {
    if let Some(r) = m.get("role").and_then(Value::as_str) {
        return r.into();
    }
    let kind = m
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| {
            lookup(m, "id")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(Value::as_str)
        })
        .unwrap_or_default();
    match kind {
        "system" | "SystemMessage" => "system",
        "ai" | "AIMessage" => "assistant",
        "tool" | "ToolMessage" => "tool",
        _ => "user",
    }
    .into()
}

/// The first generation, or an error naming `outputs.generations`.
fn generation(r: &Run) -> Result<&Value, String> {
    let g = r.output("generations.0")?;
    match g.as_array() {
        Some(batch) => batch
            .first()
            .ok_or_else(|| format!("run {}: outputs.generations.0.0 missing", r.id)),
        None => Ok(g),
    }
}

/// The generation's text and tool calls (`{id, name, args}`).
fn text_and_calls(r: &Run) -> Result<(String, Vec<Value>), String> {
    let g = generation(r)?;
    let message = g.get("message");
    let text = g
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| message.and_then(message_text))
        .ok_or_else(|| format!("run {}: outputs.generations.0.text missing", r.id))?;
    let calls = message
        .and_then(|m| lookup(m, "kwargs.tool_calls").or_else(|| m.get("tool_calls")))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok((text, calls))
}

fn tokens(r: &Run, field: &str) -> u64 {
    r.raw.get(field).and_then(Value::as_u64).unwrap_or(0)
}

/// An OpenAI chat completion from a LangChain generation.
fn openai_answer(r: &Run) -> Result<Value, String> {
    let (text, calls) = text_and_calls(r)?;
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"id": c.get("id"), "type": "function", "function": {
                    "name": c.get("name"),
                    "arguments": c.get("args").map_or("{}".into(), Value::to_string),
                }})
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let (prompt, completion) = (tokens(r, "prompt_tokens"), tokens(r, "completion_tokens"));
    Ok(json!({
        "id": format!("chatcmpl-{}", r.id),
        "object": "chat.completion",
        "created": r.start_ms / 1000,
        "model": model(r),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }))
}

/// An Anthropic message from a LangChain generation.
fn anthropic_answer(r: &Run) -> Result<Value, String> {
    let (text, calls) = text_and_calls(r)?;
    let mut content = vec![json!({"type": "text", "text": text})];
    for c in &calls {
        content.push(json!({"type": "tool_use", "id": c.get("id"), "name": c.get("name"), "input": c.get("args")}));
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    Ok(json!({
        "id": format!("msg_{}", r.id),
        "type": "message",
        "role": "assistant",
        "model": model(r),
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": tokens(r, "prompt_tokens"), "output_tokens": tokens(r, "completion_tokens")},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(extra: Value, inputs: Value, outputs: Value) -> Run {
        Run::parse(&json!({"id": "l1", "name": "m", "run_type": "llm",
            "start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:00:01",
            "extra": extra, "inputs": inputs, "outputs": outputs}))
        .unwrap()
    }

    /// An LLM call that failed has no answer to rebuild: a note, and the import goes on.
    #[test]
    fn an_errored_llm_run_is_a_note_not_an_error() {
        let r = Run::parse(&json!({"id": "l2", "name": "ChatOpenAI", "run_type": "llm",
            "start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:00:01",
            "error": "RateLimitError: 429 Too Many Requests\nTraceback…",
            "extra": {"metadata": {"ls_provider": "openai"}},
            "inputs": {"messages": []}, "outputs": null}))
        .unwrap();
        let note = entry(&r).unwrap().unwrap_err();
        assert!(
            note.contains("l2 (ChatOpenAI)") && note.contains("RateLimitError: 429"),
            "{note}"
        );
        assert!(!note.contains("Traceback"), "one line: {note}");
    }

    /// A run traced by the SDK's OpenAI wrapper holds the request and answer themselves.
    #[test]
    fn a_wrapped_openai_call_is_kept_as_it_was() {
        let inputs = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 0});
        let outputs = json!({"id": "chatcmpl-9", "choices": [{"message": {"role": "assistant", "content": "yo"}}]});
        let r = llm(
            json!({"metadata": {"ls_provider": "openai"}}),
            inputs.clone(),
            outputs.clone(),
        );
        let e = entry(&r).unwrap().unwrap();
        let sent: Value = serde_json::from_str(&e.request.post_data.unwrap().text).unwrap();
        let got: Value = serde_json::from_str(&e.response.content.text.unwrap()).unwrap();
        assert_eq!((sent, got, e.time), (inputs, outputs, 1000.0));
    }

    /// The rebuilt entry answers the agent's request from a tape when the keys agree: a
    /// field the SDK adds matches only once it is ignored.
    #[test]
    fn a_rebuilt_entry_answers_the_same_request_from_a_tape() {
        use crate::tape::{RequestKey, TapeTable};
        let inputs = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
        let outputs = json!({"choices": [{"message": {"role": "assistant", "content": "yo"}}]});
        let r = llm(
            json!({"metadata": {"ls_provider": "openai"}}),
            inputs,
            outputs.clone(),
        );
        let mut har = crate::tape::write::empty(None);
        har.log.entries.push(entry(&r).unwrap().unwrap());
        let url = "https://api.openai.com/v1/chat/completions";
        let sent = br#"{"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o", "stream_options": null}"#;
        let ignore = vec!["stream_options".to_string()];
        let strict = TapeTable::new(&har, &[]);
        assert!(
            strict
                .answer(&RequestKey::new("POST", url, sent, &[]))
                .is_none()
        );
        let table = TapeTable::new(&har, &ignore);
        let Some(a) = table.answer(&RequestKey::new("POST", url, sent, &ignore)) else {
            panic!("the tape did not answer the same request")
        };
        let body: Vec<u8> = a.pieces.iter().flat_map(|(_, b)| b.to_vec()).collect();
        assert_eq!(
            (a.status, serde_json::from_slice::<Value>(&body).unwrap()),
            (200, outputs)
        );
    }

    #[test]
    fn a_langchain_anthropic_run_becomes_a_messages_answer() {
        let inputs = json!({"messages": [[{"type": "system", "content": "be brief"}, {"type": "human", "content": "hi"}]]});
        let outputs = json!({"generations": [[{"text": "hello"}]]});
        let extra = json!({"invocation_params": {"_type": "anthropic-chat", "model": "claude-x"}});
        let e = entry(&llm(extra, inputs, outputs)).unwrap().unwrap();
        assert_eq!(e.request.url, "https://api.anthropic.com/v1/messages");
        let sent: Value = serde_json::from_str(&e.request.post_data.unwrap().text).unwrap();
        assert_eq!(
            sent,
            json!({"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], "system": "be brief"})
        );
        let got: Value = serde_json::from_str(&e.response.content.text.unwrap()).unwrap();
        assert_eq!(
            (&got["content"], &got["stop_reason"]),
            (
                &json!([{"type": "text", "text": "hello"}]),
                &json!("end_turn")
            )
        );
    }

    #[test]
    fn an_answer_without_generations_names_the_field() {
        let r = llm(
            json!({"metadata": {"ls_provider": "openai"}}),
            json!({}),
            json!({"text": "x"}),
        );
        assert_eq!(
            entry(&r).unwrap_err(),
            "run l1: outputs.generations.0 missing"
        );
    }
}
