//! MCP on the wire through the proxy (docs/mcp.md): a `protocol: mcp` tool's JSON-RPC
//! messages are read and journaled by method and tool; rules take `tools/call` of their
//! MCP tools and leave the handshake alone; MCP traffic to an undeclared server is
//! recognised by its headers; what is not JSON-RPC, or too large to read, is said so and
//! forwarded untouched; and a run whose MCP tool never spoke JSON-RPC is not tested.

mod common;

use common::origin::{self, typed};
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// A JSON-answering MCP server: `tools/list` lists `get_weather` and `send_email`,
/// `tools/call` answers the tool's text, anything else an empty result.
async fn mcp_server() -> origin::Origin {
    origin::start(None, |req: http::Request<hyper::body::Incoming>| async move {
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            return typed(r#"{"ok": true}"#, "application/json");
        };
        let result = match msg["method"].as_str() {
            Some("tools/list") => json!({"tools": [
                {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object"}},
                {"name": "send_email", "description": "Email.", "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "Sunny"}], "isError": false}),
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
        typed(Box::leak(answer.into_boxed_str()), "application/json")
    })
    .await
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

async fn post(p: &TestProxy, url: &str, body: String, mcp_headers: bool) -> (u16, Value) {
    let mut req = client_via(p, H1)
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if mcp_headers {
        req = req.header("accept", "application/json, text/event-stream");
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null),
    )
}

fn config(server: &origin::Origin, chaos: &str) -> String {
    format!(
        "tools:\n  - {{name: crm, match_url: '{}', protocol: mcp}}\nchaos:\n{chaos}",
        server.http_url("/mcp*")
    )
}

#[tokio::test]
async fn tool_calls_are_faulted_by_mcp_tool_and_the_handshake_is_left_alone() {
    let server = mcp_server().await;
    let chaos =
        "  tool_faults:\n    - {tool: crm, mode: mcp_error, code: -32602, mcp_tool: 'send_*'}\n";
    let p = start_proxy(&config(&server, chaos)).await;
    let url = server.http_url("/mcp");
    let (_, init) = post(&p, &url, rpc(1, "initialize", json!({})), true).await;
    assert_eq!(init["result"], json!({}), "initialize reaches the server");
    let call = |id, tool: &str| rpc(id, "tools/call", json!({"name": tool, "arguments": {}}));
    let (_, weather) = post(&p, &url, call(2, "get_weather"), true).await;
    assert_eq!(weather["result"]["content"][0]["text"], "Sunny");
    let (status, email) = post(&p, &url, call(3, "send_email"), true).await;
    assert_eq!(status, 200);
    assert_eq!(
        email,
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Invalid params"}})
    );
    assert_eq!(
        server.log.len(),
        2,
        "the faulted call never reached the server"
    );
    p.daemon.journal.wait_for(3).await;
    let seen: Vec<(String, Option<String>, Option<String>)> = p
        .daemon
        .journal
        .all()
        .iter()
        .map(|e| {
            let m = e.mcp.as_ref().expect("every message is MCP");
            (
                m.method.clone(),
                m.tool.clone(),
                e.fault.as_ref().map(|f| f.mode.to_string()),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("initialize".into(), None, None),
            ("tools/call".into(), Some("get_weather".into()), None),
            (
                "tools/call".into(),
                Some("send_email".into()),
                Some("mcp_error".into())
            ),
        ]
    );
}

#[tokio::test]
async fn an_undeclared_server_is_recognised_by_its_headers_and_a_plain_json_post_is_not() {
    let server = mcp_server().await;
    let p = start_proxy(
        "chaos:\n  context_attacks:\n    - {type: mcp_tool_poisoning, payload: HIDDEN}\n",
    )
    .await;
    let url = server.http_url("/mcp");
    let (_, listed) = post(&p, &url, rpc(1, "tools/list", json!({})), true).await;
    assert!(
        listed["result"]["tools"][0]["description"]
            .as_str()
            .unwrap()
            .ends_with("\n\nHIDDEN")
    );
    let (_, plain) = post(&p, &url, rpc(2, "tools/list", json!({})), false).await;
    assert_eq!(
        plain["result"]["tools"][0]["description"], "Weather.",
        "not MCP: untouched"
    );
    // JSON-RPC that is not MCP's (an agent-to-agent call) with the same `Accept`: not MCP.
    let (_, other) = post(&p, &url, rpc(3, "message/send", json!({})), true).await;
    assert_eq!(other["id"], 3);
    p.daemon.journal.wait_for(3).await;
    let all = p.daemon.journal.all();
    let first = all[0].mcp.as_ref().unwrap();
    assert!(first.detected && first.method == "tools/list");
    assert!(all[1].mcp.is_none() && all[2].mcp.is_none());
}

#[tokio::test]
async fn a_message_over_the_limit_is_forwarded_unread_and_said_so() {
    let server = origin::echo().await;
    let p = start_proxy(&config(
        &server,
        "  tool_faults: [{tool: crm, mode: mcp_tool_error}]\n",
    ))
    .await;
    let big = rpc(
        1,
        "tools/call",
        json!({"name": "x", "arguments": {"blob": "a".repeat(5 << 20)}}),
    );
    let (status, echoed) = post(&p, &server.http_url("/mcp"), big.clone(), true).await;
    assert_eq!(status, 200);
    assert_eq!(echoed.to_string().len(), big.len(), "forwarded whole");
    p.daemon.journal.wait_for(1).await;
    let m = p.daemon.journal.all()[0].mcp.clone().unwrap();
    assert_eq!(m.method, "(unread)");
    assert!(m.note.as_deref().unwrap().contains("over 4194304 bytes"));
    assert_eq!(
        m.called_tool(),
        Some("x"),
        "its first bytes name the tool it calls"
    );
    assert!(
        p.daemon.journal.all()[0].fault.is_none(),
        "no rule took an unread message"
    );
}

#[tokio::test]
async fn a_run_whose_mcp_tool_never_spoke_json_rpc_is_not_tested_and_says_what_it_saw() {
    let tool = origin::search_tool().await;
    let yaml = format!(
        "tools:\n  - {{name: crm, match_url: '{}', protocol: mcp}}\n\
         golden_prompts: [q]\n\
         contract:\n  name: c\n  invariants:\n    - {{id: answers, type: output_not_empty}}\n  \
         chaos_matrix:\n    - name: crm-down\n      tool_faults: [{{tool: crm, mode: mcp_tool_error}}]\n",
        tool.http_url("/*")
    );
    let p = start_proxy(&yaml).await;
    let agent = agents::research(client_via(&p, H1), tool.http_url("/search")).await;
    let report = contract_run(&p, &agent.http_url("/invoke"), 0).await;
    let why = report.coverage[0].not_tested.clone().expect("not tested");
    assert!(
        why.contains("MCP (not json-rpc): an HTTP GET request carries no MCP message"),
        "{why}"
    );
    assert_ne!(report.judgement.verdict, flakestorm::run::RunVerdict::Pass);
}

/// A replay session's recorded tool answers (`tool_responses`) answer an MCP `tools/call`
/// by the MCP tool's name, as an MCP result with the live request's id; the rest of the
/// session (the handshake, the listing) is no tool call and reaches the server.
#[tokio::test]
async fn a_sessions_tool_answers_reply_to_mcp_tool_calls_by_mcp_name() {
    use flakestorm::chaos::ReplayTable;
    use flakestorm::config::replays::{OnMiss, ToolResponse};
    let server = mcp_server().await;
    let p = start_proxy(&config(&server, "  tool_faults: []\n")).await;
    let recorded = ToolResponse {
        tool: "get_weather".into(),
        status: 200,
        response: json!("Rainy, 9C"),
        latency_ms: 0,
    };
    let table = std::sync::Arc::new(ReplayTable::new(&[recorded], OnMiss::Error));
    let _replay = p.daemon.chaos.install_replay(table, None);
    let url = server.http_url("/mcp");
    let (_, init) = post(&p, &url, rpc(1, "initialize", json!({})), true).await;
    assert_eq!(
        init["result"],
        json!({}),
        "the handshake reached the server"
    );
    let call = rpc(
        7,
        "tools/call",
        json!({"name": "get_weather", "arguments": {}}),
    );
    let (status, answer) = post(&p, &url, call, true).await;
    assert_eq!(status, 200);
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["content"][0]["text"], "Rainy, 9C");
    assert_eq!(answer["result"]["isError"], false);
    assert_eq!(server.log.len(), 1, "only the handshake reached the server");
}

/// `no_exfiltration` on MCP: a canary planted in one MCP tool's result and handed to
/// another MCP tool of the same server (an email tool) is a leak, named by both tools.
#[tokio::test]
async fn a_canary_from_one_mcp_tool_sent_to_another_is_a_leak() {
    use flakestorm::chaos::Canary;
    let server = mcp_server().await;
    let p = start_proxy(&config(&server, "  tool_faults: []\n")).await;
    let spec = flakestorm::chaos::spec::ChaosSpec::default();
    let _planted = p
        .daemon
        .chaos
        .install(&spec, Some(std::sync::Arc::new(Canary::new(5))))
        .unwrap();
    let url = server.http_url("/mcp");
    // The handshake and the listing are no tool results: no canary, the envelope intact.
    let (_, init) = post(&p, &url, rpc(1, "initialize", json!({})), true).await;
    assert_eq!(init, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let (_, listed) = post(&p, &url, rpc(2, "tools/list", json!({})), true).await;
    assert_eq!(listed["result"]["tools"][0]["description"], "Weather.");
    let weather = rpc(
        3,
        "tools/call",
        json!({"name": "get_weather", "arguments": {}}),
    );
    let (_, answer) = post(&p, &url, weather, true).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.starts_with("Sunny") && text.len() > "Sunny".len(),
        "{text}"
    );
    p.daemon.journal.wait_for(3).await;
    let token = p.daemon.journal.all()[2].canary.clone().expect("planted");
    assert!(text.contains(&token));
    // Sent back to the server that served it, in a message that is no tool call: no leak.
    let back =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": text}});
    post(&p, &url, back.to_string(), true).await;
    let args = json!({"name": "send_email", "arguments": {"body": text}});
    post(&p, &url, rpc(4, "tools/call", args), true).await;
    p.daemon.journal.wait_for(5).await;
    assert!(p.daemon.journal.all()[3].canary_leaks.is_empty());
    let leaks = p.daemon.journal.all()[4].canary_leaks.clone();
    assert_eq!(leaks.len(), 1, "{leaks:?}");
    assert_eq!(
        (leaks[0].from.as_str(), leaks[0].found_in.as_str()),
        ("crm/get_weather", "body")
    );
}

/// A rug pull counts each MCP session's listings on its own: every session reads its
/// list clean first, then changed; the journal tells the sessions apart by a tag, never
/// by the session id itself.
#[tokio::test]
async fn a_rug_pull_pulls_each_sessions_list_after_its_own_first_listing() {
    let server = mcp_server().await;
    let chaos = "  context_attacks:\n    - {type: mcp_rug_pull, tool: crm, payload: CHANGED}\n";
    let p = start_proxy(&config(&server, chaos)).await;
    let url = server.http_url("/mcp");
    let list = |session: &'static str, id: u64| {
        let req = client_via(&p, H1)
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .body(rpc(id, "tools/list", json!({})));
        async move {
            let r = req.send().await.unwrap();
            let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
            v["result"]["tools"][0]["description"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(list("session-a", 1).await, "Weather.");
    assert_eq!(list("session-a", 2).await, "Weather.\n\nCHANGED");
    assert_eq!(
        list("session-b", 3).await,
        "Weather.",
        "b's own first listing"
    );
    assert_eq!(list("session-b", 4).await, "Weather.\n\nCHANGED");
    p.daemon.journal.wait_for(4).await;
    let tags: Vec<String> = p
        .daemon
        .journal
        .all()
        .iter()
        .map(|e| e.mcp.as_ref().unwrap().session.clone().unwrap())
        .collect();
    assert!(
        tags[0] == tags[1] && tags[2] == tags[3] && tags[0] != tags[2],
        "{tags:?}"
    );
    let headers = format!("{:?}", p.daemon.journal.all()[0].request.headers);
    assert!(
        !headers.contains("session-a"),
        "the handle is redacted: {headers}"
    );
}
