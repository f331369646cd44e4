//! What a browser can make the control API do: nothing. Every `/v1/*` request passes three
//! checks before the token and before any work (docs/security.md, "Threat model"):
//!
//! - `Host` must name this machine's loopback (`localhost`, `127.0.0.0/8`, `::1`), the
//!   control listener's own address, or a `control.allowed_hosts` entry. A DNS-rebinding
//!   page reaches the listener under its own domain name and fails here, so it can read
//!   nothing. An IP literal other than our own cannot be rebinding (the page's origin would
//!   be that address), so on a wildcard listener any IP literal passes.
//! - `Origin`, when present, must be the listener's own (`http://` + the `Host` sent), and
//!   `Sec-Fetch-Site`, when present, `same-origin` or `none`: a cross-site page's request
//!   carries one or both.
//! - A body (or any `Content-Type`) must be JSON or YAML: the types a page can send without
//!   a CORS preflight (`text/plain`, forms, no type at all) are refused, and a preflight
//!   gets no CORS headers, so the browser never sends the real request.
//!
//! The probes (`/healthz`, `/readyz`, `/metrics`) are outside `/v1/` and not checked.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{ApiError, ApiState};

/// Who the control listener answers.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The address the control listener is bound to.
    pub listen: IpAddr,
    /// `control.allowed_hosts`, lowercased: exact names and `*.domain` entries.
    pub allowed: Arc<[String]>,
}

impl Hosts {
    pub fn new(listen: IpAddr, allowed: &[String]) -> Hosts {
        Hosts {
            listen,
            allowed: allowed.iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether a request addressed to `host` (no port, IPv6 without brackets) is for us.
    fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if let Ok(ip) = host.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            return ip.is_loopback() || ip == self.listen || self.listen.is_unspecified();
        }
        host == "localhost"
            || self.allowed.iter().any(|a| match a.strip_prefix("*.") {
                Some(domain) => host
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => *a == host,
            })
    }
}

/// The checks above, as axum middleware on `/v1/*`.
pub async fn browser_proof(
    State(s): State<ApiState>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let body = !http_body::Body::is_end_stream(req.body());
    check(&s.hosts, req.method(), req.headers(), req.uri(), body)?;
    Ok(next.run(req).await)
}

fn check(
    hosts: &Hosts,
    method: &Method,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    body: bool,
) -> Result<(), ApiError> {
    // An absolute-form target's authority is the request's host (RFC 9112 §3.2.2): one
    // naming another server is not ours to answer, whatever `Host` says.
    if let Some(target) = uri.authority()
        && !super::strict::host_name(target.as_str()).is_ok_and(|n| hosts.allows(&n))
    {
        return Err(ApiError::BadRequest(format!(
            "the request target names {}, which is not this daemon: send the path only \
             (`GET /v1/runs`), or a name control.allowed_hosts lists",
            shown(target.as_str())
        )));
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| uri.authority().map(ToString::to_string));
    let Some(host) = host else {
        return Err(ApiError::ForbiddenHost(
            "a request without a Host header is not answered: the control API checks it \
             against DNS rebinding"
                .into(),
        ));
    };
    if !super::strict::host_name(&host).is_ok_and(|n| hosts.allows(&n)) {
        return Err(ApiError::ForbiddenHost(format!(
            "Host {} is not allowed: the control API answers requests addressed to this \
             machine's loopback names, its own address and control.allowed_hosts (so a web \
             page cannot reach it through DNS rebinding); add the name to \
             control.allowed_hosts if clients use it",
            shown(&host)
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("(not text)");
        let own = ["http://", "https://"].iter().any(|scheme| {
            origin
                .strip_prefix(scheme)
                .is_some_and(|o| o.eq_ignore_ascii_case(&host))
        });
        if !own {
            return Err(ApiError::ForbiddenOrigin(format!(
                "Origin {} is not allowed: the control API takes no cross-site requests",
                shown(origin)
            )));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("(not text)");
        if !matches!(site, "same-origin" | "none") {
            return Err(ApiError::ForbiddenOrigin(format!(
                "Sec-Fetch-Site {} is not allowed: the control API takes no cross-site \
                 requests",
                shown(site)
            )));
        }
    }
    content_type(method, headers, body)
}

/// Media types a body may have: JSON, or YAML (`/v1/runs` and `/v1/chaos` read both).
const BODY_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/x-yaml",
    "text/yaml",
    "text/x-yaml",
];

/// A request that carries a body (`body`: its stream is not over before it starts), or
/// says what type one has, must be JSON or YAML.
fn content_type(method: &Method, headers: &HeaderMap, body: bool) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let Some(declared) = headers.get(header::CONTENT_TYPE) else {
        if body {
            return Err(ApiError::UnsupportedMediaType(
                "a body needs Content-Type: application/json (or application/yaml)".into(),
            ));
        }
        return Ok(());
    };
    let text = declared.to_str().unwrap_or("(not text)");
    let media = text.split(';').next().unwrap_or("").trim();
    let json_suffix = media
        .strip_prefix("application/")
        .is_some_and(|sub| sub.ends_with("+json"));
    if json_suffix || BODY_TYPES.iter().any(|t| media.eq_ignore_ascii_case(t)) {
        return Ok(());
    }
    Err(ApiError::UnsupportedMediaType(format!(
        "Content-Type {} is not accepted: send application/json or application/yaml (the \
         control API reads no text or form bodies, which any web page could send)",
        shown(text)
    )))
}

/// A header value as an error may show it: at most 80 characters (`to_str` has already
/// refused anything but visible ASCII).
pub(super) fn shown(value: &str) -> String {
    match value.get(..80) {
        Some(cut) if cut.len() < value.len() => format!("{cut}…"),
        _ => value.to_string(),
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
