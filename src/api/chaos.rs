//! `/v1/chaos`, `/v1/profiles`, `/v1/reset`: read and swap the active chaos rules at
//! runtime, for good or for a `ttl` (`?ttl=10m`, see `ttl`). Swaps are atomic and drop no
//! connection; errors list every problem with its path, as the config loader does.

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::chaos::profiles;
use crate::config::chaos::CompiledChaos;
use crate::config::parse_chaos;

/// The query of the routes that install rules: `ttl` only.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct Install {
    /// Revert to the baseline rules after this long: `90s`, `10m`, `1h30m`; 1s to 24h.
    ttl: Option<String>,
}

/// The `ttl` asked for, checked: a 400 naming the parameter otherwise.
fn ttl(q: Result<Query<Install>, QueryRejection>) -> Result<Option<std::time::Duration>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::InvalidParam {
        field: "query".into(),
        message: format!("{}; the only parameter is ttl", e.body_text()),
    })?;
    q.ttl
        .as_deref()
        .map(super::ttl::parse)
        .transpose()
        .map_err(|message| ApiError::InvalidParam {
            field: "ttl".into(),
            message,
        })
}

/// Makes `rules` the active rules: for good (the new baseline) or until `ttl` runs out.
fn install(s: &ApiState, rules: &CompiledChaos, ttl: Option<std::time::Duration>) {
    let installed = s.chaos.set(rules);
    match ttl {
        None => s.expiry.settled(rules),
        Some(t) => {
            let (engine, metrics) = (s.chaos.clone(), s.metrics.clone());
            s.expiry.expire_after(engine, metrics, installed, t);
        }
    }
    s.metrics.set_chaos_active(s.chaos.active());
}

/// The active rules, the seed that decides them, and the pending `ttl` if any.
fn current(s: &ApiState) -> Value {
    let rules = s.chaos.rules();
    let mut out = json!({"seed": s.chaos.seed(), "rules": rules.spec});
    if let Some((ttl, left)) = s.expiry.pending() {
        out["ttl_s"] = json!(ttl.as_secs());
        out["expires_in_s"] = json!(left.as_secs());
    }
    out
}

/// The active rules and their seed.
#[utoipa::path(get, path = "/v1/chaos", responses((status = 200, description = "rules and seed", body = Object)))]
pub async fn get_chaos(State(s): State<ApiState>) -> Json<Value> {
    Json(current(&s))
}

/// Replaces the rules. Body: a `chaos:` section as JSON, or YAML with a YAML content type.
/// Parsing runs on the blocking pool: a hostile body must not stall the async workers that
/// carry proxied traffic (size and depth are capped too, see `config::untrusted`).
#[utoipa::path(put, path = "/v1/chaos", params(Install), request_body(content = Object, description = "a chaos: section"), responses(
    (status = 200, description = "the rules now active", body = Object),
    (status = 400, description = "a malformed or out-of-range ttl", body = super::openapi::ErrorBody),
    (status = 422, description = "invalid rules, each at its path", body = super::openapi::ErrorBody),
))]
pub async fn put_chaos(
    State(s): State<ApiState>,
    query: Result<Query<Install>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let ttl = ttl(query)?;
    let yaml = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("yaml"));
    let body = super::body::read_limited(body).await?;
    let tools = s.tools.clone();
    let (spec, warnings) = tokio::task::spawn_blocking(move || {
        let value = super::body::parse(&body, yaml)?;
        parse_chaos(value, &tools).map_err(ApiError::InvalidChaos)
    })
    .await
    .map_err(|e| ApiError::BadBody(format!("parsing the body failed: {e}")))??;
    install(&s, &spec, ttl);
    match ttl {
        Some(t) => tracing::info!("chaos rules replaced through the API for {}s", t.as_secs()),
        None => tracing::info!("chaos rules replaced through the API"),
    }
    let mut out = current(&s);
    out["warnings"] = json!(warnings);
    Ok(Json(out))
}

/// Clears the rules.
#[utoipa::path(delete, path = "/v1/chaos", responses((status = 200, description = "no rules", body = Object)))]
pub async fn delete_chaos(State(s): State<ApiState>) -> Json<Value> {
    install(&s, &CompiledChaos::default(), None);
    tracing::info!("chaos rules cleared through the API");
    Json(current(&s))
}

/// Makes a built-in profile the active rules.
#[utoipa::path(post, path = "/v1/chaos/profiles/{name}", params(("name" = String, Path), Install), responses(
    (status = 200, description = "the profile's rules now active", body = Object),
    (status = 400, description = "a malformed or out-of-range ttl", body = super::openapi::ErrorBody),
    (status = 404, description = "no such profile", body = super::openapi::ErrorBody),
))]
pub async fn apply_profile(
    State(s): State<ApiState>,
    Path(name): Path<String>,
    query: Result<Query<Install>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let ttl = ttl(query)?;
    let spec = profiles::load(&name).map_err(ApiError::UnknownProfile)?;
    install(&s, &spec, ttl);
    tracing::info!("chaos profile `{name}` applied through the API");
    Ok(Json(current(&s)))
}

/// The built-in profiles.
#[utoipa::path(get, path = "/v1/profiles", responses((status = 200, description = "name and description of each", body = Object)))]
pub async fn list_profiles() -> Json<Value> {
    let list: Vec<Value> = profiles::PROFILES
        .iter()
        .map(|(name, yaml)| json!({"name": name, "description": profiles::description(yaml)}))
        .collect();
    Json(json!({"profiles": list}))
}

/// Clears the rules and every rule counter (`after_calls` starts over).
#[utoipa::path(post, path = "/v1/reset", responses((status = 200, description = "no rules, counters at zero", body = Object)))]
pub async fn reset(State(s): State<ApiState>) -> Json<Value> {
    install(&s, &CompiledChaos::default(), None);
    Json(current(&s))
}

#[cfg(test)]
#[path = "chaos_ttl_tests.rs"]
mod ttl_tests;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::super::{ApiState, router};
    use crate::chaos::Engine;
    use crate::config::ToolSpec;
    use crate::exchange::Target;

    fn state() -> ApiState {
        let tools = vec![ToolSpec {
            name: "search".into(),
            match_url: "http://s/*".into(),
        }];
        let jobs = crate::jobs::Jobs::for_tests(&tempfile::tempdir().unwrap().keep());
        ApiState {
            chaos: Engine::new(9),
            tools: Arc::from(tools),
            ..super::super::test_state(jobs)
        }
    }

    async fn call(
        s: &ApiState,
        method: &str,
        uri: &str,
        ct: &str,
        body: &str,
    ) -> (u16, serde_json::Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "localhost:8081")
            .header("authorization", "Bearer t");
        if !ct.is_empty() {
            req = req.header("content-type", ct);
        }
        let req = req.body(Body::from(body.to_string())).unwrap();
        let resp = router(s.clone()).oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        )
    }

    #[tokio::test]
    async fn put_get_delete_and_reset() {
        let s = state();
        let yaml = "tool_faults:\n  - {tool: search, mode: error, error_code: 502}\n";
        let (status, body) = call(&s, "PUT", "/v1/chaos", "application/yaml", yaml).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["rules"]["tool_faults"][0]["error_code"], 502);
        assert!(
            s.chaos
                .decide(
                    "http://s/q",
                    &Target::Tool {
                        name: "search".into()
                    },
                    None
                )
                .fault
                .is_some()
        );
        let (_, got) = call(&s, "GET", "/v1/chaos", "", "").await;
        assert_eq!(
            (got["seed"].as_u64(), &got["rules"]),
            (Some(9), &body["rules"])
        );
        let (status, _) = call(&s, "DELETE", "/v1/chaos", "", "").await;
        assert_eq!(status, 200);
        assert!(s.chaos.rules().is_empty());
        call(&s, "POST", "/v1/chaos/profiles/api_outage", "", "").await;
        assert!(!s.chaos.rules().is_empty());
        call(&s, "POST", "/v1/reset", "", "").await;
        assert!(s.chaos.rules().is_empty());
    }

    /// Issue #9: these were answered 200 and installed, and the next LLM call aborted the
    /// process (or NaN/infinity fired always). Now 422 with the path and the range, and
    /// the rules in force stay as they were.
    #[tokio::test]
    async fn the_issue_payloads_are_refused_with_path_and_range() {
        let s = state();
        let cases = [
            (
                "application/json",
                r#"{"llm_faults":[{"mode":"response_drift","drift_type":"verbosity_shift","direction":"expand","factor":1e12}]}"#,
                "chaos.llm_faults[0].factor",
                "1000000000000 is outside 1..=100",
            ),
            (
                "application/json",
                r#"{"context_attacks":[{"type":"overflow","inject_tokens":4294967295}]}"#,
                "chaos.context_attacks[0].inject_tokens",
                "4294967295 is outside 1..=2000000",
            ),
            (
                "application/json",
                r#"{"llm_faults":[{"mode":"response_drift","factor":1e300}]}"#,
                "chaos.llm_faults[0].factor",
                "1e300 is outside 1..=100",
            ),
            (
                "application/yaml",
                "llm_faults:\n  - {mode: empty, probability: .nan}\n",
                "chaos.llm_faults[0].probability",
                ".nan is not a finite number; allowed: 0..=1",
            ),
            (
                "application/yaml",
                "llm_faults:\n  - {mode: empty, probability: .inf}\n",
                "chaos.llm_faults[0].probability",
                ".inf is not a finite number; allowed: 0..=1",
            ),
            (
                "application/yaml",
                "context_attacks: {overflow: {inject_tokens: 4294967296}}\n",
                "chaos.context_attacks[0].inject_tokens",
                "4294967296 is outside 1..=2000000",
            ),
        ];
        for (ct, body, path, message) in cases {
            let (status, err) = call(&s, "PUT", "/v1/chaos", ct, body).await;
            assert_eq!(status, 422, "{body}: {err}");
            let errors = err["error"]["errors"].as_array().unwrap();
            assert_eq!(errors.len(), 1, "{body}: {err}");
            assert_eq!(errors[0]["path"], path, "{body}");
            let got = errors[0]["message"].as_str().unwrap();
            assert!(got.starts_with(message), "{body}: {got}");
            assert!(s.chaos.rules().is_empty(), "{body} was installed");
        }
        let edge = r#"{"llm_faults":[{"mode":"response_drift","factor":100,"probability":1}]}"#;
        let (status, body) = call(&s, "PUT", "/v1/chaos", "application/json", edge).await;
        assert_eq!(status, 200, "the bounds themselves are allowed: {body}");
    }

    #[tokio::test]
    async fn bad_rules_list_every_problem_and_change_nothing() {
        let s = state();
        call(&s, "POST", "/v1/chaos/profiles/degraded_llm", "", "").await;
        let before = s.chaos.rules().spec.clone();
        let body = r#"{"tool_faults": [{"tool": "serch", "mode": "error"}, {"tool": "search", "mode": "explode"}], "llm_faults": [{"mode": "rate_limit", "probability": 2}]}"#;
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/json", body).await;
        assert_eq!(status, 422);
        let paths: Vec<&str> = err["error"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "chaos.tool_faults[1].mode",
                "chaos.tool_faults[0].tool",
                "chaos.llm_faults[0].probability"
            ]
        );
        assert_eq!(
            s.chaos.rules().spec,
            before,
            "a rejected PUT leaves the rules alone"
        );
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/json", "{not json").await;
        assert_eq!(
            (status, err["error"]["code"].as_str()),
            (400, Some("bad_body"))
        );
        let (status, err) = call(&s, "POST", "/v1/chaos/profiles/nope", "", "").await;
        assert_eq!(status, 404);
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("api_outage")
        );
        let (_, list) = call(&s, "GET", "/v1/profiles", "", "").await;
        assert_eq!(list["profiles"].as_array().unwrap().len(), 7);
    }

    #[tokio::test]
    async fn oversized_and_deeply_nested_bodies_are_refused_with_4xx() {
        let s = state();
        let big = format!(
            "{{\"tool_faults\": [], \"x\": \"{}\"}}",
            "a".repeat(1024 * 1024)
        );
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/json", &big).await;
        assert_eq!(
            (status, err["error"]["code"].as_str()),
            (413, Some("too_large"))
        );
        // The issue's body: 117 KiB of nesting, once 4.5 s of parsing on an async worker.
        let depth = 40_000;
        let deep = format!("tool_faults: {}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(deep.len() > 117 * 1024 / 2);
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/yaml", &deep).await;
        assert_eq!(status, 400, "{err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("nesting deeper than 64 levels"),
            "{message}"
        );
        let deep_json = format!(
            "{{\"tool_faults\": {}{}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/json", &deep_json).await;
        assert_eq!(status, 400, "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nesting deeper than 64")
        );
        let dup = "tool_faults: []\ntool_faults: [{tool: search, mode: error}]\n";
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/yaml", dup).await;
        assert_eq!(status, 400, "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("duplicate key `tool_faults` (lines 1 and 2)")
        );
        let dup_json =
            r#"{"tool_faults": [], "tool_faults": [{"tool": "search", "mode": "error"}]}"#;
        let (status, err) = call(&s, "PUT", "/v1/chaos", "application/json", dup_json).await;
        assert_eq!(status, 400, "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("duplicate key `tool_faults`")
        );
        assert!(s.chaos.rules().is_empty());
    }

    /// A body being parsed holds a blocking-pool thread, not the async worker: on a
    /// single-threaded runtime another request is answered while the parse is held open.
    #[tokio::test(flavor = "current_thread")]
    async fn a_body_being_parsed_does_not_hold_up_other_requests() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let s = state();
        let (entered, release) = super::super::body::gate::arm();
        let (answered_tx, answered_rx) = std::sync::mpsc::channel::<()>();
        let forced = Arc::new(AtomicBool::new(false));
        // Deadlock breaker only (no timing is asserted): if the parse ran on this runtime's
        // only thread, nothing else could run until the parse was released.
        let watchdog = {
            let forced = forced.clone();
            std::thread::spawn(move || {
                let waited = answered_rx.recv_timeout(std::time::Duration::from_secs(20));
                forced.store(waited.is_err(), Ordering::SeqCst);
                let _ = release.send(());
            })
        };
        let put = {
            let s = s.clone();
            tokio::spawn(async move {
                call(
                    &s,
                    "PUT",
                    "/v1/chaos",
                    "application/yaml",
                    "# gate\ntool_faults: []\n",
                )
                .await
            })
        };
        tokio::task::spawn_blocking(move || entered.recv())
            .await
            .unwrap()
            .unwrap();
        let (status, _) = call(&s, "GET", "/v1/chaos", "", "").await;
        assert_eq!(status, 200);
        answered_tx.send(()).unwrap();
        assert_eq!(put.await.unwrap().0, 200);
        watchdog.join().unwrap();
        assert!(
            !forced.load(Ordering::SeqCst),
            "GET waited for the parse to be released"
        );
    }
}
