//! The bearer token on `/v1/*`, compared in constant time, and what a wrong one costs its
//! sender: every failure is counted (`flakestorm_control_auth_failures_total`) and logged
//! with its peer, at most once a second (with how many were not logged), so a guesser can
//! neither go unseen nor fill the log; and a peer that keeps failing is answered slower
//! (a pause before its 401s), which never delays a right token, so another local user
//! cannot lock the owner out by failing on purpose from the same loopback address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use tokio::time::Instant;

use super::session::{self, same};
use super::{ApiError, ApiState};

/// Failures a peer may have within `WINDOW` before its next ones are answered after
/// `PAUSE`.
const FREE_FAILURES: u32 = 10;
const WINDOW: Duration = Duration::from_secs(10);
const PAUSE: Duration = Duration::from_secs(1);
/// Peers remembered at once: past it, the quiet ones are forgotten.
const MAX_PEERS: usize = 4096;

/// The failures of the control listener's peers (cheap to clone).
#[derive(Clone, Default)]
pub struct Failures {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    peers: HashMap<IpAddr, Recent>,
    /// When the last line was logged, and the failures since that were not.
    logged: Option<Instant>,
    unlogged: u64,
}

/// One peer's failures in its current window.
#[derive(Clone, Copy)]
struct Recent {
    since: Instant,
    count: u32,
}

impl Failures {
    /// Records a failure from `peer`; whether it is past its free ones (answer slower).
    fn failed(&self, peer: Option<SocketAddr>) -> bool {
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let shown = peer.map_or_else(|| "an unknown peer".into(), |p| p.ip().to_string());
        let due = inner
            .logged
            .is_none_or(|t| now >= t + Duration::from_secs(1));
        if due {
            let more = std::mem::take(&mut inner.unlogged);
            tracing::warn!(
                peer = %shown,
                "control API: a request with a missing or wrong token was refused ({more} more \
                 since the last such line)"
            );
            inner.logged = Some(now);
        } else {
            inner.unlogged += 1;
        }
        let Some(ip) = peer.map(|p| p.ip()) else {
            return false;
        };
        if inner.peers.len() >= MAX_PEERS {
            inner.peers.retain(|_, r| now < r.since + WINDOW);
        }
        let recent = inner.peers.entry(ip).or_insert(Recent {
            since: now,
            count: 0,
        });
        if now >= recent.since + WINDOW {
            *recent = Recent {
                since: now,
                count: 0,
            };
        }
        recent.count = recent.count.saturating_add(1);
        recent.count > FREE_FAILURES
    }
}

/// Checks the token; a wrong one is a 401 (after a pause for a peer that keeps failing).
pub async fn require_token(
    State(s): State<ApiState>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let sent = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    if sent.is_some_and(|t| same(t.as_bytes(), s.token.as_bytes())) {
        return Ok(next.run(req).await);
    }
    // The web view's cookie stands for the token when no bearer token was sent; a request
    // it authenticates that changes state must also carry the page's CSRF header.
    let cookie = match sent {
        None => session::judge(req.method(), req.headers(), &s.token),
        Some(_) => session::Cookie::Absent,
    };
    match cookie {
        session::Cookie::Valid { csrf_ok: true } => return Ok(next.run(req).await),
        session::Cookie::Valid { csrf_ok: false } => return Err(ApiError::Csrf),
        session::Cookie::Absent | session::Cookie::Wrong => {}
    }
    s.metrics.control_auth_failure();
    if s.auth.failed(super::conn::peer(&req)) {
        tokio::time::sleep(PAUSE).await;
        return Err(ApiError::TooManyFailures {
            retry_after_s: WINDOW.as_secs(),
        });
    }
    Err(ApiError::Unauthorized)
}

/// The credentials of an `Authorization: Bearer <token>` value; the scheme is
/// case-insensitive (RFC 9110 §11.1), so `bearer` and `BEARER` work too.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start_matches(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_keeps_failing_is_slowed_and_forgiven_after_the_window() {
        let f = Failures::default();
        let (a, b): (SocketAddr, SocketAddr) =
            ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:1".parse().unwrap());
        for _ in 0..FREE_FAILURES {
            assert!(!f.failed(Some(a)));
        }
        assert!(f.failed(Some(a)), "past its free failures");
        assert!(!f.failed(Some(b)), "another peer is not slowed");
        let unlogged = f.inner.lock().unwrap().unlogged;
        assert_eq!(unlogged, 11, "one line logged for the first second's 12");
        tokio::time::advance(WINDOW).await;
        assert!(!f.failed(Some(a)), "a new window");
        assert_eq!(
            f.inner.lock().unwrap().unlogged,
            0,
            "logged again, with the count"
        );
    }
}
