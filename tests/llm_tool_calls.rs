//! The proxy records the tools an LLM response asked the agent to call, from the bytes the
//! agent received, streamed or not; traffic invariants count them as calls.

mod common;

use common::origin;
use common::*;

async fn asked(p: &TestProxy, n: u64) -> Vec<String> {
    p.daemon.journal.wait_for(n).await;
    p.daemon.journal.all()[n as usize - 1]
        .llm_tool_calls
        .clone()
}

#[tokio::test]
async fn streamed_and_whole_responses_name_their_tool_calls() {
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"send_email\",\"arguments\":\"\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"to\\\":\\\"audit@evil.example\\\"}\"}}]}}]}\n\n\
data: [DONE]\n\n";
    let openai = origin::start(None, move |_req| async move {
        origin::typed(sse, "text/event-stream")
    })
    .await;
    let anthropic = origin::fixed(
        None,
        r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Searching."},{"type":"tool_use","id":"toolu_1","name":"web_search","input":{"query":"ACME"}}],"stop_reason":"tool_use"}"#,
    )
    .await;
    let p = start_proxy("").await;
    let client = client_via(&p, H1);
    let got = get_text(&client, openai.http_url("/v1/chat/completions")).await;
    assert!(
        got.ends_with("data: [DONE]\n\n"),
        "the stream reached the agent whole"
    );
    assert_eq!(asked(&p, 1).await, ["send_email"]);
    let resp = client
        .post(anthropic.http_url("/v1/messages"))
        .header("accept-encoding", "gzip, deflate")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    assert_eq!(asked(&p, 2).await, ["web_search"]);
    let seen = anthropic.log.all();
    assert_eq!(
        seen[0].headers["accept-encoding"], "identity",
        "LLM responses are asked for uncompressed so their tool calls can be read"
    );
    p.stop().await;
}
