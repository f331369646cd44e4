//! `POST /v1/runs/import`: a finished run's report recorded as a run (201, `Location`, its
//! record and report as a stored run's); what is not a flakestorm report is a 400 naming
//! why, a text body a 415, no token a 401.

use super::*;

const REPORT: &str = include_str!("../../tests/fixtures/reports/ci.json");

fn import() -> axum::http::request::Builder {
    axum::http::Request::post("/v1/runs/import").header("content-type", "application/json")
}

#[tokio::test]
async fn a_report_is_recorded_as_a_finished_run() {
    let a = app();
    let r = a.send(import(), REPORT).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let run = r.json();
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["kind"], "ci");
    let fixture: Value = serde_json::from_str(REPORT).unwrap();
    let want = match fixture["verdict"].as_str().unwrap() {
        "pass" => "passed",
        "fail" => "failed",
        _ => "error",
    };
    assert_eq!(run["status"], want, "{run}");
    assert_eq!(run["scores"]["overall"], fixture["overall"], "{run}");
    // It reads back as any stored run: listed, and its report served.
    let listed = a.get("/v1/runs").await.json();
    assert_eq!(listed["runs"][0]["id"], id.as_str());
    let report = a.get(&format!("/v1/runs/{id}/report")).await;
    assert_eq!(report.status, 200, "{}", report.text);
    assert_eq!(report.json()["overall"], fixture["overall"]);
}

#[tokio::test]
async fn what_is_not_a_report_is_refused_saying_why() {
    let a = app();
    let (code, message) = a.send(import(), r#"{"hello": 1}"#).await.error(400);
    assert_eq!(code, "bad_body");
    assert!(message.contains("schema"), "{message}");
    let newer = REPORT.replacen("flakestorm.ci/2", "flakestorm.ci/9", 1);
    let (_, message) = a.send(import(), &newer).await.error(400);
    assert!(message.contains("flakestorm.ci/9"), "{message}");
    let text = axum::http::Request::post("/v1/runs/import").header("content-type", "text/plain");
    a.send(text, REPORT).await.error(415);
    let anyone = app_with(Some("the-token"), true);
    assert_eq!(anyone.send(import(), REPORT).await.status, 401);
    assert!(
        a.get("/v1/runs").await.json()["runs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

/// An import that takes longer than the answer may wait is answered 202 with its run,
/// which goes on to its end by itself: nothing is cut, nothing stored twice.
#[tokio::test]
async fn a_long_import_is_answered_202_and_ends_by_itself() {
    let mut a = app();
    a.state.limits.import_answer = std::time::Duration::ZERO;
    let r = a.send(import(), REPORT).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(r.headers["location"], format!("/v1/runs/{id}").as_str());
    assert_eq!(r.json()["status"], "running", "{}", r.text);
    let store = a.state.jobs.store().clone();
    let ended = loop {
        store.flush().await.unwrap();
        let run = a.get(&format!("/v1/runs/{id}")).await.json();
        if run["status"] != "running" {
            break run;
        }
        tokio::task::yield_now().await;
    };
    assert_ne!(ended["status"], "error", "{ended}");
    let listed = a.get("/v1/runs").await.json();
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1, "stored once");
}

/// One import at a time: while one holds the turn, the next waits, then is told when to
/// come back (429, `Retry-After`), its body unread and its connection closed.
#[tokio::test(start_paused = true)]
async fn a_second_import_waits_its_turn_then_is_told_to_retry() {
    let a = app();
    let held = a.state.imports.clone();
    let _turn = held.hold_for_tests().await;
    let r = a.send(import(), REPORT).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.headers["retry-after"], "5");
    assert_eq!(r.headers["connection"], "close");
    assert!(r.text.contains("one at a time"), "{}", r.text);
}

/// A body slower than `control.body_timeout_ms` is a 408 that closes the connection.
#[tokio::test(start_paused = true)]
async fn a_body_that_does_not_arrive_in_time_is_408() {
    let mut a = app();
    a.state.limits.body_timeout = std::time::Duration::from_millis(200);
    let never = futures_util::stream::pending::<Result<axum::body::Bytes, std::io::Error>>();
    let req = import()
        .header("host", "127.0.0.1:8081")
        .header("authorization", "Bearer t")
        .body(Body::from_stream(never))
        .unwrap();
    let resp = a.router().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 408);
    assert_eq!(resp.headers()["connection"], "close");
}

/// A report larger than `control.max_import_bytes` is a 413 naming the key, and says
/// `Connection: close` (its body is not read to the end).
#[tokio::test]
async fn a_report_past_the_import_limit_is_413_and_closes() {
    let mut a = app();
    a.state.limits.max_import_bytes = 1024;
    let r = a.send(import(), REPORT).await;
    assert_eq!(r.status, 413, "{}", r.text);
    assert!(r.text.contains("control.max_import_bytes"), "{}", r.text);
    assert_eq!(r.headers["connection"], "close");
}
