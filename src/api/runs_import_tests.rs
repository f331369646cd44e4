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
