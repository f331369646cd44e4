//! What an exchange said, for its span with `telemetry.otlp.content: true`, from its bodies
//! (redacted as the journal redacts when content is on): an LLM call's messages as the
//! GenAI conventions spell them (`crate::llm::messages`), an MCP tool call's arguments and
//! result, else (or when they cannot be read) the bodies themselves; `MAX_CONTENT` bytes
//! per attribute at most.

use opentelemetry::KeyValue;
use serde_json::Value;

use crate::exchange::{Exchange, TOOLS_CALL, Target};
use crate::llm::{answer_fields, messages};
use crate::tape::Bodies;

/// Prompt and answer text kept on a span per attribute, at most.
pub(super) const MAX_CONTENT: usize = 32 << 10;

/// The content attributes of `ex`.
pub(super) fn said(ex: &Exchange, bodies: &Bodies) -> Vec<KeyValue> {
    let response = bodies.response_bytes();
    let read = match &ex.target {
        Target::Llm { .. } => llm(&bodies.request, &response),
        Target::Embeddings { .. } | Target::Tool { .. } | Target::Other => {
            mcp_call(ex, &bodies.request, &response)
        }
    };
    read.unwrap_or_else(|| {
        let cut = |bytes: &[u8]| -> String {
            String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_CONTENT)]).into_owned()
        };
        vec![
            KeyValue::new("flakestorm.request.body", cut(&bodies.request)),
            KeyValue::new("flakestorm.response.body", cut(&response)),
        ]
    })
}

/// `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`; none
/// when the request has no messages to read.
fn llm(request: &[u8], response: &[u8]) -> Option<Vec<KeyValue>> {
    let request = answer_fields::documents(request);
    let req = request.first()?;
    let input = messages::input(req);
    if input.is_empty() {
        return None;
    }
    let output = messages::output(&answer_fields::documents(response));
    let lists = [
        ("gen_ai.system_instructions", messages::system(req)),
        ("gen_ai.input.messages", input),
        ("gen_ai.output.messages", output),
    ];
    Some(
        lists
            .into_iter()
            .filter_map(|(key, list)| {
                messages::bounded(&list, MAX_CONTENT).map(|json| KeyValue::new(key, json))
            })
            .collect(),
    )
}

/// An MCP `tools/call`'s `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`; none
/// for any other exchange.
fn mcp_call(ex: &Exchange, request: &[u8], response: &[u8]) -> Option<Vec<KeyValue>> {
    ex.mcp.as_ref().filter(|m| m.method == TOOLS_CALL)?;
    let request = answer_fields::documents(request);
    let json = |v: &Value| {
        let s = v.to_string();
        (s.len() <= MAX_CONTENT).then_some(s)
    };
    let mut out = vec![];
    if let Some(a) = request
        .first()
        .and_then(|r| r.pointer("/params/arguments"))
        .and_then(json)
    {
        out.push(KeyValue::new("gen_ai.tool.call.arguments", a));
    }
    let answer = answer_fields::documents(response);
    let result = answer
        .iter()
        .find_map(|d| d.get("result").or(d.get("error")));
    if let Some(r) = result.and_then(json) {
        out.push(KeyValue::new("gen_ai.tool.call.result", r));
    }
    Some(out)
}
