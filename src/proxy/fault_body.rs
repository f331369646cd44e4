//! Response bodies under a fault: byte-level shapes (drip, cut, replace, corrupt), data
//! faults (`plant_body`, MCP: `mcp_body`) and the LLM rewriter's output (events, delays,
//! early ends) applied as the upstream body streams. Only `Corrupt`, `Inject`, `Plant`, a
//! JSON MCP answer and non-streaming LLM rewrites buffer, bounded by `BUFFER_LIMIT`; a body
//! over the bound passes through untouched and the fault is recorded as skipped. What a
//! rewrite produces is capped by `proxy.max_rewrite_bytes` (`chaos::budget`): going over
//! breaks this body (the head is already sent) with a `RewriteTooLarge` error, recorded as
//! `proxy_aborted`; the process and the connection's other exchanges are untouched.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame};
use tokio::time::Sleep;

use super::BoxError;
use super::mcp_body::{McpEvents, McpHeld};
use super::plant_body::PlantHeld;
use crate::chaos::attack::inject_tool_response;
use crate::chaos::budget::{Budget, DEFAULT_MAX_REWRITE_BYTES};
use crate::chaos::rewrite::{LlmRewriter, Out};
use crate::chaos::spec::LlmMode;
use crate::exchange::Provider;

/// Largest body a fault will hold in memory to rewrite it.
pub const BUFFER_LIMIT: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
pub enum Transform {
    /// Deliver at most `bytes_per_second`, in tenth-of-a-second slices.
    Drip { bytes_per_second: u64 },
    /// Stop after `after` bytes: cleanly, or by breaking the connection (`abort`).
    Cut { after: u64, abort: bool },
    /// The body is `payload` instead.
    Replace(Bytes),
    /// The body, cut short and ending in bytes no parser accepts.
    Corrupt,
    /// The body with `payload` hidden inside it (indirect prompt injection).
    Inject { payload: String },
    /// An MCP answer (JSON or SSE) edited: a tool list poisoned or shadowed, a result's
    /// text injected into or its data planted in.
    Mcp(crate::mcp::Edit),
    /// A data fault (`corrupt`, `empty`, `stale`) on a JSON or text body.
    Plant(crate::plant::Plan),
    /// A provider-aware rewrite (see `chaos::rewrite`).
    Llm {
        provider: Provider,
        mode: LlmMode,
        draw: u64,
    },
}

pub(super) enum State {
    Drip {
        rate: u64,
    },
    Cut {
        remaining: u64,
        abort: bool,
    },
    Replace(Option<Bytes>),
    Corrupt {
        buf: BytesMut,
        content_type: String,
    },
    /// An MCP answer held whole (JSON: one message).
    McpHeld(McpHeld),
    /// An MCP answer stream, edited as it flows.
    McpEvents(McpEvents),
    /// A body held whole for a data fault.
    Plant(PlantHeld),
    Inject {
        buf: BytesMut,
        payload: String,
        content_type: String,
    },
    Llm(Box<LlmRewriter>),
}

/// A body transform's line to its exchange: where it says why its fault was not applied,
/// and what values it planted (read by the recorder when the exchange ends), and the
/// proxy's cap on what a rewrite may produce (`proxy.max_rewrite_bytes`).
#[derive(Debug, Clone)]
pub struct SkipNote {
    line: Arc<Line>,
    pub max_rewrite: usize,
}

/// One allocation per exchange for both: most exchanges have neither.
#[derive(Debug, Default)]
struct Line {
    note: OnceLock<String>,
    planted: std::sync::Mutex<Vec<crate::exchange::Planted>>,
}

impl Default for SkipNote {
    fn default() -> Self {
        SkipNote::new(DEFAULT_MAX_REWRITE_BYTES)
    }
}

impl SkipNote {
    pub fn new(max_rewrite: usize) -> Self {
        SkipNote {
            line: Arc::default(),
            max_rewrite,
        }
    }

    /// Notes why; the first note wins.
    pub fn set(&self, note: String) -> Result<(), String> {
        self.line.note.set(note)
    }

    pub fn get(&self) -> Option<&String> {
        self.line.note.get()
    }

    /// Notes values the transform planted in the body.
    pub fn plant(&self, planted: Vec<crate::exchange::Planted>) {
        if !planted.is_empty() {
            let mut all = self.line.planted.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(planted);
        }
    }

    /// The values planted so far, taken.
    pub fn take_planted(&self) -> Vec<crate::exchange::Planted> {
        std::mem::take(&mut *self.line.planted.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A rewrite would have gone over `proxy.max_rewrite_bytes`: the body ends here.
#[derive(Debug, thiserror::Error)]
#[error("flakestorm: {0}")]
pub struct RewriteTooLarge(pub String);

pub struct FaultBody<B> {
    inner: B,
    state: State,
    /// Output waiting to be delivered (data, delays, an end).
    queue: VecDeque<Out>,
    sleep: Option<Pin<Box<Sleep>>>,
    upstream_done: bool,
    finished: bool,
    /// An abort (or a failed rewrite) yields once first, so hyper flushes the head and the
    /// bytes before it: a reset must come mid-response, not instead of it.
    abort_yielded: bool,
    skip: SkipNote,
}

impl<B> FaultBody<B> {
    pub fn new(inner: B, transform: Transform, content_type: &str, skip: SkipNote) -> Self {
        let mut queue = VecDeque::new();
        let state = match transform {
            Transform::Drip { bytes_per_second } => State::Drip {
                rate: bytes_per_second,
            },
            Transform::Cut { after, abort } => State::Cut {
                remaining: after,
                abort,
            },
            Transform::Replace(p) => State::Replace(Some(p)),
            Transform::Corrupt => State::Corrupt {
                buf: BytesMut::new(),
                content_type: content_type.to_string(),
            },
            Transform::Mcp(edit) => super::mcp_body::state(edit, content_type, &skip, &mut queue),
            Transform::Plant(plan) => State::Plant(PlantHeld::new(plan, content_type)),
            Transform::Inject { payload } => State::Inject {
                buf: BytesMut::new(),
                payload,
                content_type: content_type.to_string(),
            },
            Transform::Llm {
                provider,
                mode,
                draw,
            } => State::Llm(Box::new(LlmRewriter::new(
                provider,
                mode,
                draw,
                content_type,
                BUFFER_LIMIT,
                skip.max_rewrite,
            ))),
        };
        FaultBody {
            inner,
            state,
            queue,
            sleep: None,
            upstream_done: false,
            finished: false,
            abort_yielded: false,
            skip,
        }
    }
}

/// Everything passes through untouched (a transform done, or given up).
pub(super) const PASS: State = State::Cut {
    remaining: u64::MAX,
    abort: false,
};

/// The reset a `Cut { abort }` or a loud stream cut delivers: hyper breaks the connection
/// (HTTP/1.1) or resets the stream (HTTP/2) when a body fails.
#[derive(Debug, thiserror::Error)]
#[error("connection reset (injected)")]
struct InjectedReset;

impl<B> FaultBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Feeds one upstream chunk to the state; output goes to the queue.
    fn feed(&mut self, chunk: Bytes) {
        match &mut self.state {
            State::Drip { rate } => {
                let slice = (*rate / 10).max(1) as usize;
                let mut rest = chunk;
                while !rest.is_empty() {
                    let piece = rest.split_to(slice.min(rest.len()));
                    self.queue.push_back(Out::Data(piece));
                    self.queue.push_back(Out::Delay(Duration::from_millis(100)));
                }
            }
            State::Cut { remaining, abort } => {
                let keep = (*remaining).min(chunk.len() as u64) as usize;
                *remaining -= keep as u64;
                if keep > 0 {
                    self.queue.push_back(Out::Data(chunk.slice(..keep)));
                }
                if keep < chunk.len() || *remaining == 0 {
                    self.queue
                        .push_back(if *abort { Out::Abort } else { Out::End });
                }
            }
            State::Replace(payload) => {
                if let Some(p) = payload.take() {
                    self.queue.push_back(Out::Data(p));
                }
                self.queue.push_back(Out::End);
            }
            State::McpEvents(events) => {
                if events.feed(chunk, &mut self.queue, &self.skip) {
                    self.state = PASS;
                }
            }
            State::Corrupt { buf, .. }
            | State::Inject { buf, .. }
            | State::Plant(PlantHeld { buf, .. })
            | State::McpHeld(McpHeld { buf, .. }) => {
                if buf.len() + chunk.len() > BUFFER_LIMIT {
                    let _ = self.skip.set(format!(
                        "body over {BUFFER_LIMIT} bytes; passed through unchanged"
                    ));
                    let held = std::mem::take(buf).freeze();
                    self.state = State::Cut {
                        remaining: u64::MAX,
                        abort: false,
                    };
                    self.queue.push_back(Out::Data(held));
                    self.queue.push_back(Out::Data(chunk));
                } else {
                    buf.extend_from_slice(&chunk);
                }
            }
            State::Llm(r) => self.queue.extend(r.push(&chunk)),
        }
    }

    /// The upstream body ended.
    fn upstream_end(&mut self) {
        self.upstream_done = true;
        match &mut self.state {
            State::Corrupt { buf, content_type } => {
                let body = std::mem::take(buf).freeze();
                // An event stream keeps its framing: its last message is what breaks.
                let sse = crate::exchange::is_event_stream(content_type);
                let out = sse
                    .then(|| crate::mcp::corrupt_last_event(&body))
                    .flatten()
                    .unwrap_or_else(|| corrupt(&body));
                self.queue.push_back(Out::Data(out));
            }
            State::McpHeld(held) => held.end(&mut self.queue, &self.skip),
            State::Plant(held) => held.end(&mut self.queue, &self.skip),
            State::McpEvents(events) => events.end(&mut self.queue, &self.skip),
            State::Inject {
                buf,
                payload,
                content_type,
            } => {
                let body = std::mem::take(buf).freeze();
                // Sized before it is built: the body, the payload and its wrapping.
                let mut budget = Budget::new(self.skip.max_rewrite, body.len());
                if let Err(e) = budget.grow(payload.len().saturating_add(64)) {
                    self.queue.push_back(Out::Fail(e.to_string()));
                    return;
                }
                let out =
                    inject_tool_response(&body, content_type, payload).unwrap_or_else(|note| {
                        let _ = self.skip.set(note.into());
                        body
                    });
                self.queue.push_back(Out::Data(out));
            }
            State::Replace(payload) => {
                if let Some(p) = payload.take() {
                    self.queue.push_back(Out::Data(p));
                }
            }
            State::Llm(r) => {
                self.queue.extend(r.finish());
                if let Some(note) = r.skipped() {
                    let _ = self.skip.set(note.to_string());
                }
            }
            State::Drip { .. } | State::Cut { .. } => {}
        }
        self.queue.push_back(Out::End);
    }
}

impl<B> Body for FaultBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            if let Some(sleep) = this.sleep.as_mut() {
                ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            match this.queue.pop_front() {
                Some(Out::Data(d)) if d.is_empty() => continue,
                Some(Out::Data(d)) => return Poll::Ready(Some(Ok(Frame::data(d)))),
                Some(Out::Delay(d)) => this.sleep = Some(Box::pin(tokio::time::sleep(d))),
                Some(Out::End) => this.finished = true,
                Some(o @ (Out::Abort | Out::Fail(_))) if !this.abort_yielded => {
                    this.abort_yielded = true;
                    this.queue.push_front(o);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Some(Out::Abort) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(Box::new(InjectedReset))));
                }
                Some(Out::Fail(why)) => {
                    this.finished = true;
                    tracing::warn!("chaos rewrite failed its exchange: {why}");
                    let _ = this.skip.set(why.clone());
                    return Poll::Ready(Some(Err(Box::new(RewriteTooLarge(why)))));
                }
                None if this.upstream_done => this.finished = true,
                None => match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => this.feed(data),
                        Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
                    },
                    Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                    None => this.upstream_end(),
                },
            }
        }
    }
}

/// The first 60% of a body followed by bytes no JSON, SSE or HTML parser accepts whole.
fn corrupt(body: &[u8]) -> Bytes {
    let keep = (body.len() * 6 / 10).max(usize::from(!body.is_empty()));
    let mut out = BytesMut::from(&body[..keep]);
    out.extend_from_slice("\"\u{fffd}\u{0}{".as_bytes());
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn chunks(
        parts: &[&'static str],
    ) -> impl Body<Data = Bytes, Error = std::convert::Infallible> + Unpin {
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
            .collect();
        http_body_util::StreamBody::new(futures_util::stream::iter(frames))
    }

    async fn run(t: Transform, parts: &[&'static str]) -> (Vec<u8>, bool) {
        let mut body = FaultBody::new(chunks(parts), t, "application/json", SkipNote::default());
        let mut out = vec![];
        while let Some(f) = body.frame().await {
            match f {
                Ok(f) => out.extend_from_slice(&f.into_data().unwrap()),
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }

    #[tokio::test]
    async fn cut_ends_clean_or_aborts() {
        assert_eq!(
            run(
                Transform::Cut {
                    after: 5,
                    abort: false
                },
                &["abc", "defgh"]
            )
            .await,
            (b"abcde".to_vec(), false)
        );
        assert_eq!(
            run(
                Transform::Cut {
                    after: 3,
                    abort: true
                },
                &["abc", "defgh"]
            )
            .await,
            (b"abc".to_vec(), true)
        );
        assert_eq!(
            run(
                Transform::Cut {
                    after: 0,
                    abort: true
                },
                &["abc"]
            )
            .await,
            (vec![], true)
        );
    }

    #[tokio::test]
    async fn replace_and_corrupt() {
        let (out, _) = run(
            Transform::Replace(Bytes::from_static(b"IGNORE ALL")),
            &["{\"ok\":1}"],
        )
        .await;
        assert_eq!(out, b"IGNORE ALL");
        let (out, aborted) = run(Transform::Corrupt, &["{\"results\":", "[1,2,3]}"]).await;
        assert!(!aborted);
        assert!(out.starts_with(b"{\"results\":"));
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_err());
    }

    #[tokio::test]
    async fn injection_hides_the_payload_in_valid_json() {
        let t = Transform::Inject {
            payload: "OBEY".into(),
        };
        let (out, _) = run(t, &["{\"results\": [\"a\", ", "\"longer one\"]}"]).await;
        assert_eq!(out, br#"{"results":["a","longer one OBEY"]}"#);
    }

    /// A tool-response injection that would go over `proxy.max_rewrite_bytes` breaks the
    /// body with `RewriteTooLarge` and notes why; nothing of the size is built.
    #[tokio::test]
    async fn an_injection_over_the_cap_fails_the_body() {
        let skip = SkipNote::new(100);
        let t = Transform::Inject {
            payload: "x".repeat(200),
        };
        let mut body = FaultBody::new(
            chunks(&["{\"a\": \"b\"}"]),
            t,
            "application/json",
            skip.clone(),
        );
        let mut err = None;
        while let Some(f) = body.frame().await {
            if let Err(e) = f {
                err = Some(e);
                break;
            }
        }
        let err = err.expect("the body fails");
        assert!(err.is::<RewriteTooLarge>(), "{err}");
        assert!(
            skip.get()
                .unwrap()
                .contains("over proxy.max_rewrite_bytes (100)")
        );
    }

    /// An MCP answer stream is edited as it flows: a server's request before the answer
    /// (which the server waits on) goes out before the answer has arrived; the answer then
    /// comes with the payload in its text.
    #[tokio::test(start_paused = true)]
    async fn an_mcp_stream_passes_events_at_once_and_edits_its_answer() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
            let b = rx.recv().await?;
            Some((Ok::<_, std::convert::Infallible>(Frame::data(b)), rx))
        });
        let upstream = http_body_util::StreamBody::new(Box::pin(frames));
        let edit = crate::mcp::Edit::InjectResult {
            payload: "OBEY".into(),
        };
        let mut body = FaultBody::new(
            upstream,
            Transform::Mcp(edit),
            "text/event-stream",
            SkipNote::default(),
        );
        let ask = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\"}\r\n\r\n";
        tx.send(Bytes::from_static(ask.as_bytes())).await.unwrap();
        let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("the server's request is not held back");
        assert_eq!(first.unwrap().unwrap().into_data().unwrap(), ask.as_bytes());
        let answer = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Sunny\"}]}}\r\n\r\n";
        tx.send(Bytes::from_static(answer.as_bytes()))
            .await
            .unwrap();
        drop(tx);
        let mut rest = vec![];
        while let Some(f) = body.frame().await {
            rest.extend_from_slice(&f.unwrap().into_data().unwrap());
        }
        let rest = String::from_utf8(rest).unwrap();
        assert!(rest.contains(r#""text":"Sunny\n\nOBEY""#), "{rest}");
    }

    #[tokio::test(start_paused = true)]
    async fn drip_paces_the_body() {
        let start = tokio::time::Instant::now();
        let (out, _) = run(
            Transform::Drip {
                bytes_per_second: 20,
            },
            &["0123456789"],
        )
        .await;
        assert_eq!(out, b"0123456789");
        // 2 bytes per 100 ms slice: 5 slices.
        assert_eq!(start.elapsed(), Duration::from_millis(500));
    }
}
