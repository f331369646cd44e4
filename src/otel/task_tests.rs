use super::*;
use crate::otel::ids;
use crate::otel::testing::{chat, pending, rate_limit, shared, text};
use crate::telemetry::Metrics;

fn task(hold: Hold) -> (Task, Metrics) {
    let metrics = Metrics::new();
    (Task::new(shared(false, &metrics), hold), metrics)
}

fn case_exchange(trace: &str) -> Pending {
    let (mut ex, b) = chat();
    ex.trace_id = Some(trace.into());
    ex.fault = Some(rate_limit("rl"));
    pending(ex, Some(b), true)
}

fn dropped(m: &Metrics, reason: &str) -> String {
    let label = format!("flakestorm_otlp_dropped_spans_total{{reason=\"{reason}\"}}");
    m.encode()
        .lines()
        .find(|l| l.starts_with(&label))
        .map_or_else(|| "0".into(), |l| l[label.len()..].trim().to_string())
}

#[test]
fn an_exchange_of_no_case_goes_out_at_once_a_cases_waits_for_its_run() {
    let (mut t, _) = task(Hold::default());
    let (mut other, b) = chat();
    // An agent's own trace id that no case watches: not held.
    other.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    t.take(Item::Exchange(Box::new(pending(other, Some(b), false))));
    assert_eq!(t.batch.len(), 1);
    t.take(Item::Exchange(Box::new(case_exchange("case-a"))));
    t.take(Item::Exchange(Box::new(case_exchange("case-b"))));
    assert_eq!((t.batch.len(), t.hold.size().0), (1, 2));

    let run = ids::context(ids::trace_id(), ids::span_id());
    let case = ids::context(run.trace_id(), ids::span_id());
    let end = EndRun {
        cases: vec![("case-a".into(), case.clone())],
        run: Some(run.clone()),
        seed: 42,
        last: false,
    };
    t.take(Item::EndRun(Box::new(end)));
    assert_eq!(
        (t.batch.len(), t.hold.size().0),
        (2, 1),
        "case-b still held"
    );
    let span = t.batch.last().unwrap();
    assert_eq!(span.span_context.trace_id(), run.trace_id());
    assert_eq!(span.parent_span_id, case.span_id());
    let (event,) = (&span.events.events[0],);
    let seed = event
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "flakestorm.fault.seed");
    assert_eq!(seed.unwrap().value.as_str(), "42", "the run's seed");

    // The last run to end takes what no case claimed, under its own span.
    let end = EndRun {
        cases: vec![],
        run: Some(run.clone()),
        seed: 42,
        last: true,
    };
    t.take(Item::EndRun(Box::new(end)));
    assert_eq!((t.batch.len(), t.hold.size()), (3, (0, 0)));
    let leftover = t.batch.last().unwrap();
    assert_eq!(leftover.parent_span_id, run.span_id());
    assert_eq!(
        text(leftover, "flakestorm.case.trace_id").as_deref(),
        Some("case-b")
    );
}

#[test]
fn what_the_hold_has_no_room_for_is_dropped_and_counted() {
    let (mut t, m) = task(Hold::new(2, usize::MAX));
    for _ in 0..5 {
        t.take(Item::Exchange(Box::new(case_exchange("case-a"))));
    }
    assert_eq!(t.hold.size().0, 2);
    assert_eq!(dropped(&m, "hold_full"), "3");
    assert!(t.batch.is_empty(), "not sent instead");
}

#[tokio::test(start_paused = true)]
async fn after_a_failed_export_spans_are_dropped_unbuilt_for_a_while() {
    let (mut t, m) = task(Hold::default());
    let (ex, b) = chat();
    t.take(Item::Exchange(Box::new(pending(
        ex.clone(),
        Some(b.clone()),
        false,
    ))));
    let n = t.next_batch().len();
    t.report(
        Ok(Err(
            opentelemetry_sdk::error::OTelSdkError::InternalFailure("refused".into()),
        )),
        n,
    );
    assert_eq!(dropped(&m, "export_failed"), "1");
    t.take(Item::Exchange(Box::new(pending(
        ex.clone(),
        Some(b.clone()),
        false,
    ))));
    assert!(t.batch.is_empty());
    assert_eq!(dropped(&m, "export_failed"), "2");
    // Once the back-off is over, spans are built and sent again.
    tokio::time::advance(BACKOFF_MIN).await;
    t.take(Item::Exchange(Box::new(pending(ex, Some(b), false))));
    assert_eq!(t.batch.len(), 1);
}

/// An exporter that keeps each request's span count (the collector, not ours).
#[derive(Debug, Clone, Default)]
struct Requests(Arc<std::sync::Mutex<Vec<usize>>>);

impl SpanExporter for Requests {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().push(batch.len());
        Ok(())
    }
}

fn loose_exchange() -> Item {
    let (ex, b) = chat();
    Item::Exchange(Box::new(pending(ex, Some(b), false)))
}

#[tokio::test(start_paused = true)]
async fn spans_gather_for_the_linger_and_a_flush_sends_at_once() {
    let metrics = Metrics::new();
    let requests = Requests::default();
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(run(rx, requests.clone(), shared(false, &metrics)));
    let sent = || requests.0.lock().unwrap().clone();
    tx.send(loose_exchange()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(sent(), [1], "the first span is a probe, sent at once");
    for _ in 0..3 {
        tx.send(loose_exchange()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(99)).await;
    assert_eq!(sent(), [1], "within the linger, nothing more is sent");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(sent(), [1, 3], "one request for the three");

    tx.send(loose_exchange()).await.unwrap();
    let (done, flushed) = oneshot::channel();
    tx.send(Item::Flush(done)).await.unwrap();
    let before = Instant::now();
    flushed.await.unwrap();
    assert_eq!(
        before.elapsed(),
        Duration::ZERO,
        "a flush does not wait out the linger"
    );
    assert_eq!(sent(), [1, 3, 1]);

    tx.send(loose_exchange()).await.unwrap();
    drop(tx);
    task.await.unwrap();
    assert_eq!(
        sent(),
        [1, 3, 1, 1],
        "what is left is sent when the queue closes"
    );
}

/// A collector that refuses while `failing` is set and keeps each request's span count.
#[derive(Debug, Clone, Default)]
struct Flaky {
    failing: Arc<std::sync::atomic::AtomicBool>,
    sent: Requests,
}

impl SpanExporter for Flaky {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if self.failing.load(Ordering::Relaxed) {
            return Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                "connection refused".into(),
            ));
        }
        self.sent.0.lock().unwrap().push(batch.len());
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn while_exports_fail_the_path_drops_exchanges_and_a_probe_reopens_it() {
    let metrics = Metrics::new();
    let (tx, rx) = mpsc::channel(64);
    let otel = crate::otel::Otel::with(tx, crate::otel::testing::settings(false), &metrics, 1);
    let flaky = Flaky::default();
    flaky.failing.store(true, Ordering::Relaxed);
    let task = tokio::spawn(run(rx, flaky.clone(), otel.inner.shared.clone()));
    let hand_over = || {
        let (ex, b) = chat();
        otel.exchange(Arc::new(ex), Some(b), false);
    };
    hand_over();
    assert!(!otel.down(), "nothing failed yet");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(
        otel.down(),
        "the first span's export (a probe, no linger) failed"
    );
    assert_eq!(dropped(&metrics, "export_failed"), "1");

    hand_over();
    assert_eq!(otel.inner.tx.capacity(), 64, "not queued");
    assert_eq!(
        dropped(&metrics, "export_failed"),
        "2",
        "dropped on the path, and counted"
    );

    flaky.failing.store(false, Ordering::Relaxed);
    tokio::time::sleep(BACKOFF_MIN).await;
    assert!(!otel.down(), "the back-off is over");
    let before = Instant::now();
    hand_over();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        flaky.sent.0.lock().unwrap().clone(),
        [1],
        "the first span after the back-off is a probe, sent at once"
    );
    assert!(before.elapsed() < Duration::from_millis(100), "no linger");
    drop(otel);
    task.await.unwrap();
}
