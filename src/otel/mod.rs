//! OTLP span export (docs/observability.md): a span per run, per case and per exchange,
//! faults as span events. Owns the export queue, its task and what ties exchanges to the
//! runs under way; touches no socket of the proxy's and never makes a request wait: the
//! journal hands each recorded exchange over with `try_send` (a full queue drops it and
//! counts it in `flakestorm_otlp_dropped_spans_total`). An exchange of a case under way
//! (a case watches its trace id) is held by the export task (`hold`, bounded) until its
//! run ends, when the run's spans are built with the case verdicts and it becomes a child
//! of its case; any other is sent at once. `spec` is the `telemetry:` vocabulary, below
//! `config`; `settings` resolves it with the standard `OTEL_EXPORTER_OTLP_*` variables.

pub mod spec;

mod elsewhere;
mod exchange_span;
mod export;
mod hold;
mod http_client;
mod ids;
mod run_span;
mod said;
mod settings;
mod task;
#[cfg(test)]
mod testing;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::SpanContext;
use tokio::sync::mpsc;

pub use elsewhere::run_asks_elsewhere;
pub use run_span::{CaseSpan, RunScope, RunSpan};
pub use settings::{Settings, resolve};

use crate::exchange::Exchange;
use crate::tape::Bodies;
use crate::telemetry::Metrics;
use task::Item;

/// Items the queue holds before new ones are dropped (and counted).
const QUEUE: usize = 4096;

/// Cheap-clone handle to the exporter.
#[derive(Clone)]
pub struct Otel {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::Sender<Item>,
    shared: Arc<Shared>,
    runs: Mutex<Runs>,
    /// The seed of faults outside runs (the daemon engine's).
    seed: u64,
}

/// What the export task shares with the handle.
pub(crate) struct Shared {
    settings: Settings,
    metrics: Metrics,
    /// Set by the task while exports fail, until its back-off ends: the proxy's path then
    /// neither captures bodies for spans nor queues exchanges, so a collector that is down
    /// costs an exchange one load of this flag (docs/benchmarks.md, OTLP span export).
    down: AtomicBool,
}

/// The runs under way: each one's id, span and seed.
#[derive(Default)]
struct Runs {
    active: Vec<(u64, SpanContext, u64)>,
    next: u64,
}

impl std::fmt::Debug for Otel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otel")
            .field("endpoint", &self.inner.shared.settings.endpoint)
            .finish()
    }
}

/// The instrumentation scope of every span: flakestorm itself.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("flakestorm")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Otel {
    /// Starts exporting as `spec` and the environment say (`None`: export is off), on the
    /// current tokio runtime. `seed` is the one faults outside runs are drawn with.
    pub fn start(
        spec: &spec::TelemetrySpec,
        metrics: &Metrics,
        seed: u64,
    ) -> Result<Option<Otel>, String> {
        let env = |k: &str| std::env::var(k).ok();
        let Some(settings) = resolve(spec.otlp.as_ref(), &env)? else {
            return Ok(None);
        };
        let exporter = export::exporter(&settings).map_err(|e| format!("telemetry.otlp: {e}"))?;
        tracing::info!(
            "exporting spans over OTLP ({}) to {}",
            settings.protocol.as_str(),
            settings.endpoint
        );
        let (tx, rx) = mpsc::channel(QUEUE);
        let otel = Otel::with(tx, settings, metrics, seed);
        tokio::spawn(task::run(rx, exporter, otel.inner.shared.clone()));
        Ok(Some(otel))
    }

    /// The handle that queues into `tx`.
    fn with(tx: mpsc::Sender<Item>, settings: Settings, metrics: &Metrics, seed: u64) -> Otel {
        let shared = Arc::new(Shared {
            settings,
            metrics: metrics.clone(),
            down: AtomicBool::new(false),
        });
        Otel {
            inner: Arc::new(Inner {
                tx,
                shared,
                runs: Mutex::new(Runs::default()),
                seed,
            }),
        }
    }

    /// Whether spans carry prompt and answer bodies (`telemetry.otlp.content`).
    pub fn content(&self) -> bool {
        self.inner.shared.settings.content
    }

    /// Whether exports are failing now (the task's back-off): exchanges are dropped on the
    /// path, unbuilt and uncaptured, and counted.
    pub fn down(&self) -> bool {
        self.inner.shared.down.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Runs> {
        self.inner.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A recorded (redacted) exchange; `of_case`: a case under way watches its trace id,
    /// so it waits for its case's span (when a run is under way). Never waits.
    pub fn exchange(&self, exchange: Arc<Exchange>, bodies: Option<Arc<Bodies>>, of_case: bool) {
        if self.down() {
            self.inner.shared.metrics.otlp_dropped("export_failed", 1);
            return;
        }
        let runs = self.lock();
        let (parent, seed) = match runs.active.as_slice() {
            [(_, only, seed)] => (Some(only.clone()), *seed),
            // Several runs, or none: only a case's trace id tells whose it is.
            [..] => (None, self.inner.seed),
        };
        let hold = of_case && !runs.active.is_empty();
        drop(runs);
        // Bodies are read for the span's attributes; kept past that only with `content`.
        let pending = exchange_span::Pending {
            exchange,
            bodies,
            parent,
            seed,
            hold,
        };
        self.queue(Item::Exchange(Box::new(pending)));
    }

    fn queue(&self, item: Item) {
        if self.inner.tx.try_send(item).is_err() {
            self.inner.shared.metrics.otlp_dropped("queue_full", 1);
        }
    }

    /// Waits until what is queued now was exported or dropped, `deadline` at most (a CLI
    /// run's spans are sent before the process exits).
    pub async fn flush(&self, deadline: Duration) {
        let (done, wait) = tokio::sync::oneshot::channel();
        let sent = tokio::time::timeout(deadline, self.inner.tx.send(Item::Flush(done))).await;
        if matches!(sent, Ok(Ok(()))) {
            let _ = tokio::time::timeout(deadline, wait).await;
        }
    }
}
