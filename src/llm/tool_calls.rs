//! The tools an LLM response asked the agent to call, by name, read from the bytes the agent
//! received: a whole JSON body, an SSE stream (`data:` lines) or NDJSON, in any provider's
//! shape (each provider file's `calls` says where its calls sit). Streams repeat a call
//! across events (Responses: added, done, completed), so calls that carry an id are counted
//! once per id.

use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde_json::Value;

use super::frame::events;
use super::path::{Call, at, visit};
use super::{all, wire};

/// Tool names in order of first appearance, one per call.
pub fn tool_calls(body: &[u8]) -> Vec<String> {
    let (sites, markers) = sites();
    // Most responses are plain answers: a byte scan (each distinct marker once, SIMD
    // substring search) is far cheaper than parsing them. This runs on every LLM response.
    if !markers.iter().any(|m| m.find(body).is_some()) {
        return vec![];
    }
    let mut found = Found::default();
    match serde_json::from_slice::<Value>(body) {
        // Gemini's `streamGenerateContent` without `alt=sse`: one JSON array of chunks.
        Ok(Value::Array(chunks)) => {
            for mut v in chunks {
                found.read(&mut v, sites);
            }
        }
        Ok(mut v) => found.read(&mut v, sites),
        Err(_) => {
            for mut v in events(body).filter_map(|e| e.json) {
                found.read(&mut v, sites);
            }
        }
    }
    found.names
}

/// Every place any provider puts a call, streamed or whole, each once (two providers
/// sharing a shape would otherwise count its calls twice): the body's own shape decides
/// (an `llm:` entry's declared provider may serve another's format).
/// Built once: the sites, and a searcher per distinct marker.
fn sites() -> &'static (Vec<&'static Call>, Vec<Finder<'static>>) {
    static SITES: OnceLock<(Vec<&'static Call>, Vec<Finder<'static>>)> = OnceLock::new();
    SITES.get_or_init(|| {
        let mut sites: Vec<&'static Call> = vec![];
        for p in all() {
            for c in [true, false].into_iter().flat_map(|s| wire(p).calls(s)) {
                if !sites.contains(c) {
                    sites.push(c);
                }
            }
        }
        let mut markers: Vec<&'static str> = sites.iter().map(|c| c.marker).collect();
        markers.sort_unstable();
        markers.dedup();
        let finders = markers.into_iter().map(Finder::new).collect();
        (sites, finders)
    })
}

#[derive(Default)]
struct Found {
    names: Vec<String>,
    ids: Vec<String>,
}

impl Found {
    fn read(&mut self, v: &mut Value, sites: &[&Call]) {
        for c in sites {
            visit(v, c.at, &mut |call| {
                let Some(name) = at(call, c.name)
                    .and_then(|n| n.as_str())
                    .map(str::to_string)
                else {
                    return;
                };
                let id = c
                    .ids
                    .iter()
                    .find_map(|k| call.get(*k).and_then(Value::as_str));
                self.add(name, id);
            });
        }
    }

    fn add(&mut self, name: String, id: Option<&str>) {
        if let Some(id) = id {
            if self.ids.iter().any(|seen| seen == id) {
                return;
            }
            self.ids.push(id.to_string());
        }
        self.names.push(name);
    }
}

#[cfg(test)]
mod tests {
    use super::tool_calls;

    #[test]
    fn every_provider_shape() {
        let openai = br#"{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"web_search","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"email","arguments":"{}"}}]}}]}"#;
        assert_eq!(tool_calls(openai), ["web_search", "email"]);
        let anthropic = br#"{"content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"web_search","input":{"q":"x"}}]}"#;
        assert_eq!(tool_calls(anthropic), ["web_search"]);
        let gemini = br#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"lookup","args":{}}}]}}]}"#;
        assert_eq!(tool_calls(gemini), ["lookup"]);
        // streamGenerateContent without alt=sse: a JSON array of chunks.
        let gemini_array = br#"[{"candidates":[{"content":{"parts":[{"text":"hm"}]}}]},{"candidates":[{"content":{"parts":[{"functionCall":{"name":"lookup","args":{}}}]}}]}]"#;
        assert_eq!(tool_calls(gemini_array), ["lookup"]);
        let ollama = b"{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{}}}]},\"done\":false}\n{\"done\":true}\n";
        assert_eq!(tool_calls(ollama), ["get_weather"]);
        let responses = br#"{"output":[{"type":"function_call","call_id":"c1","name":"email","arguments":"{}"}]}"#;
        assert_eq!(tool_calls(responses), ["email"]);
        let text = br#"{"choices":[{"message":{"content":"call the function email"}}]}"#;
        assert!(tool_calls(text).is_empty());
    }

    #[test]
    fn streams_count_each_call_once() {
        let openai = b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"web_search\",\"arguments\":\"\"}}]}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n";
        assert_eq!(tool_calls(openai), ["web_search"]);
        let anthropic = b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"email\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n";
        assert_eq!(tool_calls(anthropic), ["email"]);
        let responses = b"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"email\",\"arguments\":\"\"}}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"email\",\"arguments\":\"{}\"}}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"email\",\"arguments\":\"{}\"}]}}\n\n";
        assert_eq!(tool_calls(responses), ["email"]);
    }

    #[test]
    fn a_tool_named_in_arguments_is_not_a_call() {
        let nested = br#"{"content":[{"type":"tool_use","id":"t1","name":"run","input":{"type":"tool_use","name":"email"}}]}"#;
        assert_eq!(tool_calls(nested), ["run"]);
        assert!(tool_calls(b"not json at all").is_empty());
    }
}
