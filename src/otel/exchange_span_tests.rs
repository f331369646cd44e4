use super::*;
use crate::exchange::tests_support::exchange;
use crate::exchange::{ErrorKind, ErrorSource, McpCall};
use crate::otel::said::MAX_CONTENT;
use crate::otel::testing::{CHAT, attr, bodies, chat, pending, rate_limit, text};

#[allow(clippy::wildcard_enum_match_arm)] // `Value` is non-exhaustive
fn int(span: &SpanData, key: &str) -> Option<i64> {
    let value = attr(span, key)?;
    let Value::I64(n) = value else {
        panic!("{key} is {value:?}")
    };
    Some(*n)
}

#[test]
fn a_chat_call_has_the_genai_and_http_attributes() {
    let (ex, b) = chat();
    let span = pending(ex, Some(b), false).build(false);
    assert_eq!(span.name, "chat gpt-x");
    assert_eq!(span.span_kind, SpanKind::Client);
    for (key, want) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "gpt-x"),
        ("gen_ai.response.model", "gpt-x-2025"),
        ("http.request.method", "POST"),
        ("url.full", CHAT),
        ("server.address", "api.openai.com"),
        ("flakestorm.target", "llm"),
    ] {
        assert_eq!(text(&span, key).as_deref(), Some(want), "{key}");
    }
    assert_eq!(int(&span, "gen_ai.usage.input_tokens"), Some(12));
    assert_eq!(int(&span, "gen_ai.usage.output_tokens"), Some(40));
    assert_eq!(int(&span, "server.port"), Some(443));
    assert_eq!(int(&span, "http.response.status_code"), Some(200));
    let reasons = attr(&span, "gen_ai.response.finish_reasons").unwrap();
    assert_eq!(reasons, &Value::Array(Array::String(vec!["stop".into()])));
    // No fault: no event, no error; no content unless asked.
    assert!(span.events.events.is_empty());
    assert_eq!(span.status, Status::Unset);
    assert!(attr(&span, "error.type").is_none());
    assert!(attr(&span, "flakestorm.request.body").is_none());
    let start = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    assert_eq!(
        (span.start_time, span.end_time),
        (start, start + Duration::from_millis(250))
    );
}

#[test]
fn unknown_usage_has_no_token_attributes_never_zero() {
    let (mut ex, b) = chat();
    ex.usage = Some(crate::exchange::Usage::default());
    let span = pending(ex, Some(b), false).build(false);
    assert!(attr(&span, "gen_ai.usage.input_tokens").is_none());
    assert!(attr(&span, "gen_ai.usage.output_tokens").is_none());
}

#[test]
fn a_faulted_call_has_error_type_and_one_fault_event() {
    let ex = exchange(
        Target::Llm {
            provider: Provider::Openai,
        },
        CHAT,
    )
    .response(429, &[])
    .fault(rate_limit("rl-once"))
    .build();
    let b = bodies(
        r#"{"model":"gpt-x"}"#,
        r#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#,
    );
    let span = pending(ex, Some(b), false).build(false);
    assert_eq!(
        text(&span, "error.type").as_deref(),
        Some("rate_limit_exceeded")
    );
    assert_eq!(span.status, Status::error("rate_limit_exceeded"));
    let [event] = span.events.events.as_slice() else {
        panic!("{:?}", span.events.events)
    };
    assert_eq!(event.name, "flakestorm.fault");
    let attrs: Vec<(String, String)> = event
        .attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.as_str().into_owned()))
        .collect();
    let want = [
        ("flakestorm.fault.kind", "fault"),
        ("flakestorm.fault.rule", "rl-once"),
        ("flakestorm.fault.mode", "rate_limit"),
        ("flakestorm.fault.seed", "5"),
        ("flakestorm.fault.reached_agent", "true"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(attrs, want);
}

#[test]
fn flakestorms_own_error_is_the_error_type() {
    let ex = exchange(
        Target::Tool {
            name: "search".into(),
        },
        "http://127.0.0.1:9/q",
    )
    .error(ErrorSource::Upstream, ErrorKind::UpstreamTimeout, Some(504))
    .build();
    let span = pending(ex, None, false).build(false);
    assert_eq!(
        text(&span, "error.type").as_deref(),
        Some("upstream_timeout")
    );
    assert_eq!(
        text(&span, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(text(&span, "gen_ai.tool.name").as_deref(), Some("search"));
    assert_eq!(span.name, "execute_tool search");
    assert!(matches!(span.status, Status::Error { .. }));
    assert!(span.events.events.is_empty(), "no fault fired on it");
}

/// A `tools/call` of the MCP tool `search_docs` on the server declared as `docs`.
fn mcp_tool_call() -> Exchange {
    let mut ex = exchange(
        Target::Tool {
            name: "docs".into(),
        },
        "http://127.0.0.1:9/mcp",
    )
    .build();
    ex.mcp = Some(McpCall {
        method: "tools/call".into(),
        tool: Some("search_docs".into()),
        id: None,
        session: None,
        detected: false,
        note: None,
        transport: None,
    });
    ex
}

#[test]
fn an_mcp_tool_call_names_its_method_and_tool() {
    let mut ex = mcp_tool_call();
    let span = pending(ex.clone(), None, false).build(false);
    assert_eq!(
        text(&span, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        text(&span, "gen_ai.tool.name").as_deref(),
        Some("search_docs")
    );
    assert_eq!(
        text(&span, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(span.name, "tools/call search_docs");
    let once = |key: &str| {
        span.attributes
            .iter()
            .filter(|kv| kv.key.as_str() == key)
            .count()
    };
    assert_eq!(
        (once("gen_ai.tool.name"), once("gen_ai.operation.name")),
        (1, 1)
    );
    // Listing the tools executes none.
    let mcp = ex.mcp.as_mut().unwrap();
    (mcp.method, mcp.tool) = ("tools/list".into(), None);
    let span = pending(ex, None, false).build(false);
    assert_eq!(
        text(&span, "mcp.method.name").as_deref(),
        Some("tools/list")
    );
    assert!(attr(&span, "gen_ai.operation.name").is_none());
    assert!(attr(&span, "gen_ai.tool.name").is_none());
    assert_eq!(span.name, "tools/list");
}

#[test]
fn the_parent_is_the_agents_span_from_traceparent_else_the_case() {
    let agent_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let case = ids::context(ids::trace_id(), ids::span_id());
    let (mut ex, b) = chat();
    ex.request.headers = vec![(
        "traceparent".into(),
        format!("00-{agent_trace}-00f067aa0ba902b7-01"),
    )];
    let span = pending(ex, Some(b.clone()), true)
        .prepare(false)
        .placed(Some(&case), 1);
    assert_eq!(span.span_context.trace_id().to_string(), agent_trace);
    assert_eq!(span.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(span.parent_span_is_remote);
    assert_eq!(span.links.links.len(), 1, "linked to its case");
    assert_eq!(span.links.links[0].span_context, case);

    let (ex, b) = chat();
    let span = pending(ex, Some(b.clone()), true)
        .prepare(false)
        .placed(Some(&case), 1);
    assert_eq!(span.span_context.trace_id(), case.trace_id());
    assert_eq!(span.parent_span_id, case.span_id());
    assert!(!span.parent_span_is_remote && span.links.links.is_empty());

    let (ex, b) = chat();
    let root = pending(ex, Some(b), false).build(false);
    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert_ne!(root.span_context.trace_id(), case.trace_id());
}

#[test]
fn content_is_on_the_span_only_when_asked_and_cut() {
    let (ex, _) = chat();
    let long = "y".repeat(MAX_CONTENT * 2);
    let b = bodies(
        &format!(r#"{{"model":"gpt-x","p":"{long}"}}"#),
        r#"{"ok":true}"#,
    );
    let span = pending(ex, Some(b), false).build(true);
    let request = text(&span, "flakestorm.request.body").unwrap();
    assert_eq!(request.len(), MAX_CONTENT);
    assert_eq!(
        text(&span, "flakestorm.response.body").as_deref(),
        Some(r#"{"ok":true}"#)
    );
}

#[test]
fn an_llm_calls_content_is_the_conventions_messages_not_its_bodies() {
    let (ex, b) = chat();
    let off = pending(ex.clone(), Some(b.clone()), false).build(false);
    assert_eq!(attr(&off, "gen_ai.input.messages"), None, "off by default");
    let span = pending(ex, Some(b), false).build(true);
    let json = |key: &str| -> serde_json::Value {
        serde_json::from_str(&text(&span, key).unwrap_or_else(|| panic!("no {key}"))).unwrap()
    };
    assert_eq!(
        json("gen_ai.input.messages"),
        serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    );
    assert_eq!(
        json("gen_ai.output.messages"),
        serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "hello"}], "finish_reason": "stop"}])
    );
    assert_eq!(attr(&span, "gen_ai.system_instructions"), None);
    assert_eq!(attr(&span, "flakestorm.request.body"), None, "not twice");
}

#[test]
fn an_mcp_tool_calls_content_is_its_arguments_and_result() {
    let ex = mcp_tool_call();
    let b = bodies(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"tls"}}}"#,
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"found\"}]}}\n\n",
    );
    let span = pending(ex, Some(b), false).build(true);
    assert_eq!(
        text(&span, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"q":"tls"}"#)
    );
    assert_eq!(
        text(&span, "gen_ai.tool.call.result").as_deref(),
        Some(r#"{"content":[{"type":"text","text":"found"}]}"#)
    );
    assert_eq!(attr(&span, "flakestorm.response.body"), None);
}
