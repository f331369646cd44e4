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
        figment::Figment::from(Yaml::string(&text))
            .extract()
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
