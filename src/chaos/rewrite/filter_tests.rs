//! `content_filter` and the position and form of a mid-stream `server_error`, on every
//! provider's streams and whole answers: the bytes a client gets.

use super::tests::{anthropic_stream, events, openai_read, openai_stream, responses_stream, run};
use super::*;
use crate::chaos::spec::{FilterSignal, ResponsesEvent};
use serde_json::{Value, json};

fn filter(signal: FilterSignal) -> LlmMode {
    LlmMode::ContentFilter { signal }
}

fn stream_error(after: Option<u32>, form: Option<ResponsesEvent>) -> LlmMode {
    LlmMode::ServerError {
        status: None,
        in_stream: true,
        after_events: after,
        responses_event: form,
    }
}

#[test]
fn openai_stream_is_filtered_after_its_first_piece() {
    let r = run(
        Provider::Openai,
        filter(FilterSignal::Filtered),
        "text/event-stream",
        &openai_stream(&["one ", "two ", "three"]),
    );
    let (content, finish, done) = openai_read(&r.text);
    assert_eq!(
        (content.as_str(), finish, done),
        ("one ", vec!["content_filter".to_string()], true)
    );
    assert_eq!(r.outs.last(), Some(&Out::End));
    assert!(r.skipped.is_none());
}

#[test]
fn openai_refusal_streams_no_content_only_the_refusal() {
    let r = run(
        Provider::Openai,
        filter(FilterSignal::Refusal),
        "text/event-stream",
        &openai_stream(&["one ", "two"]),
    );
    let (content, finish, done) = openai_read(&r.text);
    assert_eq!((content.as_str(), done), ("", true));
    assert_eq!(finish, ["stop"]);
    assert!(
        r.text
            .contains(r#""refusal":"I'm sorry, but I can't help with that.""#)
    );
}

#[test]
fn whole_answers_carry_each_providers_signal() {
    let openai = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "a b c", "refusal": null}}]});
    let r = run(
        Provider::Openai,
        filter(FilterSignal::Filtered),
        "application/json",
        &[openai.to_string()],
    );
    let v: Value = serde_json::from_str(&r.text).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "content_filter");
    let anthropic = json!({"type": "message", "content": [{"type": "text", "text": "a b"}], "stop_reason": "end_turn"});
    let r = run(
        Provider::Anthropic,
        filter(FilterSignal::BlockedPrompt),
        "application/json",
        &[anthropic.to_string()],
    );
    let v: Value = serde_json::from_str(&r.text).unwrap();
    assert_eq!(
        (v["stop_reason"].as_str(), v["content"].clone()),
        (Some("refusal"), json!([]))
    );
    let gemini = json!({"candidates": [{"index": 0, "finishReason": "STOP",
        "content": {"role": "model", "parts": [{"text": "a b"}]}}]});
    let r = run(
        Provider::Gemini,
        filter(FilterSignal::BlockedPrompt),
        "application/json",
        &[gemini.to_string()],
    );
    let v: Value = serde_json::from_str(&r.text).unwrap();
    assert_eq!(v["promptFeedback"]["blockReason"], "SAFETY");
    assert!(v.get("candidates").is_none());
}

#[test]
fn ollama_has_no_signal_and_passes_through_noted() {
    let body =
        json!({"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": true})
            .to_string();
    let r = run(
        Provider::Ollama,
        filter(FilterSignal::Filtered),
        "application/json",
        std::slice::from_ref(&body),
    );
    assert_eq!(r.text, body);
    assert!(r.skipped.unwrap().contains("ollama has no content-filter"));
}

#[test]
fn anthropic_stream_is_refused_mid_block() {
    let r = run(
        Provider::Anthropic,
        filter(FilterSignal::Filtered),
        "text/event-stream",
        &anthropic_stream(),
    );
    let names: Vec<String> = events(&r.text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(r.text.contains(r#""stop_reason":"refusal""#));
    assert!(!r.text.contains("three four"));
}

#[test]
fn gemini_stream_ends_with_safety_or_a_prompt_block() {
    let frame = |t: &str, fin: Option<&str>| {
        let mut c = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": t}]}}]});
        if let Some(f) = fin {
            c["candidates"][0]["finishReason"] = json!(f);
        }
        format!("data: {c}\r\n\r\n")
    };
    let frames = [
        frame("one", None),
        frame(" two", None),
        frame(" three", Some("STOP")),
    ];
    let r = run(
        Provider::Gemini,
        filter(FilterSignal::Recitation),
        "text/event-stream",
        &frames,
    );
    let chunks: Vec<Value> = r
        .text
        .split("\r\n\r\n")
        .filter(|f| !f.is_empty())
        .map(|f| serde_json::from_str(f.trim_start_matches("data: ")).unwrap())
        .collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!(
        chunks[0]["candidates"][0]["content"]["parts"][0]["text"],
        "one"
    );
    assert_eq!(chunks[1]["candidates"][0]["finishReason"], "RECITATION");
    let r = run(
        Provider::Gemini,
        filter(FilterSignal::BlockedPrompt),
        "text/event-stream",
        &frames,
    );
    assert_eq!(r.text.matches("\r\n\r\n").count(), 1);
    assert!(r.text.contains(r#""blockReason":"SAFETY""#), "{}", r.text);
    assert!(!r.text.contains("candidates"));
}

#[test]
fn responses_stream_ends_incomplete_by_content_filter_numbered_in_order() {
    let r = run(
        Provider::Openai,
        filter(FilterSignal::Filtered),
        "text/event-stream",
        &responses_stream(&["a", " b", " c"]),
    );
    let evs = events(&r.text);
    let (name, last) = evs.last().unwrap();
    assert_eq!(name, "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "content_filter"
    );
    assert_eq!(last["response"]["output"][0]["content"][0]["text"], "a");
    // created 0, delta 1, then the replaced delta's number 2.
    assert_eq!(last["sequence_number"], 2);
}

#[test]
fn mid_stream_errors_wait_after_events_and_take_the_responses_form_asked() {
    let r = run(
        Provider::Openai,
        stream_error(Some(2), None),
        "text/event-stream",
        &openai_stream(&["one ", "two ", "three ", "four"]),
    );
    let (content, _, done) = openai_read(&r.text);
    assert_eq!((content.as_str(), done), ("one two ", false));
    let last = r.text.trim_end().rsplit("\n\n").next().unwrap();
    assert!(
        last.starts_with("data: {\"error\":{") && last.contains("\"type\":\"server_error\""),
        "{last}"
    );
    let r = run(
        Provider::Anthropic,
        stream_error(Some(0), None),
        "text/event-stream",
        &anthropic_stream(),
    );
    assert!(!r.text.contains("text_delta"));
    assert!(r.text.contains("event: error\n"));
    let r = run(
        Provider::Openai,
        stream_error(None, Some(ResponsesEvent::Error)),
        "text/event-stream",
        &responses_stream(&["a", " b"]),
    );
    let evs = events(&r.text);
    let (name, last) = evs.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(
        last,
        &json!({"type": "error", "sequence_number": 2, "error": {"type": "server_error",
            "code": "server_error", "message": "The server had an error while processing your request. Sorry about that!",
            "param": null}})
    );
    assert_eq!(evs.len(), 3, "created, one delta, the error");
}
