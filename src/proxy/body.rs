//! Response bodies on their way to the client: `ObservedBody` streams the upstream body
//! frame by frame (never holding a frame back), counts bytes, and records the exchange in
//! the journal exactly once, when the body ends, fails, or is dropped because the client
//! left (after reading on briefly to tell a client that had every byte from one that left
//! mid-body). For LLM responses it also keeps a bounded copy of what the agent received, to
//! record the tool calls the model asked for and the tokens the answer reported (read once,
//! when the body ends: nothing is held back from the client).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::BoxError;
use super::recorder::Recorder;
use crate::exchange::{BodyEnd, Outcome, ResponseHead, Target};

/// The most of an LLM response kept to find its tool calls; larger ones are not read.
const TAP_LIMIT: usize = 8 << 20;

/// How long a body whose client left is still read, to learn whether the client had
/// already received all of it: a streaming SDK stops reading at its last event (`[DONE]`,
/// `message_stop`) and closes before the chunked terminator that follows it arrives.
const AFTER_LEAVE: std::time::Duration = std::time::Duration::from_millis(250);

/// Bounds a body must meet to be observed (and, once its client left, read on in a task).
pub trait Inner: Body<Data = Bytes> + Send + Unpin + 'static {}
impl<B: Body<Data = Bytes> + Send + Unpin + 'static> Inner for B {}

/// A streaming body that records its exchange when it ends.
pub struct ObservedBody<B: Inner> {
    /// Taken only by `drop`.
    inner: Option<B>,
    head: Option<(Recorder, ResponseHead)>,
    bytes: u64,
    /// A copy of the body so far, when its tool calls are wanted.
    tap: Option<Vec<u8>>,
}

impl<B: Inner> ObservedBody<B> {
    /// `tap`: keep a copy of the body to read the LLM tool calls in it when it ends.
    pub fn new(inner: B, recorder: Recorder, head: ResponseHead, tap: bool) -> Self {
        let empty = inner.is_end_stream();
        let mut body = ObservedBody {
            inner: Some(inner),
            head: Some((recorder, head)),
            bytes: 0,
            tap: tap.then(Vec::new),
        };
        // An empty body (204, HEAD, Content-Length: 0, 101) may never be polled at all.
        if empty {
            let upgraded = body.head.as_ref().is_some_and(|(_, h)| h.status == 101);
            body.finish(if upgraded {
                BodyEnd::Upgraded
            } else {
                BodyEnd::Complete
            });
        }
        body
    }

    fn finish(&mut self, end: BodyEnd) {
        if let Some(head) = self.head.take() {
            record(head, self.tap.take(), self.bytes, end);
        }
    }
}

fn record(
    (mut rec, response): (Recorder, ResponseHead),
    tap: Option<Vec<u8>>,
    bytes: u64,
    end: BodyEnd,
) {
    let answered = (200..300).contains(&response.status);
    let llm = matches!(rec.exchange().target, Target::Llm { .. });
    if let Some(copy) = &tap {
        rec.exchange_mut().llm_tool_calls = crate::llm::tool_calls(copy);
    }
    // A successful LLM answer always gets a usage, unknown when its copy was not kept
    // (compressed, over the limit) or carried none: never counted as 0 tokens.
    if llm && answered {
        rec.exchange_mut().usage = Some(tap.as_deref().map(crate::llm::usage).unwrap_or_default());
    }
    rec.finish(
        Outcome::Response {
            response,
            body: end,
        },
        bytes,
    );
}

impl<B> Body for ObservedBody<B>
where
    B: Inner,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match ready!(Pin::new(&mut *inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                let end = inner.is_end_stream();
                if let Some(data) = frame.data_ref() {
                    this.bytes += data.len() as u64;
                    if let Some((rec, _)) = &this.head {
                        rec.capture_response(data);
                    }
                    if let Some(copy) = &mut this.tap {
                        if copy.len() + data.len() <= TAP_LIMIT {
                            copy.extend_from_slice(data);
                        } else {
                            this.tap = None;
                        }
                    }
                }
                // hyper stops polling once `is_end_stream` is true (Content-Length bodies),
                // so the final `None` may never come.
                if end {
                    this.finish(BodyEnd::Complete);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => {
                let e: BoxError = e.into();
                let message = e.to_string();
                this.finish(if e.is::<super::fault_body::RewriteTooLarge>() {
                    BodyEnd::ProxyAborted { message }
                } else {
                    BodyEnd::UpstreamAborted { message }
                });
                Poll::Ready(Some(Err(e)))
            }
            None => {
                this.finish(BodyEnd::Complete);
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl<B: Inner> Drop for ObservedBody<B> {
    fn drop(&mut self) {
        // Still unrecorded here means the client stopped reading before the body's end.
        let (Some(head), Some(inner)) = (self.head.take(), self.inner.take()) else {
            return;
        };
        let tap = self.tap.take();
        let bytes = self.bytes;
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return record(head, tap, bytes, BodyEnd::ClientDisconnected);
        };
        rt.spawn(async move {
            let end = match tokio::time::timeout(AFTER_LEAVE, only_the_end(inner)).await {
                Ok(true) => BodyEnd::Complete,
                Ok(false) | Err(_) => BodyEnd::ClientDisconnected,
            };
            record(head, tap, bytes, end);
        });
    }
}

/// Whether all that is left of a body is its end: no more data, no error. A body that
/// is read on after its client left is dropped at its next data, so a real LLM stops
/// generating.
async fn only_the_end<B: Inner>(mut body: B) -> bool {
    use http_body_util::BodyExt;
    loop {
        match body.frame().await {
            None => return true,
            Some(Ok(f)) if f.data_ref().is_none_or(|d| d.is_empty()) => {
                if body.is_end_stream() {
                    return true;
                }
            }
            Some(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::Proxy;
    use futures_util::stream;
    use http_body_util::BodyExt;
    use http_body_util::StreamBody;
    use std::convert::Infallible;

    fn body(frames: Vec<Frame<Bytes>>) -> impl Inner {
        StreamBody::new(stream::iter(frames.into_iter().map(Ok::<_, Infallible>)))
    }

    #[tokio::test]
    async fn a_body_with_nothing_left_but_its_end_was_all_delivered() {
        assert!(only_the_end(body(vec![])).await);
        let trailers = Frame::trailers(http::HeaderMap::new());
        assert!(only_the_end(body(vec![Frame::data(Bytes::new()), trailers])).await);
    }

    #[tokio::test]
    async fn more_data_after_the_client_left_means_it_left_mid_body() {
        let rest = vec![Frame::data(Bytes::from_static(b"data: more\n\n"))];
        assert!(!only_the_end(body(rest)).await);
    }

    type Fed = StreamBody<
        std::pin::Pin<
            Box<dyn futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send>,
        >,
    >;

    /// A response body the test feeds frame by frame, observed as the proxy observes one.
    fn observed(
        dir: &std::path::Path,
    ) -> (tokio::sync::mpsc::Sender<Bytes>, ObservedBody<Fed>, Proxy) {
        let config = crate::config::Config::default();
        let ca = crate::tls::CertificateAuthority::create(dir, false).unwrap();
        let journal = crate::journal::Journal::new(8, crate::journal::Redactor::new(&[], &[]));
        let proxy = Proxy::new(
            &config,
            std::sync::Arc::new(ca),
            crate::chaos::Engine::new(1),
            journal,
            crate::telemetry::Metrics::new(),
        )
        .unwrap();
        let ex =
            crate::exchange::tests_support::exchange(crate::exchange::Target::Other, "http://o/")
                .build();
        let rec = Recorder::new(proxy.clone(), ex, tokio::time::Instant::now(), None);
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let frames = stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
        });
        let head = ResponseHead {
            status: 200,
            version: "HTTP/1.1".into(),
            headers: vec![],
        };
        (
            tx,
            ObservedBody::new(StreamBody::new(Box::pin(frames)), rec, head, false),
            proxy,
        )
    }

    async fn left_after_first_frame(then: Option<&'static [u8]>) -> (BodyEnd, u64) {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut body, proxy) = observed(dir.path());
        tx.send(Bytes::from_static(b"data: [DONE]\n\n"))
            .await
            .unwrap();
        body.frame().await.unwrap().unwrap();
        // The client leaves; a moment later the origin sends its end, or more.
        drop(body);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if let Some(more) = then {
            tx.send(Bytes::from_static(more)).await.unwrap();
        }
        drop(tx);
        proxy.journal().wait_for(1).await;
        let ex = proxy.journal().all()[0].clone();
        let Outcome::Response { body, .. } = &ex.outcome else {
            panic!("{ex:?}")
        };
        (body.clone(), ex.response_bytes)
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_left_at_the_last_event_had_the_whole_body() {
        assert_eq!(left_after_first_frame(None).await, (BodyEnd::Complete, 14));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_left_before_more_data_left_mid_body() {
        let got = left_after_first_frame(Some(b"data: more\n\n")).await;
        assert_eq!(got, (BodyEnd::ClientDisconnected, 14));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_is_read_no_longer_than_the_bound() {
        let stalled = StreamBody::new(stream::pending::<Result<Frame<Bytes>, Infallible>>());
        let waited = tokio::time::timeout(AFTER_LEAVE, only_the_end(stalled)).await;
        assert!(waited.is_err());
    }
}
