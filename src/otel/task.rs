//! The one task that feeds the exporter: it takes what the queue carries, builds each
//! exchange's span (off the request path), holds those of cases under way (`hold`) until
//! their run ends, and sends the rest in batches, one export at a time while it keeps
//! taking from the queue. A ready span waits up to the linger (`OTEL_BSP_SCHEDULE_DELAY`)
//! for others to share its request, unless a batch is full or a flush waits: one request
//! per span would cost both sides far more than the span. A collector that is down or slow
//! costs this task, never the proxy: a failed export is dropped (no retry) and counted, says
//! so once, and for a while after it (`Backoff`) the proxy's path drops exchanges before
//! capturing or queueing them (`Shared::down`). The first span, and the first when the
//! back-off ends, is sent at once as a probe: a dead collector is known at its first
//! exchange and costs one failed request per back-off.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use opentelemetry::trace::SpanContext;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::Shared;
use super::exchange_span::Pending;
use super::hold::Hold;

/// Spans sent in one export request at most.
const MAX_BATCH: usize = 512;

/// Spans waiting for an export, at most (besides those a run's end released from `hold`):
/// past it, new ones are dropped (`queue_full`).
const MAX_PENDING: usize = 4096;

/// After a failed export, no other is tried for this long, doubled on each failure up to
/// `BACKOFF_MAX`.
const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What the queue carries.
pub(super) enum Item {
    Span(Box<SpanData>),
    /// An exchange, built into its span here.
    Exchange(Box<Pending>),
    /// A run ended: its cases' held exchanges go under their cases.
    EndRun(Box<EndRun>),
    /// Answered once everything queued before it was exported (or dropped).
    Flush(oneshot::Sender<()>),
}

/// A run's end, for what the hold keeps.
pub(super) struct EndRun {
    /// Each case's trace id and its span.
    pub cases: Vec<(String, SpanContext)>,
    /// The run's span (none when it ended without a report).
    pub run: Option<SpanContext>,
    pub seed: u64,
    /// No other run is under way: what no case claimed goes out too, under `run`.
    pub last: bool,
}

type Export<'a> = Pin<
    Box<
        dyn Future<Output = (Result<OTelSdkResult, tokio::time::error::Elapsed>, usize)>
            + Send
            + 'a,
    >,
>;

/// The export task: runs until every sender is gone and what they sent is exported.
pub(super) async fn run<E: SpanExporter>(
    mut rx: mpsc::Receiver<Item>,
    exporter: E,
    shared: Arc<Shared>,
) {
    let mut task = Task::new(shared, Hold::default());
    let mut sending: Option<Export<'_>> = None;
    let mut open = true;
    // When the oldest span waiting to be sent has waited long enough.
    let mut due_at: Option<Instant> = None;
    loop {
        if task.batch.is_empty() {
            due_at = None;
        } else if due_at.is_none() {
            due_at = Some(Instant::now() + task.shared.settings.linger);
        }
        let due = !open
            || task.probe
            || !task.waiting.is_empty()
            || task.batch.len() >= MAX_BATCH
            || due_at.is_some_and(|t| Instant::now() >= t);
        if sending.is_none() && due && !task.batch.is_empty() {
            let spans = task.next_batch();
            due_at = None;
            task.probe = false;
            if !spans.is_empty() {
                let n = spans.len();
                let deadline = task.shared.settings.timeout + Duration::from_secs(1);
                let export = tokio::time::timeout(deadline, exporter.export(spans));
                sending = Some(Box::pin(async move { (export.await, n) }));
            }
        }
        if sending.is_none() && task.batch.is_empty() {
            task.answer_flushes();
            if !open {
                return;
            }
        }
        let lingering = sending.is_none() && due_at.is_some();
        let reopen = task.backoff.until.filter(|_| task.down());
        tokio::select! {
            (result, n) = async { sending.as_mut().expect("guarded").await }, if sending.is_some() => {
                sending = None;
                task.report(result, n);
            }
            item = rx.recv(), if open => match item {
                Some(item) => task.take(item),
                None => open = false,
            },
            () = tokio::time::sleep_until(due_at.unwrap_or_else(Instant::now)), if lingering => {}
            () = tokio::time::sleep_until(reopen.unwrap_or_else(Instant::now)), if reopen.is_some() => {
                task.reopen();
            }
        }
    }
}

/// The failures in a row and when exporting is tried again.
#[derive(Default)]
struct Backoff {
    until: Option<Instant>,
    wait: Duration,
}

impl Backoff {
    fn failed(&mut self) {
        self.wait = (self.wait * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
        self.until = Some(Instant::now() + self.wait);
    }

    fn succeeded(&mut self) {
        *self = Backoff::default();
    }

    fn active(&self) -> bool {
        self.until.is_some_and(|t| Instant::now() < t)
    }
}

/// What the task keeps between items.
pub(super) struct Task {
    shared: Arc<Shared>,
    hold: Hold,
    batch: Vec<SpanData>,
    waiting: Vec<oneshot::Sender<()>>,
    backoff: Backoff,
    /// The task just started or the back-off just ended: the next span is sent without
    /// lingering.
    probe: bool,
    warned_export: bool,
    warned_hold: bool,
}

impl Task {
    pub(super) fn new(shared: Arc<Shared>, hold: Hold) -> Task {
        Task {
            shared,
            hold,
            batch: Vec::with_capacity(MAX_BATCH),
            waiting: vec![],
            backoff: Backoff::default(),
            // The first span is a probe too: a collector that is down is known at once.
            probe: true,
            warned_export: false,
            warned_hold: false,
        }
    }

    pub(super) fn take(&mut self, item: Item) {
        match item {
            Item::Span(span) => self.push(*span),
            Item::Exchange(p) => self.exchange(&p),
            Item::EndRun(end) => self.end_run(*end),
            Item::Flush(done) => self.waiting.push(done),
        }
    }

    fn exchange(&mut self, p: &Pending) {
        let content = self.shared.settings.content;
        let trace = p.exchange.trace_id.as_deref().filter(|_| p.hold);
        let Some(trace) = trace else {
            if self.backoff.active() {
                self.shared.metrics.otlp_dropped("export_failed", 1);
            } else if self.batch.len() >= MAX_PENDING {
                self.shared.metrics.otlp_dropped("queue_full", 1);
            } else {
                self.batch.push(p.build(content));
            }
            return;
        };
        if !self.hold.put(trace, p.prepare(content)) {
            self.shared.metrics.otlp_dropped("hold_full", 1);
            if !std::mem::replace(&mut self.warned_hold, true) {
                let (n, bytes) = self.hold.size();
                tracing::warn!(
                    "OTLP export: {n} exchange spans ({} KiB) already wait for the runs under \
                     way to end; more are dropped (flakestorm_otlp_dropped_spans_total\
                     {{reason=\"hold_full\"}})",
                    bytes >> 10
                );
            }
        }
    }

    /// A span ready to go, unless the collector is failing or too many wait.
    fn push(&mut self, span: SpanData) {
        if self.backoff.active() {
            self.shared.metrics.otlp_dropped("export_failed", 1);
        } else if self.batch.len() >= MAX_PENDING {
            self.shared.metrics.otlp_dropped("queue_full", 1);
        } else {
            self.batch.push(span);
        }
    }

    fn end_run(&mut self, end: EndRun) {
        for (trace, case) in &end.cases {
            for p in self.hold.take(trace) {
                self.batch.push(p.placed(Some(case), end.seed));
            }
        }
        if end.last {
            for p in self.hold.drain() {
                self.batch.push(p.placed(end.run.as_ref(), end.seed));
            }
            self.warned_hold = false;
        }
    }

    /// The next export's spans (none while the collector is failing: they are dropped).
    fn next_batch(&mut self) -> Vec<SpanData> {
        if self.backoff.active() {
            let n = std::mem::take(&mut self.batch).len();
            self.shared.metrics.otlp_dropped("export_failed", n);
            return vec![];
        }
        let rest = self.batch.split_off(self.batch.len().min(MAX_BATCH));
        std::mem::replace(&mut self.batch, rest)
    }

    /// Whether the path drops exchanges (exports fail).
    fn down(&self) -> bool {
        self.shared.down.load(Ordering::Relaxed)
    }

    /// The back-off is over: the path hands exchanges over again and the first is a probe.
    fn reopen(&mut self) {
        self.shared.down.store(false, Ordering::Relaxed);
        self.probe = true;
    }

    fn answer_flushes(&mut self) {
        for done in self.waiting.drain(..) {
            let _ = done.send(());
        }
    }

    /// Counts an export's `n` spans as exported or dropped; warns of the first failure.
    fn report(&mut self, result: Result<OTelSdkResult, tokio::time::error::Elapsed>, n: usize) {
        let s = &self.shared;
        let why = match result {
            Ok(Ok(())) => {
                s.metrics.otlp_exported(n);
                self.backoff.succeeded();
                // The outage the warning was about is over: say so, and warn of the next.
                if std::mem::replace(&mut self.warned_export, false) {
                    tracing::info!(
                        "OTLP export to {} works again; spans were dropped while it failed \
                         (flakestorm_otlp_dropped_spans_total{{reason=\"export_failed\"}})",
                        s.settings.endpoint
                    );
                }
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} ms", s.settings.timeout.as_millis()),
        };
        s.metrics.otlp_dropped("export_failed", n);
        self.backoff.failed();
        s.down.store(true, Ordering::Relaxed);
        if !std::mem::replace(&mut self.warned_export, true) {
            tracing::warn!(
                "OTLP export to {} ({}) failed: {why}; spans are dropped while it fails \
                 (flakestorm_otlp_dropped_spans_total), the proxy and runs are not affected",
                s.settings.endpoint,
                s.settings.protocol.as_str()
            );
        } else {
            tracing::debug!("OTLP export failed again: {why}");
        }
    }
}

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
