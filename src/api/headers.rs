//! Headers on every answer of the control listener that does not set its own (the web
//! view sets a stricter page policy): `nosniff`, and a sandboxing Content-Security-Policy,
//! so an answer a browser does open (a JSON body, the HTML report at
//! `/v1/runs/{id}/report?format=html`) runs no script, has no origin of its own to act
//! with, and cannot be framed.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The report's own inline styles are allowed; nothing else is.
const CSP: &str =
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

pub async fn inert(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
