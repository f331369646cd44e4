//! The web view's session (docs/api.md, "The web view's cookie"): a browser that has shown
//! the token once keeps a cookie instead of it, and proves each state-changing request with
//! a CSRF header. Both values are derived from the token (HMAC-SHA256), so a new token ends
//! every session, a cookie never is the token itself, and nothing needs storing. The cookie
//! is `HttpOnly` (no script reads it) and `SameSite=Strict` (no other site's page makes the
//! browser send it); its name carries the control listener's port, so two daemons on one
//! host keep their sessions apart.

use axum::http::{HeaderMap, HeaderValue, Method, header};
use ring::hmac;

/// The header a cookie-authenticated request that changes state must carry.
pub const CSRF_HEADER: &str = "x-flakestorm-csrf";

/// What a request authenticated with the cookie proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cookie {
    /// No session cookie of this listener.
    Absent,
    /// A cookie whose value is not this token's (stale: another token; or forged).
    Wrong,
    /// The session, and for a state-changing request whether its CSRF header is right.
    Valid { csrf_ok: bool },
}

fn derive(token: &str, purpose: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
    let tag = hmac::sign(&key, purpose.as_bytes());
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The cookie's value for `token`.
pub fn session_value(token: &str) -> String {
    derive(token, "flakestorm web session")
}

/// The CSRF header's value for `token` (the page reads it from `/ui/api/session`).
pub fn csrf_value(token: &str) -> String {
    derive(token, "flakestorm web csrf")
}

/// The cookie's name on the listener a request was addressed to (`Host`'s port; 80 when
/// it names none).
pub fn cookie_name(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let port = match host.rsplit_once(':') {
        Some((_, p)) if !p.contains(']') => p,
        _ => "80",
    };
    format!("flakestorm_session_{port}")
}

/// The `Set-Cookie` value that keeps a session (or, `None`, ends it).
pub fn set_cookie(headers: &HeaderMap, token: Option<&str>) -> Option<HeaderValue> {
    let name = cookie_name(headers);
    let text = match token {
        Some(t) => format!(
            "{name}={}; Path=/; HttpOnly; SameSite=Strict",
            session_value(t)
        ),
        None => format!("{name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    };
    HeaderValue::from_str(&text).ok()
}

/// The request's session cookie judged against `token`. Any cookie of the name that holds
/// the session will do: a page on another port of this host can set one of the same name
/// with a longer `Path`, which the browser sends first, and that must not log the user out.
pub fn judge(method: &Method, headers: &HeaderMap, token: &str) -> Cookie {
    let name = cookie_name(headers);
    let mut sent = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| *n == name)
        .map(|(_, v)| v.trim())
        .peekable();
    if sent.peek().is_none() {
        return Cookie::Absent;
    }
    let want = session_value(token);
    // Each compared in full, so the time says nothing of which one matched.
    if !sent.fold(false, |hit, v| hit | same(v.as_bytes(), want.as_bytes())) {
        return Cookie::Wrong;
    }
    let safe = matches!(*method, Method::GET | Method::HEAD);
    let csrf_ok = safe
        || headers
            .get(CSRF_HEADER)
            .is_some_and(|v| same(v.as_bytes(), csrf_value(token).as_bytes()));
    Cookie::Valid { csrf_ok }
}

/// Compares in time that does not depend on where the first difference is.
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn a_cookie_is_judged_by_its_token_and_a_change_by_its_csrf_header() {
        let good = format!("a=b; flakestorm_session_8081={}", session_value("t"));
        let h = headers(&[("host", "127.0.0.1:8081"), ("cookie", &good)]);
        assert_eq!(
            judge(&Method::GET, &h, "t"),
            Cookie::Valid { csrf_ok: true }
        );
        assert_eq!(
            judge(&Method::POST, &h, "t"),
            Cookie::Valid { csrf_ok: false }
        );
        assert_eq!(judge(&Method::GET, &h, "other token"), Cookie::Wrong);
        let csrf = csrf_value("t");
        let h = headers(&[
            ("host", "127.0.0.1:8081"),
            ("cookie", &good),
            (CSRF_HEADER, &csrf),
        ]);
        assert_eq!(
            judge(&Method::DELETE, &h, "t"),
            Cookie::Valid { csrf_ok: true }
        );
        // A same-named cookie another page set, sent before ours, in one header or two.
        let shadowed = format!("flakestorm_session_8081=planted; {good}");
        let h = headers(&[("host", "127.0.0.1:8081"), ("cookie", &shadowed)]);
        assert_eq!(
            judge(&Method::GET, &h, "t"),
            Cookie::Valid { csrf_ok: true }
        );
        let h = headers(&[
            ("host", "127.0.0.1:8081"),
            ("cookie", "flakestorm_session_8081=planted"),
            ("cookie", &good),
        ]);
        assert_eq!(
            judge(&Method::GET, &h, "t"),
            Cookie::Valid { csrf_ok: true }
        );
        let h = headers(&[
            ("host", "127.0.0.1:8081"),
            (
                "cookie",
                "flakestorm_session_8081=a; flakestorm_session_8081=b",
            ),
        ]);
        assert_eq!(judge(&Method::GET, &h, "t"), Cookie::Wrong);
        // Another listener's cookie is not this one's session.
        let h = headers(&[("host", "127.0.0.1:9000"), ("cookie", &good)]);
        assert_eq!(judge(&Method::GET, &h, "t"), Cookie::Absent);
        assert_ne!(session_value("t"), csrf_value("t"));
        assert_eq!(session_value("t").len(), 64, "an HMAC, not the token");
    }
}
