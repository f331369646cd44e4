//! Close-delimited response bodies (HTTP/1.x with neither `Content-Length` nor
//! `Transfer-Encoding`) end when the upstream closes the connection. Over TLS many servers
//! (Python's `http.server` behind `ssl`, small self-hosted ones) close without sending
//! `close_notify`; rustls reports that, after the last byte, as an `UnexpectedEof` error,
//! which hyper hands on as a body error. curl, httpx and browsers take that close as the
//! body's end, so the agent without the proxy would have read the whole body: this
//! wrapper ends the body there too (so no transform downstream loses what it holds) and
//! notes the unclean close on the exchange. Framed bodies are not wrapped: hyper tells a
//! short one by its framing, whatever TLS says. Which responses carry no body at all
//! (`bodiless`) is decided here too, for this and for the fault transforms.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::BoxError;
use super::recorder::BodyNote;

/// What the exchange's note says when the body ended this way.
pub const NOTE: &str = "the upstream closed TLS without close_notify to end a close-delimited \
                        body: taken as the body's end, as curl and browsers take it";

/// Whether a response's body is delimited by the connection's close (RFC 9112 §6.3, case
/// 8): HTTP/1.x, a status and method that carry a body, and no framing header.
pub fn applies(method: &str, parts: &http::response::Parts) -> bool {
    let h1 = matches!(
        parts.version,
        http::Version::HTTP_10 | http::Version::HTTP_11 | http::Version::HTTP_09
    );
    let framed = parts.headers.contains_key(http::header::CONTENT_LENGTH)
        || parts.headers.contains_key(http::header::TRANSFER_ENCODING);
    h1 && !bodiless(method, parts.status) && !framed
}

/// Responses that carry no body whatever their headers say (RFC 9110 §6.4.1, RFC 9112
/// §6.3): to HEAD, a CONNECT's success (the connection becomes a tunnel), 1xx, 204, 304.
pub fn bodiless(method: &str, status: http::StatusCode) -> bool {
    method == "HEAD"
        || (method == "CONNECT" && status.is_success())
        || status.is_informational()
        || status == http::StatusCode::NO_CONTENT
        || status == http::StatusCode::NOT_MODIFIED
}

/// A close-delimited body whose unclean TLS close is its end.
pub struct CloseDelimited<B> {
    inner: B,
    note: BodyNote,
    ended: bool,
}

impl<B> CloseDelimited<B> {
    pub fn new(inner: B, note: BodyNote) -> Self {
        CloseDelimited {
            inner,
            note,
            ended: false,
        }
    }
}

/// Whether `e` is the connection's end without `close_notify` (an `UnexpectedEof` I/O
/// error anywhere in its chain, including inside wrapped `io::Error`s).
fn unclean_eof(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |cur| cur.source())
        .flat_map(super::forward::wrapped)
        .any(|layer| {
            layer
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
        })
}

impl<B> Body for CloseDelimited<B>
where
    B: Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Err(e)) if unclean_eof(&*e) => {
                self.ended = true;
                let _ = self.note.set(NOTE.into());
                Poll::Ready(None)
            }
            frame @ (Some(_) | None) => Poll::Ready(frame),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    fn parts(version: http::Version, headers: &[(&str, &str)]) -> http::response::Parts {
        let mut b = http::Response::builder().version(version);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_unframed_http1_bodies_are_close_delimited() {
        const HTTP_11: http::Version = http::Version::HTTP_11;
        const HTTP_2: http::Version = http::Version::HTTP_2;
        assert!(applies("GET", &parts(HTTP_11, &[])));
        assert!(!applies("GET", &parts(HTTP_11, &[("content-length", "3")])));
        let chunked = [("transfer-encoding", "chunked")];
        assert!(!applies("GET", &parts(HTTP_11, &chunked)));
        assert!(!applies("GET", &parts(HTTP_2, &[])));
        assert!(!applies("HEAD", &parts(HTTP_11, &[])));
    }

    #[test]
    fn head_connects_success_1xx_204_and_304_carry_no_body() {
        use http::StatusCode;
        assert!(bodiless("HEAD", StatusCode::OK));
        assert!(bodiless("CONNECT", StatusCode::OK));
        assert!(bodiless("GET", StatusCode::SWITCHING_PROTOCOLS));
        assert!(bodiless("GET", StatusCode::NO_CONTENT));
        assert!(bodiless("POST", StatusCode::NOT_MODIFIED));
        assert!(!bodiless("GET", StatusCode::OK));
        assert!(!bodiless("POST", StatusCode::SERVICE_UNAVAILABLE));
        // A refused CONNECT says why in a body.
        assert!(!bodiless("CONNECT", StatusCode::FORBIDDEN));
    }

    async fn read(errors: Vec<std::io::Error>) -> (Vec<u8>, Result<(), BoxError>, BodyNote) {
        let frames = std::iter::once(Ok(Frame::data(Bytes::from_static(b"all of it"))))
            .chain(errors.into_iter().map(|e| Err(BoxError::from(e))));
        let note = BodyNote::default();
        let mut body = CloseDelimited::new(
            StreamBody::new(futures_util::stream::iter(frames)),
            note.clone(),
        );
        let mut got = vec![];
        let end = loop {
            match body.frame().await {
                None => break Ok(()),
                Some(Ok(f)) => got.extend_from_slice(f.data_ref().unwrap()),
                Some(Err(e)) => break Err(e),
            }
        };
        (got, end, note)
    }

    #[tokio::test]
    async fn an_unclean_close_ends_the_body_with_a_note() {
        let eof = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no close_notify");
        let wrapped = std::io::Error::other(eof);
        let (got, end, note) = read(vec![wrapped]).await;
        assert_eq!(got, b"all of it");
        assert!(end.is_ok());
        assert_eq!(note.get().map(String::as_str), Some(NOTE));
    }

    /// An error that names its cause only through `source` (as hyper's do).
    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("body error")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_eof_is_found_through_sources_and_wrapped_io_errors() {
        let eof = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        let deep = Outer(std::io::Error::other(std::io::Error::other(eof())));
        assert!(unclean_eof(&deep));
        assert!(unclean_eof(&eof()));
        let reset = Outer(std::io::Error::other(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(!unclean_eof(&reset));
    }

    #[tokio::test]
    async fn other_errors_still_break_the_body() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let (_, end, note) = read(vec![reset]).await;
        assert!(end.is_err());
        assert!(note.get().is_none());
    }
}
