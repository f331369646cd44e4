//! API errors and their HTTP statuses (the only place they are chosen). Bodies are JSON:
//! `{"error": {"code": "...", "message": "..."}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("missing or wrong bearer token (control.token)")]
    Unauthorized,
    #[error("no such endpoint")]
    NotFound,
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::NotFound => (StatusCode::NOT_FOUND, "not_found"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let body = serde_json::json!({"error": {"code": code, "message": self.to_string()}});
        (status, axum::Json(body)).into_response()
    }
}
