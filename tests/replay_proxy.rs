//! Replay through the real proxy: a session's recorded tool answers reach the agent's own
//! calls (status, body, latency on paused time, refused connections) while the tool's real
//! origin receives nothing; calls with no answer left follow `on_miss`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{H1, client_via, origin, start_proxy};
use flakestorm::chaos::ReplayTable;
use flakestorm::config::replays::{OnMiss, ToolResponse};
use serde_json::{Value, json};

fn tools(o: &origin::Origin) -> String {
    format!(
        "tools:\n  - name: search\n    match_url: 'http://{}/*'\n",
        o.addr
    )
}

fn answer(status: u16, response: Value, latency_ms: u64) -> ToolResponse {
    ToolResponse {
        tool: "search".into(),
        status,
        response,
        latency_ms,
    }
}

#[tokio::test(start_paused = true)]
async fn recorded_answers_in_order_then_a_599_naming_the_request() {
    let o = origin::fixed(None, "live").await;
    let p = start_proxy(&tools(&o)).await;
    let table = ReplayTable::new(
        &[
            answer(504, Value::Null, 30_000),
            answer(200, json!({"hits": ["ACME"]}), 0),
            answer(200, json!("plain text"), 0),
            answer(0, Value::Null, 0),
        ],
        OnMiss::Error,
    );
    let guard = p.daemon.chaos.install_replay(Arc::new(table), None);
    let client = client_via(&p, H1);
    let start = tokio::time::Instant::now();
    let r = client.get(o.http_url("/q?x=1")).send().await.unwrap();
    assert_eq!(r.status(), 504);
    assert!(
        start.elapsed() >= Duration::from_secs(30),
        "recorded latency held"
    );
    assert_eq!(
        r.bytes().await.unwrap().len(),
        0,
        "null response: empty body"
    );
    let r = client.get(o.http_url("/q")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v, json!({"hits": ["ACME"]}));
    let r = client.get(o.http_url("/q")).send().await.unwrap();
    assert_eq!(r.text().await.unwrap(), "plain text", "a string as is");
    let err = client.get(o.http_url("/q")).send().await.unwrap_err();
    assert!(
        err.is_request() || err.is_connect(),
        "status 0 closes: {err}"
    );
    let r = client.post(o.http_url("/more")).send().await.unwrap();
    assert_eq!(r.status(), 599);
    let body = r.text().await.unwrap();
    assert!(
        body.contains(&format!("POST {}", o.http_url("/more"))) && body.contains("call 5"),
        "{body}"
    );
    assert_eq!(o.log.len(), 0, "the real tool origin received nothing");
    p.daemon.journal.wait_for(5).await;
    let modes: Vec<String> = p
        .daemon
        .journal
        .all()
        .iter()
        .map(|e| {
            let f = e.fault.as_ref().expect("recorded as a fault");
            assert_eq!(f.rule, "replay");
            f.mode.to_string()
        })
        .collect();
    assert_eq!(
        modes,
        [
            "replayed",
            "replayed",
            "replayed",
            "replayed",
            "replay_miss"
        ]
    );
    assert_eq!(guard.rules().replay.as_ref().unwrap().served(), 4);
    drop(guard);
    let r = client.get(o.http_url("/after")).send().await.unwrap();
    assert_eq!(
        r.text().await.unwrap(),
        "live",
        "the guard withdrew the session"
    );
    assert_eq!(o.log.len(), 1);
    p.stop().await;
}

#[tokio::test]
async fn on_miss_live_forwards_and_trace_scoped_sessions_stay_in_their_trace() {
    let o = origin::fixed(None, "live").await;
    let p = start_proxy(&tools(&o)).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let table = ReplayTable::new(&[answer(503, json!("down"), 0)], OnMiss::Live);
    let _g = p.daemon.chaos.install_replay(Arc::new(table), Some(trace));
    let client = client_via(&p, H1);
    let traced = || {
        client
            .get(o.http_url("/q"))
            .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
    };
    let r = client.get(o.http_url("/untraced")).send().await.unwrap();
    assert_eq!(r.text().await.unwrap(), "live", "another case's call");
    let r = traced().send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.text().await.unwrap(), "down");
    let r = traced().send().await.unwrap();
    assert_eq!(r.text().await.unwrap(), "live", "on_miss: live forwards");
    assert_eq!(o.log.len(), 2);
    p.stop().await;
}
