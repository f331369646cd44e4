//! The page's files, built into the binary (`include_str!`: nothing is fetched from
//! anywhere else, and no Node toolchain is needed to build them), and the headers every
//! answer of the view carries: a Content-Security-Policy that allows only this origin's
//! own scripts and styles (no inline script, no inline style attribute, no other origin,
//! no framing), `nosniff`, and no Referer.

use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// `(name, content type, text)` of each file the page loads from `/ui/`.
const FILES: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/ui/style.css"),
    ),
    ("app.js", JS, include_str!("../../assets/ui/app.js")),
    ("api.js", JS, include_str!("../../assets/ui/api.js")),
    ("dom.js", JS, include_str!("../../assets/ui/dom.js")),
    ("runs.js", JS, include_str!("../../assets/ui/runs.js")),
    ("run.js", JS, include_str!("../../assets/ui/run.js")),
    ("live.js", JS, include_str!("../../assets/ui/live.js")),
    ("stored.js", JS, include_str!("../../assets/ui/stored.js")),
    ("matrix.js", JS, include_str!("../../assets/ui/matrix.js")),
    ("compare.js", JS, include_str!("../../assets/ui/compare.js")),
    ("chaos.js", JS, include_str!("../../assets/ui/chaos.js")),
    ("start.js", JS, include_str!("../../assets/ui/start.js")),
];
const JS: &str = "text/javascript; charset=utf-8";
const INDEX: &str = include_str!("../../assets/ui/index.html");

/// The policy: this origin's scripts, styles and data only; images also as `data:` URLs.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                       img-src 'self' data:; connect-src 'self'; form-action 'self'; \
                       base-uri 'none'; frame-ancestors 'none'";

/// `GET /`: the page (it holds no data: what it shows it fetches once logged in).
pub async fn index() -> Response {
    typed("text/html; charset=utf-8", INDEX)
}

/// `GET /ui/{file}`.
pub async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, ct, text)) => typed(ct, text),
        None => crate::api::ApiError::NotFound.into_response(),
    }
}

fn typed(content_type: &'static str, text: &'static str) -> Response {
    let mut resp = (StatusCode::OK, text).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidated each time: a daemon upgraded in place serves its own page.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// The view's headers on every answer of its routes, errors included.
pub async fn hardened(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}
