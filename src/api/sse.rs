//! A run's events as a Server-Sent Events response (axum's `Sse`): what was missed after
//! `Last-Event-ID`, then each new event as it happens, a `: keep-alive` comment when it has
//! been quiet for `keep_alive` (so idle proxies, and the control listener's own read
//! deadline, keep the stream open), and the end after `done`, with the connection. Every
//! stream opens with `retry: 1000` (`RETRY`): a browser's `EventSource` waits that long
//! before it resumes a broken stream with `Last-Event-ID` (Firefox's own default is 5 s).
//! A follower that goes away only ends its own pump task; the run goes on.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use tokio::sync::mpsc;

use crate::jobs::{self, Job, RunEvent};

/// How long a browser waits before it resumes a broken stream (the `retry:` field sent
/// first on every stream, docs/api.md#events): short, as a resumed stream loses nothing.
pub const RETRY: Duration = Duration::from_millis(1000);

/// The stream's first message: only its `retry:` field (no event, so no id and no data).
fn retry() -> Result<Event, Infallible> {
    Ok(Event::default().retry(RETRY))
}

/// The response that streams `job`'s events after event `after`.
pub fn follow(job: Arc<Job>, after: u64, keep_alive: Duration) -> Response {
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(pump(job, after, tx));
    let events = stream::poll_fn(move |cx| rx.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    let events = futures_util::StreamExt::chain(stream::iter([retry()]), events);
    let quiet = KeepAlive::new().interval(keep_alive).text("keep-alive");
    respond(Sse::new(events).keep_alive(quiet))
}

/// The response for a run that has ended and has no live events: one `done` event with its
/// record (numbered 1, so a follower that already had it gets nothing).
pub fn ended(record: &crate::store::RunRecord, after: u64) -> Response {
    let done = jobs::Event {
        id: 1,
        event: RunEvent::Done(Box::new(record.clone())),
    };
    let events = (after == 0).then(|| Ok::<_, Infallible>(message(&done)));
    respond(Sse::new(stream::iter(
        std::iter::once(retry()).chain(events),
    )))
}

/// `text/event-stream`, not cached, and the connection ends with the stream (after
/// `done`): clients that read until the connection closes, as the simplest SSE readers
/// do, are not left waiting on it until the control listener's read deadline.
fn respond(sse: impl IntoResponse) -> Response {
    let close = [(header::CONNECTION, HeaderValue::from_static("close"))];
    (close, sse).into_response()
}

/// One event as an SSE message: `id: N`, `event: KIND`, `data: JSON`.
fn message(e: &jobs::Event) -> Event {
    Event::default()
        .id(e.id.to_string())
        .event(e.event.kind().as_str())
        .data(e.event.data())
}

async fn pump(job: Arc<Job>, mut last: u64, tx: mpsc::Sender<Event>) {
    let mut changed = job.events.watch();
    loop {
        // Read before the events: if `done` is in the log now, `after` returns it unless
        // the follower already had it, and either way nothing more will come.
        let ended = job.events.ended();
        for e in job.events.after(last) {
            if tx.send(message(&e)).await.is_err() {
                return;
            }
            last = e.id;
            if e.is_done() {
                return;
            }
        }
        if ended {
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            () = tx.closed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn text(r: Response) -> String {
        let body = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn an_event_is_one_message_with_its_number_kind_and_data() {
        let e = jobs::Event {
            id: 2,
            event: RunEvent::case_started("s", "hi"),
        };
        let r = respond(Sse::new(stream::iter([Ok::<_, Infallible>(message(&e))])));
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        assert_eq!(r.headers()["cache-control"], "no-cache");
        assert_eq!(r.headers()["connection"], "close");
        let sent = "id: 2\nevent: case_started\ndata: {\"scenario\":\"s\",\"input\":\"hi\"}\n\n";
        assert_eq!(text(r).await, sent);
    }

    #[tokio::test]
    async fn an_ended_run_is_one_done_event_unless_the_follower_had_it() {
        let record = crate::store::RunRecord {
            id: "r1".into(),
            kind: crate::store::RunKind::Contract,
            config_digest: None,
            seed: Some(1),
            started_ms: 0,
            finished_ms: Some(1),
            status: crate::store::RunStatus::Passed,
            reason: None,
            scores: Default::default(),
            done: 0,
            total: 0,
            artifacts: Default::default(),
            contract: None,
            trials: None,
            shards: None,
        };
        let done = text(ended(&record, 0)).await;
        let data = serde_json::to_string(&record).unwrap();
        let retry = "retry: 1000\n\n";
        assert_eq!(done, format!("{retry}id: 1\nevent: done\ndata: {data}\n\n"));
        assert_eq!(text(ended(&record, 1)).await, retry);
    }
}
