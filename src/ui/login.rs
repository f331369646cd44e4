//! The page's session: the token traded once for the cookie (`login`, itself authenticated
//! by `Authorization: Bearer`, so a wrong token costs what it costs on `/v1/*`), the CSRF
//! value the page sends on every change (`session`), and the cookie's end (`logout`).
//! The values themselves are `api::session`'s.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::UiState;
use crate::api::session;

/// What the page needs to act: the CSRF value, and whether runs may name files of the
/// daemon's host (loopback only).
fn about(s: &UiState) -> serde_json::Value {
    json!({
        "csrf": session::csrf_value(&s.api.token),
        "csrf_header": session::CSRF_HEADER,
        "loopback": s.api.loopback(),
    })
}

/// `POST /ui/api/login` with the bearer token: the session cookie, and the CSRF value.
pub async fn login(State(s): State<UiState>, headers: HeaderMap) -> Response {
    let mut resp = Json(about(&s)).into_response();
    if let Some(cookie) = session::set_cookie(&headers, Some(&s.api.token)) {
        resp.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    resp
}

/// `POST /ui/api/logout`: the cookie cleared.
pub async fn logout(headers: HeaderMap) -> Response {
    let mut resp = StatusCode::NO_CONTENT.into_response();
    if let Some(cookie) = session::set_cookie(&headers, None) {
        resp.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    resp
}

/// `GET /ui/api/session`: the page is logged in (the cookie or a token got it here).
pub async fn session(State(s): State<UiState>) -> Json<serde_json::Value> {
    Json(about(&s))
}
