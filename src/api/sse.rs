//! A run's events as a Server-Sent Events body: what was missed after `Last-Event-ID`,
//! then each new event as it happens, a comment when it has been quiet for `keep_alive`
//! (so idle proxies, and the control listener's own read deadline, keep the stream
//! open), and the end after `done`. A follower that goes away only ends its own pump
//! task; the run goes on.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::mpsc;

use crate::jobs::Job;

/// The body that streams `job`'s events after event `after`.
pub fn follow(job: Arc<Job>, after: u64, keep_alive: Duration) -> Body {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(pump(job, after, keep_alive, tx));
    Body::new(Stream { rx })
}

/// The body for a run that has ended and has no live events: one `done` event with its
/// record (numbered 1, so a follower that already had it gets nothing).
pub fn ended(record: &crate::store::RunRecord, after: u64) -> Body {
    let done = crate::jobs::Event {
        id: 1,
        kind: "done",
        data: serde_json::json!(record),
    };
    match after {
        0 => Body::from(done.sse()),
        _ => Body::empty(),
    }
}

async fn pump(job: Arc<Job>, mut last: u64, keep_alive: Duration, tx: mpsc::Sender<Bytes>) {
    let mut changed = job.events.watch();
    loop {
        // Read before the events: if `done` is in the log now, `after` returns it unless
        // the follower already had it, and either way nothing more will come.
        let ended = job.events.ended();
        for e in job.events.after(last) {
            if tx.send(Bytes::from(e.sse())).await.is_err() {
                return;
            }
            last = e.id;
            if e.kind == "done" {
                return;
            }
        }
        if ended {
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            () = tokio::time::sleep(keep_alive) => {
                if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                    return;
                }
            }
        }
    }
}

struct Stream {
    rx: mpsc::Receiver<Bytes>,
}

impl http_body::Body for Stream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}
