//! The spans of a run and of its cases, built when the run ends (the verdicts and outcome
//! classes are final only then): the run's span is a root, each case's its child, and the
//! exchanges the export task held for a case (by its trace id) become the case's children.
//! What no case claimed goes under the run's span once no run is under way.

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use super::task::{EndRun, Item};
use super::{Otel, ids};

/// How long a run's end may wait for room in the queue; past it spans are dropped and
/// counted, so a collector that is down never holds a run's end.
const END_WAIT: Duration = Duration::from_secs(2);

/// A run under way: its span's context; its cases' exchanges are held until `end`.
pub struct RunScope {
    otel: Otel,
    id: u64,
    context: SpanContext,
    /// The run's seed (its faults' events say it).
    seed: u64,
    ended: bool,
}

/// A run as its span says it.
#[derive(Debug, Clone, Default)]
pub struct RunSpan {
    /// `contract`, `chaos`, `mutation`, `replay`, `ci`.
    pub kind: String,
    /// The contract's name, the chaos profile…, if any.
    pub name: Option<String>,
    pub started_ms: u64,
    pub ended_ms: u64,
    /// `pass`, `fail`, `not_tested`, `error` (the report's verdict).
    pub verdict: String,
    pub score: Option<f64>,
    pub seed: u64,
    pub cases: Vec<CaseSpan>,
}

/// A case as its span says it.
#[derive(Debug, Clone, Default)]
pub struct CaseSpan {
    /// Its trace id: how its exchanges are told to be its own.
    pub trace: Option<String>,
    pub scenario: String,
    /// The phase it ran in (`ci` runs several).
    pub phase: String,
    pub trial: Option<u32>,
    /// `passed`, `failed`, `not_judged`, `not_tested`.
    pub verdict: String,
    /// What the agent did with the fault (`recovered`, `fabricated`, …), when decided.
    pub outcome: Option<String>,
    pub not_judged: Option<String>,
    pub started_ms: u64,
    pub ended_ms: u64,
}

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

fn span(
    context: SpanContext,
    parent: SpanId,
    name: String,
    (start, end): (u64, u64),
    attributes: Vec<KeyValue>,
    failed: bool,
) -> SpanData {
    SpanData {
        span_context: context,
        parent_span_id: parent,
        parent_span_is_remote: false,
        span_kind: SpanKind::Internal,
        name: name.into(),
        start_time: at(start),
        end_time: at(end.max(start)),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match failed {
            true => Status::error("failed"),
            false => Status::Unset,
        },
        instrumentation_scope: super::scope(),
    }
}

impl Otel {
    /// A run with `seed` starts: exchanges of its cases are held from now until it ends.
    pub fn begin_run(&self, seed: u64) -> RunScope {
        let context = ids::context(ids::trace_id(), ids::span_id());
        let mut runs = self.lock();
        runs.next += 1;
        let id = runs.next;
        runs.active.push((id, context.clone(), seed));
        RunScope {
            otel: self.clone(),
            id,
            context,
            seed,
            ended: false,
        }
    }
}

impl RunScope {
    /// The run ended as `run` says: its spans and its cases' are queued, and its cases'
    /// held exchanges go under them.
    pub async fn end(mut self, run: RunSpan) {
        self.ended = true;
        let trace = self.context.trace_id();
        let mut items = vec![];
        let mut cases = vec![];
        for case in &run.cases {
            let ctx = ids::context(trace, ids::span_id());
            if let Some(t) = &case.trace {
                cases.push((t.clone(), ctx.clone()));
            }
            let failed = case.verdict == "failed";
            let name = format!("case {}", case.scenario);
            let times = (case.started_ms, case.ended_ms);
            let attrs = case_attributes(case, run.seed);
            let data = span(ctx, self.context.span_id(), name, times, attrs, failed);
            items.push(Item::Span(Box::new(data)));
        }
        items.push(Item::Span(Box::new(run_span(&self.context, &run))));
        let end = EndRun {
            cases,
            run: Some(self.context.clone()),
            seed: run.seed,
            last: self.leave(),
        };
        items.push(Item::EndRun(Box::new(end)));
        self.otel.queue_all(items).await;
    }

    /// Leaves the runs under way: whether it was the last.
    fn leave(&self) -> bool {
        let mut runs = self.otel.lock();
        runs.active.retain(|(id, _, _)| *id != self.id);
        runs.active.is_empty()
    }
}

/// The run's own span: a root.
fn run_span(context: &SpanContext, run: &RunSpan) -> SpanData {
    let name = match &run.name {
        Some(n) => format!("{} {n}", run.kind),
        None => format!("{} run", run.kind),
    };
    let failed = matches!(run.verdict.as_str(), "fail" | "error");
    let times = (run.started_ms, run.ended_ms);
    let attrs = run_attributes(run);
    span(context.clone(), SpanId::INVALID, name, times, attrs, failed)
}

impl Drop for RunScope {
    /// A run that ended without a report (cancelled, failed to start): its held exchanges
    /// go out without a case (when it was the last run under way).
    fn drop(&mut self) {
        if !self.ended {
            let end = EndRun {
                cases: vec![],
                run: None,
                seed: self.seed,
                last: self.leave(),
            };
            self.otel.queue(Item::EndRun(Box::new(end)));
        }
    }
}

impl Otel {
    /// Queues `items`, waiting `END_WAIT` at most for room; what finds none is dropped.
    async fn queue_all(&self, items: Vec<Item>) {
        let deadline = tokio::time::Instant::now() + END_WAIT;
        for item in items {
            let sent = tokio::time::timeout_at(deadline, self.inner.tx.send(item)).await;
            if !matches!(sent, Ok(Ok(()))) {
                self.inner.shared.metrics.otlp_dropped("queue_full", 1);
            }
        }
    }
}

fn run_attributes(run: &RunSpan) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("flakestorm.run.kind", run.kind.clone()),
        KeyValue::new("flakestorm.run.verdict", run.verdict.clone()),
        KeyValue::new("flakestorm.run.seed", run.seed.to_string()),
        KeyValue::new("flakestorm.run.cases", run.cases.len() as i64),
    ];
    if let Some(n) = &run.name {
        a.push(KeyValue::new("flakestorm.run.name", n.clone()));
    }
    if let Some(s) = run.score {
        a.push(KeyValue::new("flakestorm.run.score", s));
    }
    a
}

fn case_attributes(case: &CaseSpan, seed: u64) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("flakestorm.case.scenario", case.scenario.clone()),
        KeyValue::new("flakestorm.case.phase", case.phase.clone()),
        KeyValue::new("flakestorm.case.verdict", case.verdict.clone()),
        KeyValue::new("flakestorm.case.seed", seed.to_string()),
    ];
    if let Some(t) = case.trial {
        a.push(KeyValue::new("flakestorm.case.trial", i64::from(t)));
    }
    if let Some(o) = &case.outcome {
        a.push(KeyValue::new("flakestorm.case.outcome", o.clone()));
    }
    if let Some(why) = &case.not_judged {
        a.push(KeyValue::new("flakestorm.case.not_judged", why.clone()));
    }
    if let Some(t) = &case.trace {
        a.push(KeyValue::new("flakestorm.case.trace_id", t.clone()));
    }
    a
}

#[cfg(test)]
#[path = "run_span_tests.rs"]
mod tests;
