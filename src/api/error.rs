//! API errors and their HTTP statuses (the only place they are chosen). Bodies are JSON:
//! `{"error": {"code": "...", "message": "..."}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(
        "missing or wrong bearer token: send Authorization: Bearer with the daemon's \
         control.token, or the token it keeps in its data_dir/control.token"
    )]
    Unauthorized,
    /// Failed authentications from this peer came too fast: answered after a pause.
    #[error(
        "missing or wrong bearer token, and too many from this address: wait {retry_after_s} s"
    )]
    TooManyFailures { retry_after_s: u64 },
    #[error("no such endpoint")]
    NotFound,
    /// A request HTTP itself forbids (RFC 9112): several `Host` headers, a bad port, an
    /// absolute-form target naming another server.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The body did not arrive within `control.body_timeout_ms`.
    #[error("request body timeout: {0}")]
    BodyTimeout(String),
    /// Another request holds what this one needs (the one import at a time).
    #[error("{message}")]
    Busy { message: String, retry_after_s: u64 },
    #[error("{0}")]
    ForbiddenHost(String),
    #[error("{0}")]
    ForbiddenOrigin(String),
    /// A request the web view's cookie authenticates that changes state without the
    /// page's CSRF header.
    #[error(
        "a request authenticated by the web view's cookie must carry the x-flakestorm-csrf \
         header the page sets (or send Authorization: Bearer instead)"
    )]
    Csrf,
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("bad request body: {0}")]
    BadBody(String),
    /// A query parameter (`field`) that is malformed or out of range.
    #[error("query parameter `{field}`: {message}")]
    InvalidParam { field: String, message: String },
    #[error("request body too large: {0}")]
    TooLarge(String),
    #[error("invalid chaos rules ({} problems)", .0.len())]
    InvalidChaos(Vec<crate::config::ConfigError>),
    #[error("{0}")]
    UnknownProfile(crate::chaos::profiles::ProfileError),
    /// The message is the summary; `errors` lists each problem (the first 50).
    #[error("{}{}", .0.summary(), omitted(.0.omitted))]
    InvalidConfig(crate::config::ConfigErrors),
    #[error("{0}")]
    NotRunnable(String),
    #[error("no run {0}; `flakestorm runs list` shows the runs")]
    RunNotFound(String),
    /// A tape the run did not record, or that has been deleted since.
    #[error("run {id} has no tape {name}: GET /ui/api/runs/{id}/tapes lists its tapes")]
    TapeNotFound { id: String, name: String },
    #[error("run {id} has already ended ({})", status.as_str())]
    RunFinished {
        id: String,
        status: crate::jobs::Status,
    },
    #[error(
        "run {id} is {} in another process (a CLI run or another daemon on this data_dir): \
         this daemon can neither cancel it nor stream its events; GET /v1/runs/{id} shows \
         its progress",
        status.as_str()
    )]
    RunElsewhere {
        id: String,
        status: crate::jobs::Status,
    },
    #[error("run {id} has no report ({}): a report is written when a run ends with a verdict", status.as_str())]
    NoReport {
        id: String,
        status: crate::jobs::Status,
    },
    #[error("{0}")]
    Internal(String),
}

/// What an answer says of the problems `errors` does not list.
fn omitted(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!(" ({n} more not listed in `errors`: fix those first)"),
    }
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::TooManyFailures { .. } => {
                (StatusCode::TOO_MANY_REQUESTS, "too_many_failures")
            }
            ApiError::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::BodyTimeout(_) => (StatusCode::REQUEST_TIMEOUT, "body_timeout"),
            ApiError::Busy { .. } => (StatusCode::TOO_MANY_REQUESTS, "busy"),
            ApiError::ForbiddenHost(_) => (StatusCode::FORBIDDEN, "forbidden_host"),
            ApiError::ForbiddenOrigin(_) => (StatusCode::FORBIDDEN, "forbidden_origin"),
            ApiError::Csrf => (StatusCode::FORBIDDEN, "csrf"),
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            ApiError::BadBody(_) => (StatusCode::BAD_REQUEST, "bad_body"),
            ApiError::InvalidParam { .. } => (StatusCode::BAD_REQUEST, "invalid_param"),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            ApiError::InvalidChaos(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_chaos"),
            ApiError::UnknownProfile(_) => (StatusCode::NOT_FOUND, "unknown_profile"),
            ApiError::InvalidConfig(_) => (StatusCode::BAD_REQUEST, "invalid_config"),
            ApiError::NotRunnable(_) => (StatusCode::BAD_REQUEST, "not_runnable"),
            ApiError::RunNotFound(_) => (StatusCode::NOT_FOUND, "run_not_found"),
            ApiError::TapeNotFound { .. } => (StatusCode::NOT_FOUND, "tape_not_found"),
            ApiError::RunFinished { .. } => (StatusCode::CONFLICT, "run_finished"),
            ApiError::RunElsewhere { .. } => (StatusCode::CONFLICT, "run_elsewhere"),
            ApiError::NoReport { .. } => (StatusCode::CONFLICT, "no_report"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _) = self.status_and_code();
        let mut resp = (status, axum::Json(self.body())).into_response();
        let headers = resp.headers_mut();
        if let ApiError::Busy { retry_after_s, .. } | ApiError::TooManyFailures { retry_after_s } =
            &self
        {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_s));
        }
        // The body was not read to its end, or the request cannot be trusted to have been
        // framed as the client meant: the connection carries no other request, and a
        // keep-alive client must be told before it sends one.
        if matches!(
            self,
            ApiError::TooLarge(_) | ApiError::BodyTimeout(_) | ApiError::BadRequest(_)
        ) {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        resp
    }
}

impl ApiError {
    /// The answer's JSON: code, message, and the problems at their paths (the first
    /// `config::MAX_LISTED`, so no body makes a larger answer than that).
    pub fn body(&self) -> serde_json::Value {
        let (_, code) = self.status_and_code();
        let mut body = serde_json::json!({"error": {"code": code, "message": self.to_string()}});
        if let ApiError::InvalidParam { field, message } = &self {
            body["error"]["errors"] = serde_json::json!([{"path": field, "message": message}]);
        }
        let errors = match &self {
            ApiError::InvalidChaos(errors) => Some(errors),
            ApiError::InvalidConfig(e) => Some(&e.errors),
            ApiError::Unauthorized
            | ApiError::TooManyFailures { .. }
            | ApiError::BadRequest(_)
            | ApiError::BodyTimeout(_)
            | ApiError::Busy { .. }
            | ApiError::NotFound
            | ApiError::ForbiddenHost(_)
            | ApiError::ForbiddenOrigin(_)
            | ApiError::Csrf
            | ApiError::UnsupportedMediaType(_)
            | ApiError::BadBody(_)
            | ApiError::InvalidParam { .. }
            | ApiError::TooLarge(_)
            | ApiError::UnknownProfile(_)
            | ApiError::NotRunnable(_)
            | ApiError::RunNotFound(_)
            | ApiError::TapeNotFound { .. }
            | ApiError::RunFinished { .. }
            | ApiError::RunElsewhere { .. }
            | ApiError::NoReport { .. }
            | ApiError::Internal(_) => None,
        };
        if let Some(errors) = errors {
            let (listed, _) = crate::config::capped(errors.clone());
            let list: Vec<_> = listed
                .iter()
                .map(|e| serde_json::json!({"path": e.path, "message": e.message}))
                .collect();
            body["error"]["errors"] = serde_json::json!(list);
        }
        body
    }
}
