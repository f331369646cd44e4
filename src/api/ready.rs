//! Readiness (`GET /readyz`): whether the daemon can do its job now. It is ready when the
//! CA is loaded and within its validity, the proxy listener is bound and accepting, the
//! config is applied (chaos rules installed, the CA bundle written), and it is not
//! shutting down. `/healthz` (liveness) stays 200 through all of it: a daemon that is
//! draining or whose CA expired must not be restarted in a loop, only taken out of
//! rotation. The daemon sets the flags (`daemon.rs`); the handler only reads them, and
//! never says more than which condition fails (no path, no secret).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::ApiState;

/// The daemon's readiness flags. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The CA's `notAfter`, Unix seconds (0: no CA loaded).
    ca_not_after: std::sync::atomic::AtomicI64,
    proxy_serving: AtomicBool,
    config_applied: AtomicBool,
    stopping: AtomicBool,
}

impl Readiness {
    /// Ready in every respect (the router's tests).
    pub fn ready_now() -> Readiness {
        let r = Readiness::default();
        r.ca_loaded(i64::MAX);
        r.proxy_serving(true);
        r.config_applied();
        r
    }

    /// The CA is loaded; it is valid until `not_after` (Unix seconds).
    pub fn ca_loaded(&self, not_after: i64) {
        self.inner.ca_not_after.store(not_after, Ordering::SeqCst);
    }

    /// The proxy listener accepts (true) or its accept loop ended (false).
    pub fn proxy_serving(&self, serving: bool) {
        self.inner.proxy_serving.store(serving, Ordering::SeqCst);
    }

    pub fn config_applied(&self) {
        self.inner.config_applied.store(true, Ordering::SeqCst);
    }

    /// The daemon is draining: take it out of rotation.
    pub fn stopping(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
    }

    /// Each condition that is not met, at Unix time `now`.
    pub fn not_ready(&self, now: i64) -> Vec<&'static str> {
        let i = &self.inner;
        let not_after = i.ca_not_after.load(Ordering::SeqCst);
        let mut why = vec![];
        if not_after == 0 {
            why.push("the CA is not loaded");
        } else if now >= not_after {
            why.push(
                "the CA certificate has expired: clients reject every intercepted \
                 connection; replace ca.cert_file/ca.key_file (or the files in ca.dir) and \
                 restart",
            );
        }
        if !i.proxy_serving.load(Ordering::SeqCst) {
            why.push("the proxy listener is not accepting connections");
        }
        if !i.config_applied.load(Ordering::SeqCst) {
            why.push("the config is not applied yet");
        }
        if i.stopping.load(Ordering::SeqCst) {
            why.push("shutting down (draining in-flight requests)");
        }
        why
    }
}

/// Readiness: 200 `{"status":"ready"}`, or 503 `{"status":"not_ready","reasons":[…]}`.
#[utoipa::path(get, path = "/readyz", responses(
    (status = 200, description = "ready", body = Object),
    (status = 503, description = "not ready, with the reasons", body = Object),
))]
pub async fn readyz(State(s): State<ApiState>) -> Response {
    let why = s
        .ready
        .not_ready(crate::exchange::now_unix_ms() as i64 / 1000);
    if why.is_empty() {
        Json(json!({"status": "ready"})).into_response()
    } else {
        let body = json!({"status": "not_ready", "reasons": why});
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_is_named_until_it_holds() {
        let r = Readiness::default();
        assert_eq!(r.not_ready(100).len(), 3);
        r.ca_loaded(200);
        r.proxy_serving(true);
        assert_eq!(r.not_ready(100), ["the config is not applied yet"]);
        r.config_applied();
        assert!(r.not_ready(100).is_empty());
        assert!(r.not_ready(200)[0].contains("CA certificate has expired"));
        r.proxy_serving(false);
        r.stopping();
        let why = r.not_ready(100);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[1].starts_with("shutting down"));
    }
}
