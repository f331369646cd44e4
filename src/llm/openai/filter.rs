//! Content-filter and refusal signals in OpenAI's wire forms (docs/faults.md,
//! `content_filter`): Chat Completions `finish_reason: "content_filter"` (with Azure's
//! `content_filter_results`) and `message.refusal`; the Responses API's `status:
//! "incomplete"` with `incomplete_details.reason: "content_filter"` and its `refusal`
//! content part; Azure OpenAI's 400 `content_filter` error for a blocked prompt.

use serde_json::{Value, json};

use super::responses;
use crate::llm::frame::Event;
use crate::llm::path::{All, K, visit};
use crate::llm::signals::FilterSignal;
use crate::llm::synthetic::{Synthetic, request_id};
use crate::llm::wire::Progress;

/// The refusal text OpenAI models send in `refusal` (structured outputs' wording).
pub const REFUSAL: &str = "I'm sorry, but I can't help with that.";

/// Azure's per-category verdicts: which category stopped the text (violence here).
fn filter_results() -> Value {
    let safe = json!({"filtered": false, "severity": "safe"});
    json!({"hate": safe, "self_harm": safe, "sexual": safe,
        "violence": {"filtered": true, "severity": "high"}})
}

/// Azure OpenAI's answer to a prompt its filter blocks (the same on chat and Responses
/// deployments): 400, `code: content_filter`, the verdicts under `innererror`.
pub fn prompt_blocked(draw: u64) -> Synthetic {
    let safe = json!({"filtered": false, "severity": "safe"});
    let message = "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766";
    Synthetic::json(
        400,
        json!({"error": {"message": message, "type": null, "param": "prompt", "code": "content_filter",
            "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {"hate": safe, "jailbreak": {"filtered": true, "detected": true},
                    "self_harm": safe, "sexual": safe, "violence": safe}}}}),
    )
    .with("x-request-id", request_id("req_", draw))
    .with("apim-request-id", request_id("", draw))
}

/// A whole answer (Chat Completions or Responses) stopped by `signal`.
pub fn mark(v: &mut Value, signal: FilterSignal) {
    if responses::is_responses(v) {
        return mark_response(v, signal);
    }
    visit(v, &[K("choices"), All], &mut |c| {
        // A legacy completion has no refusal: every signal withholds its text.
        if c.get("text").is_some() {
            c["text"] = json!("");
            c["finish_reason"] = json!("content_filter");
            c["content_filter_results"] = filter_results();
            return;
        }
        let Some(m) = c.get_mut("message").and_then(Value::as_object_mut) else {
            return;
        };
        match signal {
            FilterSignal::Refusal => {
                m.insert("content".into(), Value::Null);
                m.insert("refusal".into(), json!(REFUSAL));
                m.remove("tool_calls");
                c["finish_reason"] = json!("stop");
            }
            FilterSignal::Filtered | FilterSignal::Recitation | FilterSignal::BlockedPrompt => {
                // The filtered answer is withheld whole: `content: null`, as the real
                // filtered answer has it, and no calls.
                m.insert("content".into(), Value::Null);
                m.remove("tool_calls");
                c["finish_reason"] = json!("content_filter");
                c["content_filter_results"] = filter_results();
            }
        }
    })
}

fn mark_response(v: &mut Value, signal: FilterSignal) {
    match signal {
        FilterSignal::Refusal => {
            let id = first_message_id(&v["output"]);
            v["output"] = json!([refusal_item(&id, "completed")]);
            v["status"] = json!("completed");
        }
        FilterSignal::Filtered | FilterSignal::Recitation | FilterSignal::BlockedPrompt => {
            // The real filtered response has no output items at all.
            v["output"] = json!([]);
            responses::mark_incomplete(v, "content_filter");
        }
    }
}

fn first_message_id(output: &Value) -> Value {
    output
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["type"] == "message")
        .map_or_else(|| json!("msg_refusal"), |i| i["id"].clone())
}

fn refusal_item(id: &Value, status: &str) -> Value {
    json!({"id": id, "type": "message", "status": status, "role": "assistant",
        "content": [{"type": "refusal", "refusal": REFUSAL}]})
}

/// The events that replace `ev` and end a stream stopped by `signal`.
pub fn tail(ev: &Event, progress: &Progress, signal: FilterSignal) -> Vec<Event> {
    let j = ev.json.clone().unwrap_or(Value::Null);
    if responses::is_responses(&j) {
        return match signal {
            FilterSignal::Refusal => responses_refusal(ev, &j, progress),
            FilterSignal::Filtered | FilterSignal::Recitation | FilterSignal::BlockedPrompt => {
                vec![responses::incomplete_event(ev, progress, "content_filter")]
            }
        };
    }
    if super::completions::is_completion(&j) {
        let mut finish = super::completions::finish_chunk(&j, "content_filter");
        finish["choices"][0]["content_filter_results"] = filter_results();
        return vec![ev.sibling(None, finish), ev.raw_sibling(None, "[DONE]")];
    }
    let chunk = |choice: Value| {
        let mut c = j.clone();
        c["choices"] = json!([choice]);
        ev.sibling(None, c)
    };
    let mut out = match signal {
        FilterSignal::Refusal => vec![
            chunk(json!({"index": 0, "delta": {"refusal": REFUSAL}, "finish_reason": null})),
            chunk(json!({"index": 0, "delta": {}, "finish_reason": "stop"})),
        ],
        FilterSignal::Filtered | FilterSignal::Recitation | FilterSignal::BlockedPrompt => {
            vec![chunk(
                json!({"index": 0, "delta": {}, "finish_reason": "content_filter",
                    "content_filter_results": filter_results()}),
            )]
        }
    };
    out.push(ev.raw_sibling(None, "[DONE]"));
    out
}

/// A refusal streamed as the Responses API does: the message's `refusal` part delta and
/// `done`, the item done, `response.completed` whose output is the refusal.
fn responses_refusal(ev: &Event, j: &Value, progress: &Progress) -> Vec<Event> {
    // The cut event is the first text delta (its message was announced) or the first
    // output item (a call, replaced by the refusal message).
    let announce = j["type"] == "response.output_item.added";
    let (id, index) = if announce {
        (json!("msg_refusal"), j["output_index"].clone())
    } else {
        (j["item_id"].clone(), j["output_index"].clone())
    };
    let mut seq = progress.sequence;
    let mut event = |kind: &str, mut data: Value| {
        seq += 1;
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        ev.sibling(Some(kind), data)
    };
    let mut out = vec![];
    let at = json!({"item_id": id, "output_index": index, "content_index": 0});
    let with = |extra: Value| {
        let mut d = at.clone();
        if let (Some(d), Some(e)) = (d.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        d
    };
    if announce {
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        ));
        out.push(event(
            "response.content_part.added",
            with(json!({"part": {"type": "refusal", "refusal": ""}})),
        ));
    }
    out.push(event(
        "response.refusal.delta",
        with(json!({"delta": REFUSAL})),
    ));
    out.push(event(
        "response.refusal.done",
        with(json!({"refusal": REFUSAL})),
    ));
    out.push(event(
        "response.content_part.done",
        with(json!({"part": {"type": "refusal", "refusal": REFUSAL}})),
    ));
    let item = refusal_item(&id, "completed");
    out.push(event(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    ));
    let mut response = if progress.base.is_object() {
        progress.base.clone()
    } else {
        json!({"object": "response"})
    };
    response["status"] = json!("completed");
    response["output"] = json!([item]);
    out.push(event("response.completed", json!({"response": response})));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::frame::Framing;

    fn sse(name: Option<&str>, v: Value) -> Event {
        let frame = match name {
            Some(n) => format!("event: {n}\ndata: {v}\n\n"),
            None => format!("data: {v}\n\n"),
        };
        Event::parse(frame.as_bytes(), Framing::Sse)
    }

    #[test]
    fn a_blocked_prompt_is_azures_400_with_its_innererror() {
        let s = prompt_blocked(1);
        assert_eq!(s.status, 400);
        let v: Value = serde_json::from_slice(&s.body).unwrap();
        assert_eq!(v["error"]["code"], "content_filter");
        assert_eq!(v["error"]["param"], "prompt");
        assert_eq!(
            v["error"]["innererror"]["code"],
            "ResponsibleAIPolicyViolation"
        );
        assert_eq!(
            v["error"]["innererror"]["content_filter_result"]["jailbreak"]["filtered"],
            true
        );
    }

    #[test]
    fn a_chat_answer_is_filtered_or_refused() {
        let answer = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Sure, here", "refusal": null}}]});
        let mut v = answer.clone();
        mark(&mut v, FilterSignal::Filtered);
        assert_eq!(v["choices"][0]["finish_reason"], "content_filter");
        // The real filtered answer: `content: null`, not an empty string; no calls.
        assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
        let mut calls = json!({"object": "chat.completion", "choices": [{"index": 0,
            "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "c", "type": "function"}]}}]});
        mark(&mut calls, FilterSignal::Filtered);
        assert_eq!(calls["choices"][0]["message"].get("tool_calls"), None);
        assert_eq!(
            v["choices"][0]["content_filter_results"]["violence"]["filtered"],
            true
        );
        let mut v = answer;
        mark(&mut v, FilterSignal::Refusal);
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(v["choices"][0]["message"]["refusal"], REFUSAL);
    }

    #[test]
    fn a_legacy_completion_is_filtered_whole_and_in_its_stream() {
        let mut v = json!({"object": "text_completion", "choices": [{"text": "Sure", "index": 0,
            "logprobs": null, "finish_reason": "stop"}]});
        mark(&mut v, FilterSignal::Refusal);
        assert_eq!(v["choices"][0]["text"], "");
        assert_eq!(v["choices"][0]["finish_reason"], "content_filter");
        let ev = sse(
            None,
            json!({"id": "cmpl-1", "object": "text_completion", "model": "m",
                "choices": [{"text": "more", "index": 0, "logprobs": null, "finish_reason": null}]}),
        );
        let out = tail(&ev, &Progress::default(), FilterSignal::Filtered);
        let finish = out[0].json.as_ref().unwrap();
        assert_eq!(finish["choices"][0]["text"], "");
        assert_eq!(finish["choices"][0]["finish_reason"], "content_filter");
        assert_eq!(out[1].encode().as_ref(), b"data: [DONE]\n\n");
    }

    #[test]
    fn a_chat_stream_ends_with_the_filter_finish_or_refusal_deltas() {
        let ev = sse(
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": "more"}, "finish_reason": null}]}),
        );
        let out: Vec<_> = tail(&ev, &Progress::default(), FilterSignal::Filtered)
            .iter()
            .map(|e| String::from_utf8(e.encode().to_vec()).unwrap())
            .collect();
        assert_eq!(out.len(), 2);
        assert!(
            out[0].contains(r#""finish_reason":"content_filter""#),
            "{}",
            out[0]
        );
        assert!(out[0].contains(r#""id":"chatcmpl-1""#));
        assert_eq!(out[1], "data: [DONE]\n\n");
        let out = tail(&ev, &Progress::default(), FilterSignal::Refusal);
        let first = out[0].json.as_ref().unwrap();
        assert_eq!(first["choices"][0]["delta"], json!({"refusal": REFUSAL}));
        assert_eq!(
            out[1].json.as_ref().unwrap()["choices"][0]["finish_reason"],
            "stop"
        );
    }

    #[test]
    fn a_response_is_incomplete_by_content_filter_or_a_refusal_part() {
        let answer = json!({"object": "response", "status": "completed", "incomplete_details": null,
            "output": [{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Sure", "annotations": []}]}]});
        let mut v = answer.clone();
        mark(&mut v, FilterSignal::Filtered);
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"]["reason"], "content_filter");
        // The real filtered response has no output items.
        assert_eq!(v["output"], json!([]));
        let mut v = answer;
        mark(&mut v, FilterSignal::Refusal);
        assert_eq!(v["status"], "completed");
        assert_eq!(v["output"][0]["id"], "msg_1");
        assert_eq!(
            v["output"][0]["content"][0],
            json!({"type": "refusal", "refusal": REFUSAL})
        );
    }

    #[test]
    fn a_response_stream_refusal_is_numbered_and_completed() {
        let progress = Progress {
            base: json!({"id": "resp_1", "object": "response", "status": "in_progress", "output": []}),
            sequence: 4,
            ..Progress::default()
        };
        let ev = sse(
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": "Sure"}),
        );
        let out = tail(&ev, &progress, FilterSignal::Refusal);
        let names: Vec<_> = out.iter().map(|e| e.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "response.refusal.delta",
                "response.refusal.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let seqs: Vec<_> = out
            .iter()
            .map(|e| {
                e.json.as_ref().unwrap()["sequence_number"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(seqs, [5, 6, 7, 8, 9]);
        let done = out[4].json.as_ref().unwrap();
        assert_eq!(done["response"]["id"], "resp_1");
        assert_eq!(done["response"]["output"][0]["id"], "msg_1");
        assert_eq!(
            done["response"]["output"][0]["content"][0]["type"],
            "refusal"
        );
        let cut = tail(&ev, &progress, FilterSignal::Filtered);
        let inc = cut[0].json.as_ref().unwrap();
        assert_eq!(cut[0].name.as_deref(), Some("response.incomplete"));
        assert_eq!(
            inc["response"]["incomplete_details"]["reason"],
            "content_filter"
        );
    }
}
