//! Each provider's usage, whole and streamed, as the SDKs' wire carries it.

use super::usage;
use crate::exchange::Usage;

fn u(input: Option<u64>, output: Option<u64>, model: &str) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        model: Some(model.into()),
    }
}

#[test]
fn openai_chat_whole_and_streamed_in_the_last_chunk() {
    let whole = br#"{"id":"c1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
    assert_eq!(usage(whole), u(Some(12), Some(5), "gpt-4o-mini-2024-07-18"));
    // With include_usage every chunk says `usage: null` and a last chunk, without
    // choices, carries the figures.
    let stream = b"data: {\"id\":\"c1\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n\
data: {\"id\":\"c1\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n\
data: {\"id\":\"c1\",\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":7}}\n\n\
data: [DONE]\n\n";
    assert_eq!(usage(stream), u(Some(30), Some(7), "gpt-4o"));
}

#[test]
fn a_stream_without_usage_leaves_the_counts_unknown_never_zero() {
    let stream = b"data: {\"id\":\"c1\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n";
    let got = usage(stream);
    assert_eq!((got.input_tokens, got.output_tokens), (None, None));
    assert!(!got.known());
    assert_eq!(usage(b"not json"), Usage::default());
    assert_eq!(usage(br#"{"choices":[]}"#), Usage::default());
}

#[test]
fn openai_responses_whole_and_in_response_completed() {
    let whole = br#"{"id":"resp_1","object":"response","model":"gpt-4.1","output":[],"usage":{"input_tokens":40,"output_tokens":11,"total_tokens":51}}"#;
    assert_eq!(usage(whole), u(Some(40), Some(11), "gpt-4.1"));
    let stream = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"model\":\"gpt-4.1\",\"usage\":null}}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"model\":\"gpt-4.1\",\"usage\":{\"input_tokens\":40,\"output_tokens\":2}}}\n\n";
    assert_eq!(usage(stream), u(Some(40), Some(2), "gpt-4.1"));
}

#[test]
fn anthropic_whole_and_split_across_message_start_and_message_delta() {
    let whole = br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":9}}"#;
    assert_eq!(usage(whole), u(Some(12), Some(9), "claude-sonnet-4-5"));
    // Input in message_start (with a first output count of 1), the cumulative output in
    // message_delta: 12 in, 9 out, not 10.
    let stream = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    assert_eq!(usage(stream), u(Some(12), Some(9), "claude-sonnet-4-5"));
    // A stream cut before message_delta: the input is known, the output is not.
    let cut = &stream[..stream.windows(7).position(|w| w == b"event: ").unwrap() + 300];
    let got = usage(cut);
    assert_eq!(got.input_tokens, Some(12));
    let cached = br#"{"type":"message","model":"claude-haiku-4-5","usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":50,"output_tokens":4}}"#;
    assert_eq!(usage(cached), u(Some(153), Some(4), "claude-haiku-4-5"));
}

#[test]
fn gemini_whole_streamed_and_as_a_json_array() {
    let whole = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":9,"thoughtsTokenCount":3,"totalTokenCount":24},"modelVersion":"gemini-2.5-flash"}"#;
    assert_eq!(usage(whole), u(Some(12), Some(12), "gemini-2.5-flash"));
    let stream = b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"h\"}]}}],\"usageMetadata\":{\"promptTokenCount\":12},\"modelVersion\":\"gemini-2.5-flash\"}\r\n\r\n\
data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"i\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":2},\"modelVersion\":\"gemini-2.5-flash\"}\r\n\r\n";
    assert_eq!(usage(stream), u(Some(12), Some(2), "gemini-2.5-flash"));
    let array = br#"[{"candidates":[],"usageMetadata":{"promptTokenCount":5}},{"candidates":[],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":6},"modelVersion":"gemini-2.0-flash"}]"#;
    assert_eq!(usage(array), u(Some(5), Some(6), "gemini-2.0-flash"));
}

#[test]
fn ollama_counts_whole_and_in_the_done_line() {
    let whole = br#"{"model":"llama3.2","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":2}"#;
    assert_eq!(usage(whole), u(Some(5), Some(2), "llama3.2"));
    let stream = b"{\"model\":\"llama3.2\",\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n\
{\"model\":\"llama3.2\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":26,\"eval_count\":298}\n";
    assert_eq!(usage(stream), u(Some(26), Some(298), "llama3.2"));
    // A prompt Ollama had cached: no prompt_eval_count, so the input is unknown.
    let cached = br#"{"model":"llama3.2","response":"hi","done":true,"eval_count":2}"#;
    assert_eq!(usage(cached), u(None, Some(2), "llama3.2"));
}

#[test]
fn an_openai_compatible_server_answers_in_openai_shape() {
    // Ollama's /v1/chat/completions, vLLM, LM Studio: the body's shape decides.
    let body = br#"{"object":"chat.completion","model":"qwen2.5:7b","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":3}}"#;
    assert_eq!(usage(body), u(Some(8), Some(3), "qwen2.5:7b"));
}
