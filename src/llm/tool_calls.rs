//! The tools an LLM response asked the agent to call, by name, read from the bytes the agent
//! received: a whole JSON body, an SSE stream (`data:` lines) or NDJSON, in any provider's
//! shape (OpenAI chat `tool_calls[].function`, OpenAI Responses `function_call` items,
//! Anthropic `tool_use` blocks, Gemini `functionCall` parts, Ollama `tool_calls`). Streams
//! repeat a call across events (Responses: added, done, completed), so calls that carry an
//! id are counted once per id.

use serde_json::Value;

/// Keys without which a body holds no tool call: most responses are plain answers, and a
/// byte scan is far cheaper than parsing them.
const MARKERS: [&[u8]; 4] = [
    b"tool_calls",
    b"tool_use",
    b"function_call",
    b"functionCall",
];

/// Tool names in order of first appearance, one per call.
pub fn tool_calls(body: &[u8]) -> Vec<String> {
    if !MARKERS
        .iter()
        .any(|m| body.windows(m.len()).any(|w| w == *m))
    {
        return vec![];
    }
    let mut found = Found::default();
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => found.walk(&v),
        Err(_) => {
            for line in String::from_utf8_lossy(body).lines() {
                let line = line.trim();
                let data = line.strip_prefix("data:").unwrap_or(line).trim();
                if let Ok(v) = serde_json::from_str::<Value>(data) {
                    found.walk(&v);
                }
            }
        }
    }
    found.names
}

#[derive(Default)]
struct Found {
    names: Vec<String>,
    ids: Vec<String>,
}

impl Found {
    fn walk(&mut self, v: &Value) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| self.walk(i)),
            Value::Object(map) => {
                let name = |o: &serde_json::Map<String, Value>| {
                    o.get("name").and_then(Value::as_str).map(str::to_string)
                };
                let kind = map.get("type").and_then(Value::as_str);
                let call = match (kind, map.get("function"), map.get("functionCall")) {
                    (Some("tool_use" | "function_call"), _, _) => name(map),
                    (_, Some(Value::Object(f)), _) => name(f),
                    (_, _, Some(Value::Object(f))) => name(f),
                    _ => None,
                };
                let is_call = call.is_some();
                if let Some(n) = call {
                    let id = ["call_id", "id"]
                        .iter()
                        .find_map(|k| map.get(*k).and_then(Value::as_str));
                    self.add(n, id);
                }
                for (k, child) in map {
                    // A call's own fields hold no further calls (its arguments are the user's data).
                    if !is_call
                        || !matches!(
                            k.as_str(),
                            "function" | "functionCall" | "input" | "arguments"
                        )
                    {
                        self.walk(child);
                    }
                }
            }
            _ => {}
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
