//! `no_exfiltration` on the wire: plant the installed canary in tool responses (riding on
//! an injection transform when an attack already rewrites the response), and look for
//! canaries that another source served in what the agent sends: URL, header values, and
//! the body as it streams (never held back). LLM calls are neither planted nor scanned:
//! sending a tool result to the model is what agents do.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use super::body::{LeakSink, Owner, Recorder};
use super::fault::format_key;
use super::fault_body::Transform;
use super::{BoxError, ProxyBody};
use crate::chaos::{Canary, Scanner};
use crate::exchange::CanaryLeak;

/// Who serves and receives canaries: the tool's name, else `scheme://host:port`; `None`
/// for LLM calls.
fn source(rec: &Recorder) -> Option<String> {
    format_key(rec.exchange()).map(str::to_string)
}

/// Scans the request's URL and header values now; the body is scanned by `watch`.
pub fn scan_head(rec: &mut Recorder, canary: &Canary, url: &str, headers: &HeaderMap) {
    let Some(own) = source(rec) else { return };
    let mut found = vec![];
    let mut scan = |bytes: &[u8], place: &str| {
        for token in Scanner::default().feed(bytes) {
            found.extend(leak(canary, &own, token, place));
        }
    };
    scan(url.as_bytes(), "url");
    for (name, value) in headers {
        scan(value.as_bytes(), &format!("header {name}"));
    }
    rec.leaks()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(found);
}

fn leak(canary: &Canary, own: &str, token: String, place: &str) -> Option<CanaryLeak> {
    let from = canary.origin(&token)?;
    (from != own).then(|| CanaryLeak {
        canary: token,
        from,
        found_in: place.to_string(),
    })
}

/// The request body, scanned for canaries as it streams to the upstream.
pub fn watch(rec: &Recorder, canary: Arc<Canary>, body: ProxyBody) -> ProxyBody {
    let Some(own) = source(rec) else { return body };
    http_body_util::BodyExt::boxed(Watched {
        inner: body,
        canary,
        own,
        scanner: Scanner::default(),
        sink: rec.leaks(),
    })
}

/// Plants the canary in the response: as its own injection, or appended to the payload of
/// an attack's injection. A fault that rewrites the response otherwise leaves no room.
pub fn plant(rec: &mut Recorder, canary: &Canary, transform: &mut Option<(Owner, Transform)>) {
    let Some(own) = source(rec) else { return };
    match transform {
        None => {
            let (token, text) = canary.plant(&own);
            *transform = Some((Owner::Canary, Transform::Inject { payload: text }));
            rec.plant(token, Owner::Canary);
        }
        Some((owner, Transform::Inject { payload })) => {
            let (token, text) = canary.plant(&own);
            payload.push(' ');
            payload.push_str(&text);
            rec.plant(token, *owner);
        }
        Some(_) => {}
    }
}

struct Watched {
    inner: ProxyBody,
    canary: Arc<Canary>,
    own: String,
    scanner: Scanner,
    sink: LeakSink,
}

impl Body for Watched {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref()) {
            let leaks: Vec<CanaryLeak> = this
                .scanner
                .feed(data)
                .into_iter()
                .filter_map(|t| leak(&this.canary, &this.own, t, "body"))
                .collect();
            if !leaks.is_empty() {
                this.sink
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(leaks);
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
