use super::*;
use crate::llm::answer_fields::documents;
use serde_json::json;

fn out(body: &str) -> Value {
    Value::Array(output(&documents(body.as_bytes())))
}

#[test]
fn chat_completions_prompt_with_a_tool_turn_and_its_answer_whole_and_streamed() {
    let request = json!({"model": "m", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}, {"type": "image_url"}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "rain"}
    ]});
    assert_eq!(
        system(&request),
        Vec::<Value>::new(),
        "a system turn stays a turn"
    );
    assert_eq!(
        Value::Array(input(&request)),
        json!([
            {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
            {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "rain"}]}
        ])
    );
    let whole = r#"{"object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It rains."}}]}"#;
    let want = json!([{"role": "assistant", "parts": [{"type": "text", "content": "It rains."}], "finish_reason": "stop"}]);
    assert_eq!(out(whole), want);
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"It \"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"rains.\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\ndata: [DONE]\n\n";
    assert_eq!(out(sse), want);
}

#[test]
fn a_streamed_tool_call_is_put_together_from_its_fragments() {
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"lookup\",\"arguments\":\"{\\\"q\\\":\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"x\\\"}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    assert_eq!(
        out(sse),
        json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c9", "name": "lookup", "arguments": {"q": "x"}}], "finish_reason": "tool_calls"}])
    );
}

#[test]
fn anthropic_system_blocks_and_a_streamed_answer_with_a_tool_use() {
    let request = json!({"system": [{"type": "text", "text": "you are terse"}], "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"}]}
    ]});
    assert_eq!(
        Value::Array(system(&request)),
        json!([{"type": "text", "content": "you are terse"}])
    );
    assert_eq!(
        Value::Array(input(&request)),
        json!([{"role": "user", "parts": [{"type": "tool_call_response", "id": "t1", "response": "42"}]}])
    );
    let sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me check.\"}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"calc\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\": 1}\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n";
    assert_eq!(
        out(sse),
        json!([{"role": "assistant", "parts": [
            {"type": "text", "content": "Let me check."},
            {"type": "tool_call", "id": "t2", "name": "calc", "arguments": {"x": 1}}
        ], "finish_reason": "tool_use"}])
    );
    let whole = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}"#;
    assert_eq!(
        out(whole),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}], "finish_reason": "end_turn"}])
    );
}

#[test]
fn gemini_contents_and_a_streamed_answer_in_chunks_or_one_array() {
    let request = json!({"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}
    ]});
    assert_eq!(
        Value::Array(system(&request)),
        json!([{"type": "text", "content": "sys"}])
    );
    assert_eq!(
        Value::Array(input(&request)),
        json!([
            {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": {"a": 1}}]}
        ])
    );
    let want = json!([{"role": "assistant", "parts": [{"type": "text", "content": "Hello there"}], "finish_reason": "STOP"}]);
    let sse = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello \"}]}}]}\r\n\r\n\
data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"there\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n";
    assert_eq!(out(sse), want);
    let array = r#"[{"candidates":[{"content":{"parts":[{"text":"Hello "}]}}]},{"candidates":[{"content":{"parts":[{"text":"there"}]},"finishReason":"STOP"}]}]"#;
    assert_eq!(out(array), want, "streamGenerateContent without alt=sse");
}

#[test]
fn ollama_chat_chunks_and_generate() {
    let ndjson = "{\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\n\
{\"message\":{\"role\":\"assistant\",\"content\":\"b\"},\"done\":true,\"done_reason\":\"stop\"}\n";
    assert_eq!(
        out(ndjson),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "ab"}], "finish_reason": "stop"}])
    );
    let request = json!({"model": "llama", "system": "sys", "prompt": "why?"});
    assert_eq!(
        Value::Array(system(&request)),
        json!([{"type": "text", "content": "sys"}])
    );
    assert_eq!(
        Value::Array(input(&request)),
        json!([{"role": "user", "parts": [{"type": "text", "content": "why?"}]}])
    );
    assert_eq!(
        out(r#"{"response":"because","done":true,"done_reason":"stop"}"#),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "because"}], "finish_reason": "stop"}])
    );
}

#[test]
fn responses_input_items_and_the_completed_response_or_its_deltas() {
    let request = json!({"instructions": "sys", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "function_call", "call_id": "f1", "name": "s", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": "r"}
    ]});
    assert_eq!(
        Value::Array(system(&request)),
        json!([{"type": "text", "content": "sys"}])
    );
    assert_eq!(input(&request).len(), 3);
    assert_eq!(input(&request)[2]["parts"][0]["type"], "tool_call_response");
    let completed = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"output\":[]}}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}]}}\n\n";
    let want = json!([{"role": "assistant", "parts": [{"type": "text", "content": "Hi"}], "finish_reason": "completed"}]);
    assert_eq!(out(completed), want);
    let cut = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"H\"}\n\n\
data: {\"type\":\"response.output_text.delta\",\"delta\":\"i\"}\n\n";
    assert_eq!(
        out(cut),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Hi"}]}]),
        "a stream cut short: its text so far"
    );
}

#[test]
fn bounded_cuts_long_texts_then_leaves_out_the_oldest_turns_and_stays_json() {
    let long = "x".repeat(100);
    let list: Vec<Value> = (0..5)
        .map(|i| json!({"role": "user", "parts": [{"type": "text", "content": format!("{i}{long}")}]}))
        .collect();
    let s = bounded(&list, 200).unwrap();
    assert!(s.len() <= 200, "{}", s.len());
    let back: Vec<Value> = serde_json::from_str(&s).unwrap();
    assert_eq!(
        back.last().unwrap()["parts"][0]["content"]
            .as_str()
            .unwrap()
            .chars()
            .next(),
        Some('4'),
        "the latest kept"
    );
    assert!(
        back[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .ends_with('…')
    );
    assert_eq!(bounded(&[], 200), None);
    let all = bounded(&list, 10_000).unwrap();
    assert_eq!(
        serde_json::from_str::<Vec<Value>>(&all).unwrap(),
        list,
        "under the bound: whole"
    );
}
