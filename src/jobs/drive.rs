//! Driving one submitted run from its turn to its end: ready the agent through the
//! daemon's proxy, run, write the report under `data_dir/runs/<id>/`, and record the end
//! (status, scores, events). Cancelling at any point drops the run's future, so its
//! in-flight cases end and the agent it started is stopped.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{Inner, Job, Status, Submission, now};
use crate::agent::{AgentProcess, Launched, ProxyAt, launch};
use crate::config::Attribution;
use crate::run::{
    CaseResult, Declared, Embedder, Prepared, Progress, Report, RunContext, SoFar, execute,
};

pub(super) async fn drive(inner: Arc<Inner>, job: Arc<Job>, sub: Submission, prepared: Prepared) {
    let config = &sub.loaded.config;
    let exclusive = config.advanced.attribution == Attribution::Exclusive;
    let permits = if exclusive { inner.max_parallel } else { 1 };
    let turn = tokio::select! {
        t = inner.turns.clone().acquire_many_owned(permits) => t,
        () = job.cancel.cancelled() => return end(&job, inner.cancelled(), vec![]),
    };
    let Ok(_turn) = turn else {
        return end(&job, Status::Error, vec!["the daemon is stopping".into()]);
    };
    {
        let mut s = job.lock();
        s.status = Status::Running;
        s.started_at = Some(now());
    }
    job.events.push("started", json!({"id": job.id}));
    let dir = inner.data_dir.join("runs").join(&job.id);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        let why = format!("cannot create {}: {e}", dir.display());
        return end(&job, Status::Error, vec![why]);
    }
    let readied = tokio::select! {
        r = ready(&inner, &sub, &dir) => r,
        () = job.cancel.cancelled() => return end(&job, inner.cancelled(), vec![]),
    };
    let (launched, embedder) = match readied {
        Ok(r) => r,
        Err(why) => return end(&job, Status::Error, vec![why]),
    };
    let Launched { agent, process } = launched;
    let seed = job.lock().seed.unwrap_or_else(|| inner.engine.seed());
    job.lock().seed = Some(seed);
    // The global rules draw from the run's seed while it has the engine to itself.
    let previous = exclusive.then(|| inner.engine.set_seed(seed));
    let ctx = RunContext {
        engine: inner.engine.clone(),
        seed,
        journal: inner.journal.clone(),
        agent,
        concurrency: config.advanced.concurrency as usize,
        attribution: config.advanced.attribution,
        config_digest: sub.loaded.digest.clone(),
        progress: Some(hooks(&job)),
        declared: Declared {
            tools: config.tools.clone(),
            llm: config.llm.clone(),
        },
        min_score: sub.min_score.unwrap_or(config.scoring.min_score),
        embedder,
    };
    let result = tokio::select! {
        r = execute(&ctx, config, &prepared) => Some(r),
        () = job.cancel.cancelled() => None,
    };
    drop(ctx);
    if let Some(p) = previous {
        inner.engine.set_seed(p);
    }
    let crashed = stop(process).await;
    match result {
        None => end(&job, inner.cancelled(), vec![]),
        Some(Err(e)) => end(&job, Status::Error, vec![e.to_string()]),
        Some(Ok(mut report)) => {
            if let Some(w) = report.warnings_mut() {
                w.extend(crashed);
            }
            finished(&job, &report, &dir);
        }
    }
}

/// The agent, started and answering, and the embeddings endpoint, tried.
async fn ready(
    inner: &Inner,
    sub: &Submission,
    dir: &std::path::Path,
) -> Result<(Launched, Option<Embedder>), String> {
    let config = &sub.loaded.config;
    let embedder = Embedder::for_config(config).await?;
    let proxy = ProxyAt {
        addr: inner.proxy_addr,
        ca_cert: &inner.ca_cert,
    };
    let launched = launch(config, proxy, &dir.join("agent.log")).await?;
    Ok((launched, embedder))
}

/// Stops the agent the run started; a warning when it had exited during the run.
async fn stop(process: Option<AgentProcess>) -> Option<String> {
    let mut p = process?;
    let crashed = p.exit_status().map(|status| {
        format!(
            "the agent (agent.command) exited during the run ({status}); cases after that \
             could not reach it{}",
            p.tail()
        )
    });
    p.stop(Duration::from_secs(5)).await;
    crashed
}

/// The progress hooks: counts and events.
fn hooks(job: &Arc<Job>) -> Progress {
    let (j1, j2, j3) = (job.clone(), job.clone(), job.clone());
    Progress {
        planned: Arc::new(move |n| j1.lock().progress.total += n),
        started: Arc::new(move |scenario: &str, input: &str| {
            j2.events.push(
                "case_started",
                json!({"scenario": scenario, "input": cut(input)}),
            );
        }),
        case: Arc::new(move |c: &CaseResult, so_far: SoFar| {
            let (done, total) = {
                let mut s = j3.lock();
                s.progress.done += 1;
                (s.progress.done, s.progress.total)
            };
            j3.events.push("case", case_event(c, so_far, done, total));
        }),
    }
}

fn case_event(c: &CaseResult, so_far: SoFar, done: usize, total: usize) -> serde_json::Value {
    let so_far = match so_far {
        SoFar::Passed => "passed",
        SoFar::Failed => "failed",
        SoFar::NotJudged => "not_judged",
        SoFar::Unscored => "unscored",
    };
    json!({
        "done": done,
        "total": total,
        "scenario": c.scenario,
        "input": cut(&c.prompt),
        "answered": c.answer.is_some(),
        "error": c.error,
        "not_judged": c.not_judged,
        "latency_ms": c.latency_ms,
        "faults": c.faults.len(),
        "so_far": so_far,
    })
}

/// A finished run: its report written, phases and cells told, its status from the verdict.
fn finished(job: &Job, report: &Report, dir: &std::path::Path) {
    let path = dir.join("report.json");
    let written = serde_json::to_vec_pretty(report)
        .map_err(|e| e.to_string())
        .and_then(|json| std::fs::write(&path, json).map_err(|e| e.to_string()));
    if let Err(e) = written {
        let why = format!("could not write the report {}: {e}", path.display());
        return end(job, Status::Error, vec![why]);
    }
    for (phase, score) in report.phase_scores() {
        job.events
            .push("phase", json!({"phase": phase, "score": score}));
    }
    if let Some(cells) = cells(report) {
        for c in cells {
            job.events.push("cell", json!(c));
        }
    }
    let verdict = report.verdict();
    {
        let mut s = job.lock();
        s.scores = report.phase_scores().into_iter().collect();
        s.verdict = Some(verdict);
        s.report = Some(path);
    }
    end(job, Status::of(verdict), reasons(report));
}

fn cells(report: &Report) -> Option<&[crate::run::CellResult]> {
    match report {
        Report::Contract(r) => Some(&r.cells),
        Report::Ci(r) => r.contract.as_ref().map(|c| c.cells.as_slice()),
        Report::Chaos(_) | Report::Mutation(_) => None,
    }
}

fn reasons(report: &Report) -> Vec<String> {
    match report {
        Report::Contract(r) => r.judgement.reasons.clone(),
        Report::Chaos(r) => r.judgement.reasons.clone(),
        Report::Mutation(r) => r.judgement.reasons.clone(),
        Report::Ci(r) => r.judgement.reasons.clone(),
    }
}

/// Records the end of a run and tells its followers.
fn end(job: &Job, status: Status, reasons: Vec<String>) {
    let summary = {
        let mut s = job.lock();
        s.status = status;
        s.reasons = reasons;
        s.finished_at = Some(now());
        s.clone()
    };
    job.events.push("done", json!(summary));
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
