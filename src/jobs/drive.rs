//! Driving one submitted run from its turn to its end: ready the agent through the
//! daemon's proxy, run, write the report under `data_dir/runs/<id>/`, and record the end
//! (status, scores, events). Cancelling at any point drops the run's future, so its
//! in-flight cases end and the agent it started is stopped. Every run ends with a `done`
//! event, so every follower's stream ends: one submitted while the daemon stops ends
//! `interrupted` before it starts, and one whose driving panicked ends `error`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Inner, Job, RunEvent, Status, Submission};
use crate::chaos::Classifier;
use crate::config::Attribution;
use crate::run::{CaseResult, Judged, Prepared, Progress};
use crate::session::{Ended, Options, Session};

/// Drives `job` to its end, on a task of its own.
pub(super) async fn drive(inner: Arc<Inner>, job: Arc<Job>, sub: Submission, prepared: Prepared) {
    let driving = drive_run(inner, job.clone(), sub, prepared);
    ends_anyway(&job, driving).await;
}

/// Runs `driving` on a task of its own; when that ends without `done` (it panicked), the
/// job ends `error`, saying so, rather than staying `running` with its followers waiting.
async fn ends_anyway(job: &Job, driving: impl Future<Output = ()> + Send + 'static) {
    let failed = tokio::spawn(driving).await.err();
    if let Some(e) = failed.filter(|_| !job.events.ended()) {
        let why = format!("flakestorm failed while driving the run: {e}");
        end(job, Status::Error, Some(why)).await;
    }
}

async fn drive_run(inner: Arc<Inner>, job: Arc<Job>, sub: Submission, prepared: Prepared) {
    // Submitted while the daemon stops, after it interrupted the runs it had: it would
    // hold the daemon's drain (and its followers) for its whole length.
    if inner.stopping.load(Ordering::Relaxed) {
        return end(&job, inner.cancelled(), None).await;
    }
    let config = &sub.loaded.config;
    let exclusive = config.advanced.attribution == Attribution::Exclusive;
    // Its own `tools:`/`llm:` classify all the proxy's traffic while it runs.
    let declares = config.tools != inner.tools || config.llm != inner.llm;
    let permits = if exclusive || declares {
        inner.max_parallel
    } else {
        1
    };
    let turn = tokio::select! {
        t = inner.turns.clone().acquire_many_owned(permits) => t,
        () = job.cancel.cancelled() => return end(&job, inner.cancelled(), None).await,
    };
    let Ok(_turn) = turn else {
        return end(&job, Status::Error, Some("the daemon is stopping".into())).await;
    };
    let kind = {
        let mut s = job.lock();
        s.status = Status::Running;
        s.kind.as_str()
    };
    job.recorder.set_status(Status::Running);
    job.metrics.run_started(kind);
    tracing::info!(run = %job.id, kind, "run started");
    job.events.push(RunEvent::Started { id: job.id.clone() });
    let cases = prepared.cases(&sub.loaded.config, sub.trial);
    match set_up(&inner, &job, &sub, declares, cases).await {
        Ok(setup) => run(&inner, &job, &prepared, setup, exclusive).await,
        Err((status, why)) => end(&job, status, why).await,
    }
}

/// What a run needs once it has its turn.
struct SetUp {
    dir: std::path::PathBuf,
    session: Session,
    /// The run's own `tools:`/`llm:`, when they differ from the daemon's.
    declared: Option<Classifier>,
}

/// The run's folder, its declarations and its session (embeddings endpoint, agent); how
/// it ends when one cannot be had (or it is cancelled meanwhile).
async fn set_up(
    inner: &Inner,
    job: &Arc<Job>,
    sub: &Submission,
    declares: bool,
    cases: Option<usize>,
) -> Result<SetUp, (Status, Option<String>)> {
    let config = &sub.loaded.config;
    let error = |why: String| (Status::Error, Some(why));
    let id = job.recorder.id.clone();
    let dir = inner
        .proxy
        .store
        .blocking(move |store| store.run_dir(&id))
        .await
        .map_err(|e| error(e.to_string()))?;
    let declared = match declares {
        true => {
            Some(Classifier::new(&config.tools, &config.llm).map_err(|e| error(e.to_string()))?)
        }
        false => None,
    };
    // Recorded at submission (`Jobs::submit`): the run uses exactly that one.
    let seed = job.lock().seed.unwrap_or(inner.base_seed);
    let opts = Options {
        agent_log: dir.join("agent.log"),
        min_score: sub.min_score.unwrap_or(config.scoring.min_score),
        seed: Some(seed),
        trial: sub.trial,
        shard: None,
        progress: Some(hooks(job)),
        before_agent: None,
        cases,
    };
    let started = Session::start(sub.loaded.clone(), inner.proxy.clone(), opts);
    let started = tokio::select! {
        s = started => Some(s),
        () = job.cancel.cancelled() => None,
    };
    let Some(started) = started else {
        // Dropping the start stopped the agent it started, off this thread: the run (and
        // its turn) ends once that agent is gone, so the next run does not meet it.
        crate::agent::stopped().await;
        return Err((inner.cancelled(), None));
    };
    let mut session = started.map_err(|e| error(e.0))?;
    if let Some(note) = session.telemetry_note() {
        let message = note.to_string();
        job.events.push(RunEvent::Warning { message });
    }
    // The store hears of a case before followers do: whoever saw a `case` event and then
    // flushes the store (as `GET /v1/runs` does) finds the case stored.
    session.record(job.recorder.clone());
    Ok(SetUp {
        dir,
        session,
        declared,
    })
}

/// Runs with its agent and declarations in place, then records how it ended.
async fn run(inner: &Inner, job: &Arc<Job>, prepared: &Prepared, setup: SetUp, exclusive: bool) {
    let SetUp {
        dir,
        mut session,
        declared,
    } = setup;
    let _declared = declared.map(|c| inner.proxy.engine.declare(Arc::new(c)));
    // The global rules draw from the run's seed while it has the engine to itself.
    let previous = exclusive.then(|| inner.proxy.engine.set_seed(session.ctx.scoring.seed));
    let result = tokio::select! {
        r = session.execute(prepared) => Some(r),
        () = job.cancel.cancelled() => None,
    };
    if let Some(p) = previous {
        inner.proxy.engine.set_seed(p);
    }
    match result {
        None => {
            session.stop_agent().await;
            end(job, inner.cancelled(), None).await;
        }
        Some(Err(e)) => {
            session.stop_agent().await;
            end(job, Status::Error, Some(e.to_string())).await;
        }
        Some(Ok(report)) => {
            let ended = session.finish(report, &dir.join("report.json")).await;
            finished(job, ended).await;
        }
    }
    session.stop().await;
}

/// The progress hooks: counts and events.
fn hooks(job: &Arc<Job>) -> Progress {
    let (j1, j2, j3) = (job.clone(), job.clone(), job.clone());
    Progress {
        phase: Arc::new(|_| {}),
        planned: Arc::new(move |n| j1.lock().total += n as u64),
        started: Arc::new(move |scenario: &str, input: &str| {
            j2.events.push(RunEvent::case_started(scenario, input));
        }),
        case: Arc::new(move |c: &CaseResult, judged: &Judged| {
            let (done, total) = {
                let mut s = j3.lock();
                s.done += 1;
                (s.done, s.total)
            };
            j3.events.push(RunEvent::case(c, judged, (done, total)));
        }),
    }
}

/// A finished run (its report written, JSON and the config's other formats and its
/// tapes beside it, and recorded by its session): phases and cells told, its status from
/// the verdict. A format that could not be rendered is a warning in the log; only a JSON
/// report that could not be written makes the run an error.
async fn finished(job: &Job, ended: Ended) {
    let Ended {
        report,
        written,
        untaped,
        stored,
        ..
    } = ended;
    for why in written.failed.iter().chain(&untaped) {
        tracing::warn!(run = %job.id, "{why}");
    }
    if written.json().is_none() {
        let mut why = written.failed.join("; ");
        if let Err(e) = stored {
            why.push_str(&format!("; the run store could not record it: {e}"));
        }
        return announce(job, Status::Error, Some(why), &[]);
    }
    if let Err(e) = stored {
        let why = format!("the run store could not record the run: {e}");
        return end(job, Status::Error, Some(why)).await;
    }
    for (phase, score) in report.phase_scores() {
        job.events.push(RunEvent::Phase { phase, score });
    }
    for c in report.cells() {
        job.events.push(RunEvent::Cell(Box::new(c.clone())));
    }
    let (status, reason) = crate::store::ended(report.judgement());
    {
        let mut s = job.lock();
        s.scores = report.scores().into_iter().collect();
        s.trials = report.info().and_then(|i| i.trials.clone());
        for (format, p) in &written.files {
            s.artifacts
                .insert(format.as_str().into(), p.display().to_string());
        }
    }
    let verdicts: Vec<&'static str> = crate::store::final_verdicts(&report)
        .into_iter()
        .map(|v| v.as_str())
        .collect();
    announce(job, status, reason, &verdicts);
}

/// A run that ended without a verdict: recorded, then told.
async fn end(job: &Job, status: Status, reason: Option<String>) {
    let reason = match job.recorder.fail(status, reason.clone()).await {
        Ok(()) => reason,
        Err(e) => Some(format!(
            "{}; the run store could not record it: {e}",
            reason.unwrap_or_else(|| status.to_string())
        )),
    };
    announce(job, status, reason, &[]);
}

/// Records the end in the live record and the metrics, and tells the followers.
fn announce(job: &Job, status: Status, reason: Option<String>, verdicts: &[&'static str]) {
    let (record, was_running) = {
        let mut s = job.lock();
        let was_running = s.status == Status::Running;
        s.status = status;
        s.reason = reason;
        s.finished_ms = Some(crate::store::now_ms());
        (s.clone(), was_running)
    };
    let seconds =
        (record.finished_ms.unwrap_or(record.started_ms) - record.started_ms) as f64 / 1000.0;
    let scores: Vec<(String, f64)> = record.scores.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let run = crate::telemetry::RunLabels {
        kind: record.kind.as_str(),
        status: status.as_str(),
    };
    if was_running {
        job.metrics.run_stopped(run.kind);
    }
    tracing::info!(run = %job.id, kind = run.kind, status = run.status, "run ended");
    job.metrics.run_ended(run, seconds, &scores, verdicts);
    job.events.push(RunEvent::Done(Box::new(record)));
}

#[cfg(test)]
#[path = "drive_tests.rs"]
mod tests;
