use super::*;
use crate::chaos::spec::{Corruption, Direction, DriftType, Severity};
use serde_json::json;

pub(super) struct Run {
    pub(super) text: String,
    pub(super) outs: Vec<Out>,
    pub(super) skipped: Option<String>,
}

/// Feeds `chunks` through a rewriter and collects what the client would get.
pub(super) fn run(p: Provider, mode: LlmMode, ct: &str, chunks: &[String]) -> Run {
    run_capped(
        p,
        mode,
        ct,
        chunks,
        crate::chaos::budget::DEFAULT_MAX_REWRITE_BYTES,
    )
}

/// `run` with `max_rewrite` as `proxy.max_rewrite_bytes`.
fn run_capped(p: Provider, mode: LlmMode, ct: &str, chunks: &[String], max_rewrite: usize) -> Run {
    let mut r = LlmRewriter::new(p, mode, 7, ct, 1 << 20, max_rewrite);
    let mut outs = vec![];
    let ends = |o: &Out| matches!(o, Out::End | Out::Abort | Out::Fail(_));
    for c in chunks {
        outs.extend(r.push(c.as_bytes()));
        if outs.iter().any(ends) {
            break;
        }
    }
    if !outs.iter().any(ends) {
        outs.extend(r.finish());
    } else {
        let _ = r.finish();
    }
    let text = outs
        .iter()
        .filter_map(|o| {
            if let Out::Data(d) = o {
                Some(String::from_utf8_lossy(d).into_owned())
            } else {
                None
            }
        })
        .collect();
    Run {
        text,
        outs,
        skipped: r.skipped().map(str::to_string),
    }
}

pub(super) fn openai_stream(words: &[&str]) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut v = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    v.extend(
        words
            .iter()
            .map(|w| chunk(json!({"content": w}), Value::Null)),
    );
    v.push(chunk(json!({}), json!("stop")));
    v.push("data: [DONE]\n\n".into());
    v
}

/// The content and finish reasons a client would reassemble from OpenAI SSE output.
pub(super) fn openai_read(text: &str) -> (String, Vec<String>, bool) {
    let (mut content, mut finish, mut done) = (String::new(), vec![], false);
    for frame in text.split("\n\n").filter(|f| !f.is_empty()) {
        let data = frame.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let v: Value = serde_json::from_str(data).unwrap();
        content.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or(""));
        if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
            finish.push(f.to_string());
        }
    }
    (content, finish, done)
}

#[test]
fn openai_stream_truncated_at_max_tokens_ends_with_length() {
    let r = run(
        Provider::Openai,
        LlmMode::TruncatedResponse { max_tokens: 3 },
        "text/event-stream",
        &openai_stream(&["Hello", " brave new", " world today"]),
    );
    let (content, finish, done) = openai_read(&r.text);
    assert_eq!(content, "Hello brave new");
    assert_eq!(finish, ["length"]);
    assert!(done, "[DONE] still closes the stream");
    assert_eq!(r.outs.last(), Some(&Out::End));
    assert_eq!(r.skipped, None);
}

#[test]
fn short_answers_are_left_alone_and_reported() {
    let r = run(
        Provider::Openai,
        LlmMode::TruncatedResponse { max_tokens: 50 },
        "text/event-stream",
        &openai_stream(&["Hi", " there"]),
    );
    assert_eq!(
        openai_read(&r.text),
        ("Hi there".into(), vec!["stop".into()], true)
    );
    assert_eq!(
        r.skipped.as_deref(),
        Some("the answer was shorter than max_tokens")
    );
}

#[test]
fn stream_cut_drops_the_terminal_event_quietly_or_loudly() {
    let words = ["a", " b", " c", " d"];
    let quiet = run(
        Provider::Openai,
        LlmMode::StreamCut {
            after_events: 2,
            loud: false,
        },
        "text/event-stream",
        &openai_stream(&words),
    );
    let (content, finish, done) = openai_read(&quiet.text);
    assert_eq!((content.as_str(), finish.len(), done), ("a b", 0, false));
    assert_eq!(quiet.outs.last(), Some(&Out::End));
    let loud = run(
        Provider::Openai,
        LlmMode::StreamCut {
            after_events: 1,
            loud: true,
        },
        "text/event-stream",
        &openai_stream(&words),
    );
    assert_eq!(loud.outs.last(), Some(&Out::Abort));
}

/// A whole answer cut short is a dropped connection, quiet or loud: half the body, then a
/// broken connection, never a clean end (a complete short body is no real failure).
#[test]
fn stream_cut_on_a_whole_answer_breaks_the_connection() {
    let body = json!({"id": "c1", "choices": [{"message": {"content": "a b c d"}}]}).to_string();
    for loud in [false, true] {
        let r = run(
            Provider::Openai,
            LlmMode::StreamCut {
                after_events: 2,
                loud,
            },
            "application/json",
            std::slice::from_ref(&body),
        );
        assert_eq!(r.text, body[..body.len() / 2], "loud: {loud}");
        assert_eq!(r.outs.last(), Some(&Out::Abort), "loud: {loud}");
        assert!(!r.outs.contains(&Out::End), "loud: {loud}");
    }
}

#[test]
fn slow_stream_paces_every_event() {
    let r = run(
        Provider::Openai,
        LlmMode::SlowStream {
            first_token_ms: 500,
            between_ms: 20,
        },
        "text/event-stream",
        &openai_stream(&["x"]),
    );
    let delays: Vec<_> = r
        .outs
        .iter()
        .filter_map(|o| {
            if let Out::Delay(d) = o {
                Some(d.as_millis())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(delays, [500, 20, 20, 20]);
    assert_eq!(openai_read(&r.text).0, "x");
}

pub(super) fn anthropic_stream() -> Vec<String> {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "content": []}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "one two"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " three four"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
}

#[test]
fn anthropic_truncation_closes_the_block_and_says_max_tokens() {
    let r = run(
        Provider::Anthropic,
        LlmMode::TruncatedResponse { max_tokens: 3 },
        "text/event-stream",
        &anthropic_stream(),
    );
    let names: Vec<&str> = r
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(r.text.contains(r#""text":" three""#), "{}", r.text);
    assert!(r.text.contains(r#""stop_reason":"max_tokens""#));
    assert!(!r.text.contains("end_turn"));
}

#[test]
fn anthropic_overload_arrives_as_an_error_event_mid_stream() {
    let r = run(
        Provider::Anthropic,
        LlmMode::ServerError {
            status: None,
            in_stream: true,
            after_events: None,
            responses_event: None,
        },
        "text/event-stream",
        &anthropic_stream(),
    );
    // Byte for byte what provider-wire-formats.md shows (serde_json keeps key order).
    assert!(r.text.contains("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), "{}", r.text);
    assert!(!r.text.contains("message_stop"));
}

#[test]
fn gemini_keeps_crlf_frames_and_marks_max_tokens() {
    let chunk = |t: &str, fin: Option<&str>| {
        let mut c = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": t}]}}]});
        if let Some(f) = fin {
            c["candidates"][0]["finishReason"] = json!(f);
        }
        format!("data: {c}\r\n\r\n")
    };
    let r = run(
        Provider::Gemini,
        LlmMode::TruncatedResponse { max_tokens: 2 },
        "text/event-stream",
        &[
            chunk("alpha beta gamma", None),
            chunk(" delta", Some("STOP")),
        ],
    );
    assert_eq!(r.text.matches("\r\n\r\n").count(), 1);
    let v: Value = serde_json::from_str(r.text.trim_start_matches("data: ").trim_end()).unwrap();
    assert_eq!(
        v["candidates"][0]["content"]["parts"][0]["text"],
        "alpha beta"
    );
    assert_eq!(v["candidates"][0]["finishReason"], "MAX_TOKENS");
}

#[test]
fn ollama_ndjson_truncation_and_garbage() {
    let line = |c: &str, done: bool| {
        format!(
            "{}\n",
            json!({"model": "llama3.2", "created_at": "t", "message": {"role": "assistant", "content": c}, "done": done})
        )
    };
    let lines = [
        line("Hel lo", false),
        line(" there friend", false),
        line("", true),
    ];
    let r = run(
        Provider::Ollama,
        LlmMode::TruncatedResponse { max_tokens: 3 },
        "application/x-ndjson",
        &lines,
    );
    let last: Value = serde_json::from_str(r.text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["done"].as_bool(), last["done_reason"].as_str()),
        (Some(true), Some("length"))
    );
    let content: String = r
        .text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["message"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(content, "Hel lo there");
    let g = run(
        Provider::Ollama,
        LlmMode::Garbage {},
        "application/x-ndjson",
        &lines,
    );
    assert!(serde_json::from_str::<Value>(g.text.lines().nth(1).unwrap()).is_err());
}

#[test]
fn whole_json_responses_are_rewritten_per_provider() {
    let openai = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "Let me check the weather",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}]});
    let body = [openai.to_string()];
    let t = run(
        Provider::Openai,
        LlmMode::TruncatedResponse { max_tokens: 2 },
        "application/json",
        &body,
    );
    let v: Value = serde_json::from_str(&t.text).unwrap();
    assert_eq!(
        (
            v["choices"][0]["message"]["content"].as_str(),
            v["choices"][0]["finish_reason"].as_str()
        ),
        (Some("Let me"), Some("length"))
    );
    let c = run(
        Provider::Openai,
        LlmMode::ToolCallCorruption {
            corruption: Corruption::InvalidJson,
        },
        "application/json",
        &body,
    );
    let v: Value = serde_json::from_str(&c.text).unwrap();
    assert!(
        serde_json::from_str::<Value>(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .is_err()
    );
    let u = run(
        Provider::Openai,
        LlmMode::ToolCallCorruption {
            corruption: Corruption::UnknownTool,
        },
        "application/json",
        &body,
    );
    assert!(u.text.contains("get_weather_v2"));
    let e = run(
        Provider::Openai,
        LlmMode::Empty {},
        "application/json",
        &body,
    );
    assert!(e.text.contains(r#""content":"""#));

    let claude = json!({"type": "message", "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {"user_id": 7, "verbose": true}}], "stop_reason": "tool_use"});
    let d = run(
        Provider::Anthropic,
        LlmMode::ResponseDrift {
            drift_type: DriftType::JsonFieldRename,
            severity: Severity::Significant,
            direction: Direction::Expand,
            factor: 2.0,
        },
        "application/json",
        &[claude.to_string()],
    );
    let v: Value = serde_json::from_str(&d.text).unwrap();
    assert_eq!(
        v["content"][0]["input"],
        json!({"userId": 7, "verboseValue": true})
    );
}

#[test]
fn unparseable_or_oversized_bodies_pass_through_and_are_reported() {
    let r = run(
        Provider::Openai,
        LlmMode::Empty {},
        "application/json",
        &["<html>not json</html>".into()],
    );
    assert_eq!(
        (r.text.as_str(), r.skipped.as_deref()),
        (
            "<html>not json</html>",
            Some("response body is not a JSON object; passed through unchanged")
        )
    );
    let mut small = LlmRewriter::new(
        Provider::Openai,
        LlmMode::Empty {},
        0,
        "application/json",
        4,
        1 << 20,
    );
    let out = small.push(b"{\"choices\":[]}");
    assert_eq!(
        out,
        vec![
            Out::Data(Bytes::new()),
            Out::Data(Bytes::from_static(b"{\"choices\":[]}"))
        ]
    );
    assert!(small.skipped().unwrap().contains("over 4 bytes"));
    let img = run(
        Provider::Openai,
        LlmMode::Empty {},
        "image/png",
        &["PNG".into()],
    );
    assert_eq!(img.text, "PNG");
    assert!(img.skipped.unwrap().contains("image/png"));
}

#[test]
fn tokens_are_runs_of_non_space() {
    assert_eq!(take_tokens("Hello brave  new world", 3), (16, 3));
    assert_eq!(take_tokens(" a", 0), (0, 0));
    assert_eq!(take_tokens("abc", 5), (3, 1));
}

#[test]
fn gemini_text_in_the_finish_frame_is_rewritten_too() {
    let chunk = |t: &str, fin: Option<&str>| {
        let mut c = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": t}]}}]});
        if let Some(f) = fin {
            c["candidates"][0]["finishReason"] = json!(f);
        }
        format!("data: {c}\r\n\r\n")
    };
    let frames = [
        chunk("one two", None),
        chunk(" three four five", Some("STOP")),
    ];
    let e = run(
        Provider::Gemini,
        LlmMode::Empty {},
        "text/event-stream",
        &frames,
    );
    assert!(!e.text.contains("three"), "{}", e.text);
    let t = run(
        Provider::Gemini,
        LlmMode::TruncatedResponse { max_tokens: 4 },
        "text/event-stream",
        &frames,
    );
    let last: Value =
        serde_json::from_str(t.text.trim_end().rsplit("data: ").next().unwrap()).unwrap();
    assert_eq!(
        last["candidates"][0]["content"]["parts"][0]["text"],
        " three four"
    );
    assert_eq!(last["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(
        t.text.matches("data: ").count(),
        2,
        "no extra frame after the marked one"
    );
}

#[test]
fn broken_tool_calls_look_like_each_providers_own() {
    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"city": "Paris"}}}]}, "finishReason": "STOP"}]});
    let g = run(
        Provider::Gemini,
        LlmMode::ToolCallCorruption {
            corruption: Corruption::InvalidJson,
        },
        "application/json",
        &[gemini.to_string()],
    );
    let v: Value = serde_json::from_str(&g.text).unwrap();
    assert_eq!(
        v["candidates"][0]["finishReason"],
        "MALFORMED_FUNCTION_CALL"
    );
    assert_eq!(v["candidates"][0]["content"]["parts"], json!([]));
    // Ollama answers a call it cannot parse with a 500 before forwarding
    // (`ollama::tool_parse_error`): there is no body to rewrite.
    let ollama = json!({"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "w", "arguments": {"city": "Paris"}}}]}, "done": true});
    let o = run(
        Provider::Ollama,
        LlmMode::ToolCallCorruption {
            corruption: Corruption::InvalidJson,
        },
        "application/json",
        &[ollama.to_string()],
    );
    assert_eq!(o.text, ollama.to_string());
}

/// A Responses API stream: named events, text in deltas and repeated in done/completed.
pub(super) fn responses_stream(words: &[&str]) -> Vec<String> {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    let base = json!({"id": "resp_1", "object": "response", "model": "gpt-x", "status": "in_progress", "output": []});
    let full: String = words.concat();
    let mut v = vec![ev(
        "response.created",
        json!({"type": "response.created", "sequence_number": 0, "response": base}),
    )];
    for (i, w) in words.iter().enumerate() {
        v.push(ev("response.output_text.delta", json!({"type": "response.output_text.delta", "sequence_number": i + 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": w})));
    }
    v.push(ev(
        "response.output_text.done",
        json!({"type": "response.output_text.done", "sequence_number": 90, "text": full}),
    ));
    let done = json!({"id": "resp_1", "object": "response", "status": "completed", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": full}]}]});
    v.push(ev(
        "response.completed",
        json!({"type": "response.completed", "sequence_number": 91, "response": done}),
    ));
    v
}

pub(super) fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let name = f
                .lines()
                .next()
                .unwrap()
                .trim_start_matches("event: ")
                .to_string();
            let data = f.lines().nth(1).unwrap().trim_start_matches("data: ");
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[test]
fn responses_api_streams_end_incomplete_with_the_text_sent() {
    let r = run(
        Provider::Openai,
        LlmMode::TruncatedResponse { max_tokens: 3 },
        "text/event-stream",
        &responses_stream(&["One", " two", " three four", " five"]),
    );
    let evs = events(&r.text);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.incomplete"
        ]
    );
    let (_, last) = evs.last().unwrap();
    assert_eq!(
        last["response"]["id"], "resp_1",
        "the created response's id is kept"
    );
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "One two three"
    );
    assert_eq!(last["sequence_number"], 4);
}

#[test]
fn responses_api_empty_blanks_every_copy_of_the_text() {
    let r = run(
        Provider::Openai,
        LlmMode::Empty {},
        "text/event-stream",
        &responses_stream(&["Hello", " world"]),
    );
    assert!(
        !r.text.contains("Hello") && !r.text.contains("world"),
        "{}",
        r.text
    );
    assert!(r.text.contains("response.completed"));
    let whole = json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [{"type": "function_call", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "call_id": "c"},
                   {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking the weather now"}]}]});
    let t = run(
        Provider::Openai,
        LlmMode::TruncatedResponse { max_tokens: 2 },
        "application/json",
        &[whole.to_string()],
    );
    let v: Value = serde_json::from_str(&t.text).unwrap();
    assert_eq!(
        (
            v["status"].as_str(),
            v["output"][1]["content"][0]["text"].as_str()
        ),
        (Some("incomplete"), Some("Checking the"))
    );
    let c = run(
        Provider::Openai,
        LlmMode::ToolCallCorruption {
            corruption: Corruption::InvalidJson,
        },
        "application/json",
        &[whole.to_string()],
    );
    let v: Value = serde_json::from_str(&c.text).unwrap();
    assert!(serde_json::from_str::<Value>(v["output"][0]["arguments"].as_str().unwrap()).is_err());
}

/// Drift on a Responses API stream: the deltas change, and the `.done` and
/// `response.completed` copies say exactly what the deltas said.
#[test]
fn responses_api_drift_keeps_every_copy_equal_to_the_deltas() {
    let r = run(
        Provider::Openai,
        LlmMode::ResponseDrift {
            drift_type: DriftType::ToneShift,
            severity: Severity::Significant,
            direction: Direction::Expand,
            factor: 2.0,
        },
        "text/event-stream",
        &responses_stream(&["Hello", " world"]),
    );
    assert_eq!(r.skipped, None);
    let evs = events(&r.text);
    let said: String = evs
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, v)| v["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(said, "HELLO WORLD");
    let copy = |name: &str, path: &[&str]| {
        let (_, v) = evs.iter().find(|(n, _)| n == name).unwrap();
        path.iter()
            .fold(v, |v, k| match k.parse::<usize>() {
                Ok(i) => &v[i],
                Err(_) => &v[*k],
            })
            .clone()
    };
    assert_eq!(copy("response.output_text.done", &["text"]), said);
    assert_eq!(
        copy(
            "response.completed",
            &["response", "output", "0", "content", "0", "text"]
        ),
        said
    );
}

#[test]
fn responses_api_server_error_mid_stream_is_response_failed() {
    let r = run(
        Provider::Openai,
        LlmMode::ServerError {
            status: None,
            in_stream: true,
            after_events: None,
            responses_event: None,
        },
        "text/event-stream",
        &responses_stream(&["a", " b"]),
    );
    let evs = events(&r.text);
    let (name, last) = evs.last().unwrap();
    assert_eq!(
        (name.as_str(), last["response"]["status"].as_str()),
        ("response.failed", Some("failed"))
    );
    assert_eq!(last["response"]["error"]["code"], "server_error");
}

fn expand(factor: f64) -> LlmMode {
    LlmMode::ResponseDrift {
        drift_type: DriftType::VerbosityShift,
        severity: Severity::Subtle,
        direction: Direction::Expand,
        factor,
    }
}

fn failed(r: &Run) -> bool {
    matches!(r.outs.last(), Some(Out::Fail(m)) if m.contains("proxy.max_rewrite_bytes"))
}

/// Issue #9: `factor: 1e12` asked for 70 TB and aborted the process; `1e300` panicked with
/// `capacity overflow`. Sized before anything is built, they now fail the one body.
#[test]
fn expansions_over_the_cap_fail_the_body_without_allocating() {
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}]}).to_string();
    let cap = crate::chaos::budget::DEFAULT_MAX_REWRITE_BYTES;
    for factor in [1e12, 1e300, f64::INFINITY] {
        let r = run_capped(
            Provider::Openai,
            expand(factor),
            "application/json",
            std::slice::from_ref(&body),
            cap,
        );
        assert!(failed(&r), "factor {factor}: {:?}", r.outs);
        assert!(
            r.skipped
                .unwrap()
                .contains("over proxy.max_rewrite_bytes (16777216)")
        );
    }
    // In range, under a small cap: fails; under the default: applied.
    let small = run_capped(
        Provider::Openai,
        expand(100.0),
        "application/json",
        std::slice::from_ref(&body),
        4096,
    );
    assert!(failed(&small), "{:?}", small.outs);
    let fine = run(Provider::Openai, expand(100.0), "application/json", &[body]);
    assert!(fine.text.contains("In summary: Paris."), "{}", fine.text);

    let stream: Vec<String> = ["Par", "is."]
        .iter()
        .map(|t| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": t}}]})
            )
        })
        .chain(["data: [DONE]\n\n".to_string()])
        .collect();
    let r = run_capped(
        Provider::Openai,
        expand(1e300),
        "text/event-stream",
        &stream,
        cap,
    );
    assert!(failed(&r), "{:?}", r.outs);
    let r = run_capped(
        Provider::Openai,
        expand(100.0),
        "text/event-stream",
        &stream,
        1000,
    );
    assert!(failed(&r), "{:?}", r.outs);
    let r = run(
        Provider::Openai,
        expand(100.0),
        "text/event-stream",
        &stream,
    );
    assert!(!failed(&r) && r.text.contains("Great question!"));
}

/// A stream event that never ends is held only up to the limit, then passed through.
#[test]
fn an_endless_stream_event_is_not_held_without_bound() {
    let mut r = LlmRewriter::new(
        Provider::Openai,
        LlmMode::Empty {},
        0,
        "text/event-stream",
        16,
        1 << 20,
    );
    assert_eq!(r.push(b"data: {\"choices\""), vec![]);
    let out = r.push(b": [0123456789]");
    let sent: Vec<u8> = out
        .iter()
        .flat_map(|o| match o {
            Out::Data(d) => d.to_vec(),
            _ => vec![],
        })
        .collect();
    assert_eq!(sent, b"data: {\"choices\": [0123456789]");
    assert_eq!(
        r.push(b"more"),
        vec![Out::Data(Bytes::from_static(b"more"))]
    );
    assert!(r.skipped().unwrap().contains("over 16 bytes"));
}

/// Found by tests/fuzz.rs: JSON that is valid but not the provider's shape (a number where
/// an event or a message is, a string for a turn) passes through, never panics.
#[test]
fn valid_json_of_the_wrong_shape_passes_through() {
    for (provider, ct, body) in [
        (
            Provider::Ollama,
            "application/x-ndjson",
            "18446744073709551616\n",
        ),
        (
            Provider::Ollama,
            "application/json",
            r#"{"message": 5, "done": true}"#,
        ),
        (
            Provider::Openai,
            "application/json",
            r#"{"choices": [1, "x"]}"#,
        ),
        (
            Provider::Gemini,
            "text/event-stream",
            "data: {\"candidates\": [7]}\n\n",
        ),
        (
            Provider::Openai,
            "text/event-stream",
            "data: {\"type\": \"response.output_item.done\", \"item\": 3, \"response\": 4}\n\n",
        ),
    ] {
        for mode in [
            LlmMode::TruncatedResponse { max_tokens: 1 },
            LlmMode::Empty {},
            LlmMode::ToolCallCorruption {
                corruption: crate::chaos::spec::Corruption::InvalidJson,
            },
        ] {
            let r = run(provider, mode.clone(), ct, &[body.into()]);
            assert!(!r.text.is_empty(), "{provider:?} {mode:?} {body}");
        }
    }
}

/// A stream whose last event carries the answer and the finish together (a Gemini function
/// call in one chunk) within `after_events` is not cut before its end: quiet, it goes
/// through whole and the fault says why it was not applied (it had delivered nothing);
/// loud, the connection breaks after it. A finish event of its own is still the cut's.
#[test]
fn a_last_event_with_the_answer_and_its_finish_is_not_cut_away() {
    let call = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        "finishReason": "STOP"}]});
    let frames = [format!("data: {call}\r\n\r\n")];
    let cut = |loud| {
        let mode = LlmMode::StreamCut {
            after_events: 1,
            loud,
        };
        run(Provider::Gemini, mode, "text/event-stream", &frames)
    };
    let quiet = cut(false);
    assert!(quiet.text.contains("get_weather"), "{}", quiet.text);
    let why = quiet.skipped.as_deref().unwrap_or_default();
    assert!(
        why.contains("the stream had 1 content event(s), the last with its finish"),
        "{why}"
    );
    let loud = cut(true);
    assert!(loud.text.contains("get_weather"), "{}", loud.text);
    assert_eq!(loud.outs.last(), Some(&Out::Abort));
    assert_eq!(
        loud.skipped, None,
        "a loud cut after the last event is applied"
    );
    // The answer, then a finish of its own: the finish is cut away, as before.
    let words = ["a", " b"];
    let mode = LlmMode::StreamCut {
        after_events: 5,
        loud: false,
    };
    let exact = run(
        Provider::Openai,
        mode,
        "text/event-stream",
        &openai_stream(&words),
    );
    let (content, finish, done) = openai_read(&exact.text);
    assert_eq!((content.as_str(), finish.len(), done), ("a b", 0, false));
    assert_eq!(exact.skipped, None);
}
