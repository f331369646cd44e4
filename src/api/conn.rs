//! One control connection as its handlers see it (`Conn`, axum's connect info): the peer
//! (who failed to authenticate is logged by address), and whether a handler is at work on
//! it. While one is, the listener's read deadline (`deadline`) sleeps: hyper keeps reading
//! a connection whose request is being handled (to see it close), and the deadline used
//! to fire there, cutting a long import off without an answer although it was stored.
//! A body has its own deadline once a handler reads it (`control.body_timeout_ms`).
//!
//! `at_work` also says `Connection: close` on every answer whose request body was not
//! read to its end (a 413, a 401 before the body, a body that timed out): hyper closes
//! such a connection, and a keep-alive client that was not told sent its next request
//! into the closed socket.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::IncomingStream;
use http_body::{Frame, SizeHint};

use super::deadline::DeadlineListener;

/// A control connection: its peer, and how many of its requests a handler works on.
#[derive(Debug, Clone)]
pub struct Conn {
    pub peer: SocketAddr,
    pub(super) working: Working,
}

impl axum::extract::connect_info::Connected<IncomingStream<'_, DeadlineListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, DeadlineListener>) -> Conn {
        Conn {
            peer: *stream.remote_addr(),
            working: stream.io().working(),
        }
    }
}

/// How many requests of one connection are being handled (one, under HTTP/1.1).
#[derive(Debug, Clone, Default)]
pub struct Working(Arc<AtomicUsize>);

impl Working {
    pub fn busy(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }

    fn enter(&self) -> AtWork {
        self.0.fetch_add(1, Ordering::AcqRel);
        AtWork(self.clone())
    }

    /// Tests: a handler at work until the guard is dropped.
    #[cfg(test)]
    pub(super) fn enter_for_tests(&self) -> AtWork {
        self.enter()
    }
}

/// A handler at work; dropped when its answer is ready (or the request is dropped).
pub(super) struct AtWork(Working);

impl Drop for AtWork {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The peer of a request, when it came through the listener (not in router tests).
pub fn peer(req: &Request) -> Option<SocketAddr> {
    req.extensions()
        .get::<ConnectInfo<Conn>>()
        .map(|ConnectInfo(c)| c.peer)
}

/// Outermost layer: marks the connection at work while the handler runs, and closes it
/// (saying so) after an answer that left the request's body unread.
pub async fn at_work(req: Request, next: Next) -> Response {
    let _working = req
        .extensions()
        .get::<ConnectInfo<Conn>>()
        .map(|ConnectInfo(c)| c.working.enter());
    let has_body = !http_body::Body::is_end_stream(req.body());
    let ended = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let body = Body::new(Watched {
        inner: body,
        ended: ended.clone(),
    });
    let mut resp = next.run(Request::from_parts(parts, body)).await;
    if has_body && !ended.load(Ordering::Acquire) {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// A request body that says when it has been read to its end.
struct Watched {
    inner: Body,
    ended: Arc<AtomicBool>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            this.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let end = self.inner.is_end_stream();
        if end {
            self.ended.store(true, Ordering::Release);
        }
        end
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
