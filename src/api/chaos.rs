//! `/v1/chaos`, `/v1/profiles`, `/v1/reset`: read and swap the active chaos rules at
//! runtime. Swaps are atomic and drop no connection; errors list every problem with its
//! path, as the config loader does.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::chaos::profiles;
use crate::config::parse_chaos;

/// The active rules and the seed that decides them.
fn current(s: &ApiState) -> Value {
    let rules = s.chaos.rules();
    json!({"seed": s.chaos.seed(), "rules": rules.spec})
}

pub async fn get_chaos(State(s): State<ApiState>) -> Json<Value> {
    Json(current(&s))
}

/// Replaces the rules. Body: a `chaos:` section as JSON, or YAML with a YAML content type.
pub async fn put_chaos(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let yaml = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("yaml"));
    let value: Value = if yaml {
        use figment::providers::{Format, Yaml};
        let text = String::from_utf8_lossy(&body);
        // As the config loader does, so `.nan` and `.inf` are refused here too.
        crate::config::finite::extract(&figment::Figment::from(Yaml::string(&text)))
            .map_err(|e| ApiError::BadBody(e.to_string()))?
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::BadBody(format!("not JSON: {e}")))?
    };
    let (spec, warnings) = parse_chaos(value, &s.tools).map_err(ApiError::InvalidChaos)?;
    s.chaos.set(&spec).map_err(ApiError::BadBody)?;
    tracing::info!("chaos rules replaced through the API");
    let mut out = current(&s);
    out["warnings"] = json!(warnings);
    Ok(Json(out))
}

pub async fn delete_chaos(State(s): State<ApiState>) -> Json<Value> {
    s.chaos.clear();
    tracing::info!("chaos rules cleared through the API");
    Json(current(&s))
}

pub async fn apply_profile(
    State(s): State<ApiState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let spec = profiles::load(&name).map_err(ApiError::UnknownProfile)?;
    s.chaos.set(&spec).map_err(ApiError::BadBody)?;
    tracing::info!("chaos profile `{name}` applied through the API");
    Ok(Json(current(&s)))
}

pub async fn list_profiles() -> Json<Value> {
    let list: Vec<Value> = profiles::PROFILES
        .iter()
        .map(|(name, yaml)| json!({"name": name, "description": profiles::description(yaml)}))
        .collect();
    Json(json!({"profiles": list}))
}

/// Clears the rules and every rule counter (`after_calls` starts over).
pub async fn reset(State(s): State<ApiState>) -> Json<Value> {
    s.chaos.clear();
    Json(current(&s))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::super::{ApiState, router};
    use crate::chaos::Engine;
    use crate::config::{OneOrMany, ToolSpec};
    use crate::exchange::Target;
    use crate::telemetry::Metrics;

    fn state() -> ApiState {
        let tools = vec![ToolSpec {
            name: "search".into(),
            match_url: OneOrMany::One("http://s/*".into()),
        }];
        ApiState {
            chaos: Engine::new(9),
            tools: Arc::from(tools),
            metrics: Metrics::new(),
            ca_pem: "".into(),
            token: None,
        }
    }

    async fn call(
        s: &ApiState,
        method: &str,
        uri: &str,
        ct: &str,
        body: &str,
    ) -> (u16, serde_json::Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", ct)
            .body(Body::from(body.to_string()))
            .unwrap();
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
}
