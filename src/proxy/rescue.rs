//! The one place errors become responses, and an exchange's error outcome: a request
//! refused before any upstream (`reject`), an exchange that failed (`fail`), or one whose
//! dead upstream closes the client's connection (`closed`). Genuine proxy errors (upstream
//! unreachable, bad request, auth) carry `x-flakestorm-error: <kind>` so they can never be
//! mistaken for an injected fault, which looks exactly like the real provider instead.

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};

use super::recorder::Recorder;
use super::{ConnCtx, Proxy, ProxyBody};
use crate::exchange::{ErrorInfo, ErrorSource, Outcome, Route, Target};

/// Header naming the kind of a genuine proxy error.
pub const ERROR_HEADER: &str = "x-flakestorm-error";

pub use crate::exchange::ErrorKind;

/// How the proxy answers each kind of its own errors.
impl ErrorKind {
    fn status(self) -> StatusCode {
        match self {
            ErrorKind::UpstreamConnect | ErrorKind::UpstreamTls | ErrorKind::UpstreamProtocol => {
                StatusCode::BAD_GATEWAY
            }
            ErrorKind::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::BadRequest
            | ErrorKind::BadConnectTarget
            | ErrorKind::ClientTls
            | ErrorKind::ClientCancelled => StatusCode::BAD_REQUEST,
            // A fault's closed connection is answered with nothing; as an error, a dead
            // upstream's.
            ErrorKind::ConnectionClosed => StatusCode::BAD_GATEWAY,
            ErrorKind::ProxyAuthRequired => StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            ErrorKind::ForbiddenTarget => StatusCode::FORBIDDEN,
            ErrorKind::RewriteTooLarge | ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn source(self) -> ErrorSource {
        match self {
            ErrorKind::UpstreamConnect
            | ErrorKind::UpstreamTimeout
            | ErrorKind::UpstreamTls
            | ErrorKind::UpstreamProtocol => ErrorSource::Upstream,
            ErrorKind::BadRequest
            | ErrorKind::BadConnectTarget
            | ErrorKind::ProxyAuthRequired
            | ErrorKind::ForbiddenTarget
            | ErrorKind::ClientTls
            | ErrorKind::ClientCancelled => ErrorSource::Downstream,
            ErrorKind::ConnectionClosed => ErrorSource::Injected,
            ErrorKind::RewriteTooLarge | ErrorKind::Internal => ErrorSource::Internal,
        }
    }
}

/// A failure while handling one request, with a message that says who failed and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ProxyError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ProxyError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ProxyError {
            kind,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    pub fn info(&self) -> ErrorInfo {
        ErrorInfo {
            source: self.kind.source(),
            kind: self.kind,
            message: self.message.clone(),
        }
    }
}

/// The response the client gets for `err`.
pub fn response(err: &ProxyError) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("flakestorm: {}\n", err.message)));
    let mut resp = Response::new(body.map_err(|never| match never {}).boxed());
    *resp.status_mut() = err.status();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(ERROR_HEADER, HeaderValue::from_static(err.kind.name()));
    if err.kind == ErrorKind::ProxyAuthRequired {
        h.insert(
            header::PROXY_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"flakestorm\""),
        );
    }
    resp
}

/// Answers a request that never reached an upstream (malformed, failed auth, no route, a
/// `CONNECT` that could not be opened), and records it.
pub(super) fn reject<B>(
    proxy: &Proxy,
    ctx: &ConnCtx,
    req: &Request<B>,
    err: ProxyError,
) -> Response<ProxyBody> {
    let mut rec = Recorder::open(proxy, ctx, req, req.uri(), Route::Forward);
    rec.exchange_mut().target = Target::Other;
    fail(proxy, rec, err)
}

/// Records `err` on the exchange and answers it.
pub(super) fn fail(proxy: &Proxy, rec: Recorder, err: ProxyError) -> Response<ProxyBody> {
    let info = err.info();
    if info.source == ErrorSource::Upstream {
        tracing::warn!("{}", err.message);
    } else {
        tracing::info!("{}", err.message);
    }
    proxy.metrics().proxy_error(err.kind.name());
    let resp = response(&err);
    let status = resp.status().as_u16();
    rec.finish(
        Outcome::Error {
            error: info,
            status: Some(status),
        },
        0,
    );
    resp
}

/// Records `err` on the exchange, which is answered by closing the connection
/// (`proxy.upstream_connect_failure: close`).
pub(super) fn closed(proxy: &Proxy, rec: Recorder, err: ProxyError) {
    tracing::warn!(
        "{} (connection closed: proxy.upstream_connect_failure)",
        err.message
    );
    proxy.metrics().proxy_error(err.kind.name());
    rec.finish(
        Outcome::Error {
            error: err.info(),
            status: None,
        },
        0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genuine_errors_are_marked_and_explained() {
        let err = ProxyError::new(
            ErrorKind::UpstreamTimeout,
            "upstream api.x:443 sent no response head within 600s",
        );
        let resp = response(&err);
        assert_eq!(resp.status(), 504);
        assert_eq!(resp.headers()[ERROR_HEADER], "upstream_timeout");
        let auth = response(&ProxyError::new(ErrorKind::ProxyAuthRequired, "x"));
        assert_eq!(auth.status(), 407);
        assert!(auth.headers().contains_key(header::PROXY_AUTHENTICATE));
        assert_eq!(err.info().source, ErrorSource::Upstream);
    }
}
