//! `?ttl=` on the routes that install rules, through the router on paused time: the rules
//! revert to the baseline when it runs out (log line, `flakestorm_chaos_expired_total`,
//! `flakestorm_chaos_active` back to 0), a later change cancels the revert, a run's
//! scenario over them is left alone, and a bad `ttl` is a 400 naming it.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::super::{ApiState, router};
use crate::chaos::spec::CompiledChaos;

const RULE_A: &str = r#"{"tool_faults": [{"tool": "*", "mode": "error", "error_code": 500}]}"#;
const RULE_B: &str = r#"{"tool_faults": [{"tool": "*", "mode": "error", "error_code": 503}]}"#;

fn state() -> ApiState {
    let jobs = crate::jobs::Jobs::for_tests(&tempfile::tempdir().unwrap().keep());
    super::super::test_state(jobs)
}

async fn call(s: &ApiState, method: &str, uri: &str, body: &str) -> (u16, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost:8081")
        .header("authorization", "Bearer t");
    if !body.is_empty() {
        req = req.header("content-type", "application/json");
    }
    let resp = router(s.clone())
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).to_string();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The error code installed by the active global rules, if any.
fn code(s: &ApiState) -> Option<u64> {
    let rules = s.chaos.rules();
    let v = serde_json::to_value(&rules.spec).unwrap();
    v["tool_faults"][0]["error_code"].as_u64()
}

async fn metrics(s: &ApiState) -> String {
    let (_, text) = call(s, "GET", "/metrics", "").await;
    text.as_str().expect("metrics are text").to_string()
}

#[tokio::test(start_paused = true)]
async fn rules_with_a_ttl_revert_to_the_baseline_when_it_runs_out() {
    let s = state();
    let (status, body) = call(&s, "PUT", "/v1/chaos", RULE_A).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(&s, "PUT", "/v1/chaos?ttl=10m", RULE_B).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["ttl_s"].as_u64(), code(&s)), (Some(600), Some(503)));
    assert!(metrics(&s).await.contains("flakestorm_chaos_active 1\n"));
    tokio::time::sleep(Duration::from_secs(599)).await;
    assert_eq!(code(&s), Some(503), "not before the ttl");
    let (_, got) = call(&s, "GET", "/v1/chaos", "").await;
    assert_eq!(got["expires_in_s"].as_u64(), Some(1), "{got}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(code(&s), Some(500), "back to the rules set without a ttl");
    let (_, got) = call(&s, "GET", "/v1/chaos", "").await;
    assert!(got.get("ttl_s").is_none(), "{got}");
    assert!(
        metrics(&s)
            .await
            .contains("flakestorm_chaos_expired_total 1\n")
    );
    // With no baseline rules, the gauge goes back to 0 when the ttl runs out.
    call(&s, "DELETE", "/v1/chaos", "").await;
    call(&s, "POST", "/v1/chaos/profiles/api_outage?ttl=90s", "").await;
    assert!(s.chaos.active());
    tokio::time::sleep(Duration::from_secs(91)).await;
    assert!(!s.chaos.active());
    let text = metrics(&s).await;
    assert!(text.contains("flakestorm_chaos_active 0\n"), "{text}");
    assert!(
        text.contains("flakestorm_chaos_expired_total 2\n"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_later_change_cancels_the_revert() {
    let s = state();
    call(&s, "PUT", "/v1/chaos?ttl=1m", RULE_B).await;
    call(&s, "PUT", "/v1/chaos", RULE_A).await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(code(&s), Some(500), "rules set after the ttl ones stay");
    // A newer ttl replaces the older one: only the newer one's timer counts.
    call(&s, "PUT", "/v1/chaos?ttl=1m", RULE_B).await;
    call(&s, "PUT", "/v1/chaos?ttl=5m", RULE_B).await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(code(&s), Some(503), "the first timer was void");
    tokio::time::sleep(Duration::from_secs(181)).await;
    assert_eq!(code(&s), Some(500));
    assert!(
        metrics(&s)
            .await
            .contains("flakestorm_chaos_expired_total 1\n")
    );
}

#[tokio::test(start_paused = true)]
async fn a_runs_scenario_over_ttl_rules_is_left_alone() {
    let s = state();
    call(&s, "PUT", "/v1/chaos?ttl=1m", RULE_B).await;
    let scenario = CompiledChaos::default();
    let guard = s.chaos.install_compiled(&scenario, None);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(
        code(&s),
        None,
        "the run's (empty) scenario is still in force"
    );
    drop(guard);
    assert_eq!(code(&s), Some(503), "the run gave the ttl rules back");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(code(&s), None, "then they were reverted");
}

#[tokio::test]
async fn a_bad_ttl_is_a_400_naming_it_and_changes_nothing() {
    let s = state();
    call(&s, "PUT", "/v1/chaos", RULE_A).await;
    for (uri, field, needle) in [
        ("/v1/chaos?ttl=10", "ttl", "not a duration"),
        ("/v1/chaos?ttl=ten", "ttl", "not a duration"),
        ("/v1/chaos?ttl=", "ttl", "not a duration"),
        ("/v1/chaos?ttl=25h", "ttl", "outside 1s..=24h"),
        ("/v1/chaos?ttl=0s", "ttl", "outside 1s..=24h"),
        ("/v1/chaos?tll=10m", "query", "the only parameter is ttl"),
    ] {
        let (status, err) = call(&s, "PUT", uri, RULE_B).await;
        assert_eq!(status, 400, "{uri}: {err}");
        assert_eq!(err["error"]["code"], "invalid_param", "{uri}");
        assert_eq!(err["error"]["errors"][0]["path"], field, "{uri}: {err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{uri}: {message}");
        assert!(message.contains(&format!("`{field}`")), "{uri}: {message}");
        assert_eq!(code(&s), Some(500), "{uri} changed the rules");
    }
    let (status, _) = call(&s, "POST", "/v1/chaos/profiles/api_outage?ttl=2d", "").await;
    assert_eq!(status, 400);
    // The token guards the parameter's route like any other.
    let req = Request::put("/v1/chaos?ttl=10m")
        .header("host", "localhost:8081")
        .header("content-type", "application/json")
        .body(Body::from(RULE_B))
        .unwrap();
    let resp = router(s.clone()).oneshot(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(code(&s), Some(500));
}
