//! The control plane's HTTP API (axum): liveness and readiness (`ready`), Prometheus
//! metrics, the CA certificate, the chaos rules (`chaos`: read, replace through the loader's
//! own compile path, clear, profiles, reset; `ttl`: rules that revert by themselves) and
//! runs (`runs`, `import`). Every request passes `strict` (one well-formed `Host`) and
//! `conn::at_work` (no read deadline while a handler works; `Connection: close` after an
//! unread body); every `/v1/*` request then passes `guard` (no browser page may reach it)
//! and the token (`auth`, or the web view's cookie: `session`); only `/healthz`, `/readyz`
//! and `/metrics` are open. The web view (`ui`, above this module) hands its routes in
//! through `Extra`, so they pass the same checks. `error` is the only place API errors get
//! HTTP statuses.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod auth;
mod body;
mod chaos;
mod conn;
mod deadline;
mod error;
mod guard;
mod headers;
mod import;
mod new_run;
mod openapi;
mod ready;
mod runs;
pub mod session;
mod sse;
mod strict;
mod submitted;
pub mod token;
pub mod ttl;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};

pub use auth::Failures;
pub use body::Limits;
pub use conn::Conn;
pub use deadline::DeadlineListener;
pub use error::ApiError;
pub use guard::Hosts;
pub use import::Imports;
#[doc(hidden)]
pub use new_run::check_submission;
pub use ready::Readiness;
pub use runs::ListQuery;
/// For the web view's reads, so they fail as `/v1/runs` does.
pub(crate) use runs::{query, record, store_error};
pub use ttl::Expiry;

use crate::chaos::Engine;
use crate::config::ToolSpec;
use crate::telemetry::Metrics;

/// What the API handlers share.
#[derive(Clone)]
pub struct ApiState {
    pub chaos: Engine,
    /// Declared tools, to check `tool:` names in rules sent at runtime.
    pub tools: Arc<[ToolSpec]>,
    pub metrics: Metrics,
    pub ca_pem: Arc<str>,
    /// Bearer token required on `/v1/*` (`control.token`, or the one in
    /// `data_dir/control.token`).
    pub token: Arc<str>,
    /// The daemon's runs.
    pub jobs: crate::jobs::Jobs,
    /// Who the control listener answers (`Host`); whether it is on loopback, where runs
    /// may name files of the daemon's host and start agents.
    pub hosts: Hosts,
    /// `control.expose_env`: the daemon's variables a submitted config may expand.
    pub expose_env: Arc<[String]>,
    /// How often a quiet `/events` stream sends a keep-alive comment: more often than the
    /// control connections' read deadline (`DeadlineListener`), which each write restarts.
    pub keep_alive: std::time::Duration,
    /// What `/readyz` answers (set by the daemon).
    pub ready: Readiness,
    /// The baseline chaos rules and a pending `ttl` revert.
    pub expiry: Expiry,
    /// How long a body may take, how large an import may be.
    pub limits: Limits,
    /// The one turn imports take.
    pub imports: Imports,
    /// Failed authentications by peer.
    pub auth: Failures,
}

/// The `/events` keep-alive interval for a control read deadline of `header_timeout_ms`:
/// half of it, at most 15 s, so a quiet stream always writes before the deadline.
pub fn keep_alive(header_timeout_ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(header_timeout_ms.div_ceil(2).clamp(1, 15_000))
}

impl ApiState {
    /// The control listener is on loopback: it acts for the local user who holds the token.
    pub fn loopback(&self) -> bool {
        self.hosts.listen.is_loopback()
    }
}

pub fn router(state: ApiState) -> Router {
    router_with(state, Extra::default())
}

/// Routes another module serves on the control listener (the web view): `page` passes
/// the browser checks (`guard`) but needs no token, `v1` passes both, as `/v1/*` does.
#[derive(Default)]
pub struct Extra {
    pub page: Router<ApiState>,
    pub v1: Router<ApiState>,
}

/// The API with `extra`'s routes beside it.
pub fn router_with(state: ApiState, extra: Extra) -> Router {
    let mut page = extra.page;
    if page.has_routes() {
        page = page.route_layer(middleware::from_fn_with_state(
            state.clone(),
            guard::browser_proof,
        ));
    }
    let v1 = Router::new()
        .route("/v1/ca.pem", get(ca_pem))
        .route(
            "/v1/chaos",
            get(chaos::get_chaos)
                .put(chaos::put_chaos)
                .delete(chaos::delete_chaos),
        )
        .route("/v1/chaos/profiles/{name}", post(chaos::apply_profile))
        .route("/v1/profiles", get(chaos::list_profiles))
        .route("/v1/reset", post(chaos::reset))
        .route("/v1/runs", get(runs::list).post(runs::create))
        .route("/v1/runs/import", post(import::import))
        .route("/v1/runs/{id}", get(runs::get).delete(runs::cancel))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/report", get(runs::report))
        .route("/v1/openapi.json", get(openapi::document))
        .merge(extra.v1)
        // The last layer runs first: no cross-site request gets as far as the token check.
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            guard::browser_proof,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(ready::readyz))
        .route("/metrics", get(metrics))
        .merge(v1)
        .merge(page)
        .fallback(|| async { ApiError::NotFound })
        // The last layer runs first: a malformed request is refused before anything.
        .layer(middleware::from_fn(headers::inert))
        .layer(middleware::from_fn(conn::at_work))
        .layer(middleware::from_fn(strict::well_formed))
        .with_state(state)
}

/// Liveness.
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "ok", body = Object)))]
async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({"status": "ok"}))
}

/// Prometheus metrics: OpenMetrics when the `Accept` header asks for it (Prometheus does),
/// else the Prometheus text format 0.0.4 (`curl`, `promtool check metrics`).
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "OpenMetrics text, or the Prometheus text format", content_type = "application/openmetrics-text", body = String)))]
async fn metrics(State(s): State<ApiState>, headers: HeaderMap) -> impl IntoResponse {
    s.metrics.set_chaos_active(s.chaos.active());
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let (ct, text) = s.metrics.exposition(accept);
    ([(header::CONTENT_TYPE, HeaderValue::from_static(ct))], text)
}

/// The CA certificate agents must trust (PEM).
#[utoipa::path(get, path = "/v1/ca.pem", responses((status = 200, description = "PEM", content_type = "application/x-pem-file", body = String)))]
async fn ca_pem(State(s): State<ApiState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-pem-file"),
        )],
        s.ca_pem.to_string(),
    )
}

/// A state for the router's tests: loopback, token `t`.
#[cfg(test)]
pub(crate) fn test_state(jobs: crate::jobs::Jobs) -> ApiState {
    ApiState {
        chaos: Engine::new(1),
        tools: Arc::from(vec![]),
        metrics: Metrics::new(),
        ca_pem: "PEM".into(),
        token: "t".into(),
        jobs,
        hosts: Hosts::new(std::net::Ipv4Addr::LOCALHOST.into(), &[]),
        expose_env: Arc::from(vec![]),
        keep_alive: std::time::Duration::from_secs(15),
        ready: Readiness::ready_now(),
        expiry: Expiry::new(Default::default()),
        limits: Limits::default(),
        imports: Imports::default(),
        auth: Failures::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn state(token: &str) -> ApiState {
        let mut s = test_state(crate::jobs::Jobs::for_tests(
            &tempfile::tempdir().unwrap().keep(),
        ));
        s.token = token.into();
        s
    }

    async fn get(app: Router, uri: &str, auth: Option<&str>) -> (u16, String) {
        let mut req = axum::http::Request::get(uri).header("host", "127.0.0.1:8081");
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn health_metrics_and_ca() {
        let s = state("t");
        s.metrics.request("tool", Some(503));
        let app = router(s);
        assert_eq!(
            get(app.clone(), "/healthz", None).await,
            (200, r#"{"status":"ok"}"#.into())
        );
        let (status, text) = get(app.clone(), "/metrics", None).await;
        assert_eq!(status, 200);
        assert!(text.contains(r#"flakestorm_requests_total{target="tool",status_class="5xx"} 1"#));
        assert_eq!(
            get(app.clone(), "/v1/ca.pem", Some("Bearer t")).await,
            (200, "PEM".into())
        );
        let (status, doc) = get(app.clone(), "/v1/openapi.json", Some("Bearer t")).await;
        assert_eq!(status, 200);
        assert!(doc.contains(r#""openapi":"3.1"#), "{doc}");
        assert_eq!(get(app, "/nope", None).await.0, 404);
    }

    #[tokio::test]
    async fn token_guards_v1_but_not_probes() {
        let app = router(state("t0k"));
        assert_eq!(get(app.clone(), "/v1/ca.pem", None).await.0, 401);
        assert_eq!(get(app.clone(), "/v1/openapi.json", None).await.0, 401);
        assert_eq!(
            get(app.clone(), "/v1/ca.pem", Some("Bearer nope")).await.0,
            401
        );
        assert_eq!(
            get(app.clone(), "/v1/ca.pem", Some("Bearer t0k")).await.0,
            200
        );
        assert_eq!(get(app.clone(), "/healthz", None).await.0, 200);
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            let auth = format!("{scheme} t0k");
            assert_eq!(
                get(app.clone(), "/v1/ca.pem", Some(&auth)).await.0,
                200,
                "{auth}"
            );
        }
        for wrong in ["Basic t0k", "Bearer", "Bearert0k", "Bearer t0k2"] {
            assert_eq!(
                get(app.clone(), "/v1/ca.pem", Some(wrong)).await.0,
                401,
                "{wrong}"
            );
        }
        // Each refusal counted: 3 without or with a wrong token above, then these 4.
        let (_, text) = get(app, "/metrics", None).await;
        assert!(
            text.contains("flakestorm_control_auth_failures_total 7"),
            "{text}"
        );
    }
}
