//! A rug pull's `notifications/tools/list_changed` notice (docs/mcp.md): it rides on the
//! first `tools/call` answer stream after the session's first listing, once per session.
//! A call a fault answers never carried it (it is recorded as not applied and the next
//! call tells), and parallel calls of one session carry one notice between them.

mod common;

use std::sync::Arc;

use common::origin::{self, typed};
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};

const NOTICE: &str = "notifications/tools/list_changed";

/// An MCP server answering `tools/list` as JSON and `tools/call` as an SSE stream. The
/// calls of session `par` wait for each other, so both are decided before either is
/// answered.
async fn server() -> origin::Origin {
    let both = Arc::new(tokio::sync::Barrier::new(2));
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let both = both.clone();
        async move {
            let session = req.headers().get("mcp-session-id").cloned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let msg: Value = serde_json::from_slice(&body).unwrap();
            let answer =
                |result: Value| json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
            if msg["method"] == "tools/list" {
                let tools = json!({"tools": [{"name": "get_weather", "description": "Weather.",
                    "inputSchema": {"type": "object"}}]});
                let text = answer(tools).to_string();
                return typed(Box::leak(text.into_boxed_str()), "application/json");
            }
            if session.is_some_and(|s| s == "par") {
                both.wait().await;
            }
            let result = json!({"content": [{"type": "text", "text": "Sunny"}], "isError": false});
            let text = format!("event: message\ndata: {}\n\n", answer(result));
            typed(Box::leak(text.into_boxed_str()), "text/event-stream")
        }
    })
    .await
}

/// Posts one message in `session`; the answer's body as text.
async fn post(
    p: &TestProxy,
    url: &str,
    session: &str,
    id: u64,
    method: &str,
    tool: &str,
) -> String {
    let params = match method {
        "tools/call" => json!({"name": tool, "arguments": {"city": "Oslo"}}),
        _ => json!({}),
    };
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = client_via(p, H1)
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .body(msg.to_string())
        .send()
        .await
        .unwrap();
    resp.text().await.unwrap()
}

/// The rug pull's record on each exchange: (applied, note).
fn notices(p: &TestProxy) -> Vec<Option<(bool, Option<String>)>> {
    let all = p.daemon.journal.all();
    let rug = |e: &flakestorm::exchange::Exchange| {
        let a = e
            .attacks
            .iter()
            .find(|a| a.mode == flakestorm::exchange::FaultKind::McpRugPull)?;
        Some((a.applied, a.note.clone()))
    };
    all.iter().map(|e| rug(e)).collect()
}

fn config(server: &origin::Origin, faults: &str) -> String {
    format!(
        "tools:\n  - {{name: crm, match_url: '{}', protocol: mcp}}\nchaos:\n{faults}  \
         context_attacks:\n    - {{type: mcp_rug_pull, tool: crm, payload: CHANGED}}\n",
        server.http_url("/mcp*")
    )
}

#[tokio::test]
async fn a_call_a_fault_answers_does_not_use_up_the_notice() {
    let server = server().await;
    // `get_weather` calls are answered by the fault, with a JSON-RPC error.
    let faults = "  tool_faults:\n    - {tool: crm, mode: mcp_error, code: -32603, \
                  mcp_tool: get_weather}\n";
    let p = start_proxy(&config(&server, faults)).await;
    let url = server.http_url("/mcp");
    within("session", async {
        post(&p, &url, "s", 1, "tools/list", "").await;
        let faulted = post(&p, &url, "s", 2, "tools/call", "get_weather").await;
        assert!(
            faulted.contains("-32603") && !faulted.contains(NOTICE),
            "{faulted}"
        );
        // The claim the faulted call gave back goes to the next call, and only to it.
        let next = post(&p, &url, "s", 3, "tools/call", "send_email").await;
        let event = format!("event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"{NOTICE}\"");
        assert!(next.starts_with(&event) && next.contains("Sunny"), "{next}");
        let last = post(&p, &url, "s", 4, "tools/call", "send_email").await;
        assert!(
            !last.contains(NOTICE) && last.contains("Sunny"),
            "told once: {last}"
        );
    })
    .await;
    p.daemon.journal.wait_for(4).await;
    let told = notices(&p);
    let (applied, note) = told[1]
        .clone()
        .expect("the rug pull fired on the faulted call");
    assert!(!applied, "the fault's answer carried no notice");
    assert!(
        note.as_deref()
            .is_some_and(|n| n.contains("the fault's answer")),
        "{note:?}"
    );
    assert_eq!(told[2], Some((true, None)), "{told:?}");
    assert_eq!(told[3], None, "{told:?}");
}

#[tokio::test]
async fn parallel_calls_of_one_session_carry_one_notice_between_them() {
    let server = server().await;
    let p = start_proxy(&config(&server, "")).await;
    let url = server.http_url("/mcp");
    let (a, b) = within("parallel calls", async {
        post(&p, &url, "par", 1, "tools/list", "").await;
        tokio::join!(
            post(&p, &url, "par", 2, "tools/call", "get_weather"),
            post(&p, &url, "par", 3, "tools/call", "get_weather")
        )
    })
    .await;
    assert!(a.contains("Sunny") && b.contains("Sunny"), "{a}\n{b}");
    let told = [&a, &b].iter().filter(|t| t.contains(NOTICE)).count();
    assert_eq!(told, 1, "one notice between the two calls:\n{a}\n{b}");
    p.daemon.journal.wait_for(3).await;
    let recorded: Vec<_> = notices(&p).into_iter().flatten().collect();
    assert_eq!(
        recorded,
        [(true, None)],
        "only the call that carried it records it"
    );
}

/// A rug pull that takes every MCP message (`mcp_method: "*"`) still changes only tool
/// lists: a tool call is no listing, and its answer carries the notice.
#[tokio::test]
async fn a_rug_pull_taking_every_method_still_tells_on_a_tool_call() {
    let server = server().await;
    let yaml =
        config(&server, "").replace("payload: CHANGED}", "payload: CHANGED, mcp_method: '*'}");
    let p = start_proxy(&yaml).await;
    let url = server.http_url("/mcp");
    within("session", async {
        post(&p, &url, "s", 1, "tools/list", "").await;
        let call = post(&p, &url, "s", 2, "tools/call", "get_weather").await;
        assert!(call.contains(NOTICE) && call.contains("Sunny"), "{call}");
        let listed = post(&p, &url, "s", 3, "tools/list", "").await;
        assert!(
            listed.contains("CHANGED"),
            "the second listing changed: {listed}"
        );
    })
    .await;
    p.daemon.journal.wait_for(3).await;
    assert_eq!(notices(&p)[1], Some((true, None)));
}
