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
use crate::chaos::spec::CompiledChaos;
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
    let body = super::body::read_limited(body, &s.limits).await?;
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
#[path = "chaos_tests.rs"]
mod tests;
