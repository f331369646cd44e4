//! The daemon's runs, submitted through `/v1/runs`: each waits its turn (one at a time
//! under `exclusive` attribution, since a scenario's rules are the proxy's global rules;
//! up to `control.max_parallel_runs` under `header`), readies its agent through the
//! daemon's own proxy, runs with `run::execute`, and keeps its status, progress, events
//! and report. Cancelling ends the run's in-flight cases and stops the agent it started.
//! Owns no sockets: it reaches the proxy through the `Engine` and the `Journal` as runs
//! started from the CLI do.

mod drive;
mod events;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use events::{Event, EventLog};

use crate::chaos::Engine;
use crate::config::Loaded;
use crate::journal::Journal;
use crate::run::{RunKind, RunRequest, RunVerdict, prepare};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Queued,
    Running,
    Passed,
    Failed,
    /// The run could not judge the agent (design: never a pass).
    NotTested,
    Cancelled,
    /// The daemon stopped while it ran.
    Interrupted,
    /// flakestorm or the environment failed (the agent could not be started, …).
    Error,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Queued,
        Status::Running,
        Status::Passed,
        Status::Failed,
        Status::NotTested,
        Status::Cancelled,
        Status::Interrupted,
        Status::Error,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::NotTested => "not_tested",
            Status::Cancelled => "cancelled",
            Status::Interrupted => "interrupted",
            Status::Error => "error",
        }
    }

    pub fn parse(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn finished(self) -> bool {
        match self {
            Status::Queued | Status::Running => false,
            Status::Passed
            | Status::Failed
            | Status::NotTested
            | Status::Cancelled
            | Status::Interrupted
            | Status::Error => true,
        }
    }

    fn of(verdict: RunVerdict) -> Status {
        match verdict {
            RunVerdict::Pass => Status::Passed,
            RunVerdict::Fail => Status::Failed,
            RunVerdict::NotTested => Status::NotTested,
            RunVerdict::Error => Status::Error,
        }
    }
}

/// A run to start: its config and what to run, with the request's overrides.
pub struct Submission {
    pub loaded: Loaded,
    pub request: RunRequest,
    /// Overrides `advanced.seed`.
    pub seed: Option<u64>,
    /// Overrides `scoring.min_score`.
    pub min_score: Option<f64>,
}

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub id: String,
    pub kind: RunKind,
    pub status: Status,
    pub progress: Progress,
    /// Score per phase that finished, 0–100.
    pub scores: BTreeMap<&'static str, f64>,
    pub verdict: Option<RunVerdict>,
    /// Why the verdict is what it is, or why the run ended in error.
    pub reasons: Vec<String>,
    pub seed: Option<u64>,
    pub config_digest: Option<String>,
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The JSON report, once written.
    pub report: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// One submitted run.
pub struct Job {
    pub id: String,
    state: Mutex<Summary>,
    pub events: EventLog,
    cancel: CancellationToken,
}

impl Job {
    pub fn summary(&self) -> Summary {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Summary> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why a run cannot be cancelled.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelError {
    NotFound,
    Finished(Status),
}

/// What the daemon's runs share: the proxy they go through and where they write.
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    journal: Journal,
    proxy_addr: SocketAddr,
    ca_cert: PathBuf,
    /// Reports and agent logs go under `data_dir/runs/<id>/`.
    data_dir: PathBuf,
    /// In submission order.
    runs: Mutex<Vec<Arc<Job>>>,
    /// `max_parallel` permits; an exclusive run takes them all (fair, so in order).
    turns: Arc<Semaphore>,
    max_parallel: u32,
    next: AtomicU64,
    /// The daemon is stopping: runs cancelled now end `interrupted`.
    stopping: std::sync::atomic::AtomicBool,
}

/// Where the daemon's proxy is and where runs write.
pub struct Setup {
    pub engine: Engine,
    pub journal: Journal,
    pub proxy_addr: SocketAddr,
    pub ca_cert: PathBuf,
    pub data_dir: PathBuf,
    pub max_parallel: u32,
}

impl Inner {
    /// How a cancelled run ends: `cancelled`, or `interrupted` when the daemon stops.
    fn cancelled(&self) -> Status {
        match self.stopping.load(Ordering::Relaxed) {
            true => Status::Interrupted,
            false => Status::Cancelled,
        }
    }
}

impl Jobs {
    pub fn new(s: Setup) -> Jobs {
        let max_parallel = s.max_parallel.max(1);
        Jobs {
            inner: Arc::new(Inner {
                engine: s.engine,
                journal: s.journal,
                proxy_addr: s.proxy_addr,
                ca_cert: s.ca_cert,
                data_dir: s.data_dir,
                runs: Mutex::default(),
                turns: Arc::new(Semaphore::new(max_parallel as usize)),
                max_parallel,
                next: AtomicU64::new(1),
                stopping: Default::default(),
            }),
        }
    }

    /// Runs for unit tests: a proxy address nothing listens on, reports under `data_dir`.
    #[cfg(test)]
    pub(crate) fn for_tests(data_dir: PathBuf) -> Jobs {
        use crate::journal::Redactor;
        Jobs::new(Setup {
            engine: Engine::new(1),
            journal: Journal::new(16, Redactor::new(&[], &[])),
            proxy_addr: SocketAddr::from(([127, 0, 0, 1], 9)),
            ca_cert: data_dir.join("ca.pem"),
            data_dir,
            max_parallel: 2,
        })
    }

    /// Queues `sub` and starts driving it; the problem in words when its config cannot
    /// make the run it asks for.
    pub fn submit(&self, sub: Submission) -> Result<Arc<Job>, String> {
        let prepared = prepare(&sub.loaded.config, &sub.request)?;
        if sub.loaded.config.agent.is_none() {
            return Err("runs need an `agent:` section (endpoint of the agent under test)".into());
        }
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job {
            id: run_id(n),
            state: Mutex::new(Summary {
                id: String::new(),
                kind: sub.request.kind,
                status: Status::Queued,
                progress: Progress::default(),
                scores: BTreeMap::new(),
                verdict: None,
                reasons: vec![],
                seed: sub.seed.or(sub.loaded.config.advanced.seed),
                config_digest: sub.loaded.digest.clone(),
                submitted_at: now(),
                started_at: None,
                finished_at: None,
                report: None,
            }),
            events: EventLog::default(),
            cancel: CancellationToken::new(),
        });
        job.lock().id = job.id.clone();
        self.lock().push(job.clone());
        job.events.push("queued", serde_json::json!({"id": job.id}));
        tokio::spawn(drive::drive(self.inner.clone(), job.clone(), sub, prepared));
        Ok(job)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.lock().iter().find(|j| j.id == id).cloned()
    }

    /// Runs newest first, filtered; `before`: only runs submitted before that id (paging).
    pub fn list(
        &self,
        kind: Option<RunKind>,
        status: Option<Status>,
        before: Option<&str>,
        limit: usize,
    ) -> Vec<Summary> {
        let runs = self.lock().clone();
        runs.iter()
            .rev()
            .skip_while(|j| before.is_some_and(|b| j.id.as_str() >= b))
            .map(|j| j.summary())
            .filter(|s| kind.is_none_or(|k| s.kind == k))
            .filter(|s| status.is_none_or(|st| s.status == st))
            .take(limit)
            .collect()
    }

    /// Cancels run `id`: a queued run never starts; a running one's in-flight cases end
    /// and the agent it started is stopped.
    pub fn cancel(&self, id: &str) -> Result<Summary, CancelError> {
        let job = self.get(id).ok_or(CancelError::NotFound)?;
        let status = job.lock().status;
        if status.finished() {
            return Err(CancelError::Finished(status));
        }
        job.cancel.cancel();
        Ok(job.summary())
    }

    /// Cancels every run (the daemon is stopping); they end `interrupted`.
    pub fn interrupt_all(&self) {
        self.inner.stopping.store(true, Ordering::Relaxed);
        for job in self.lock().iter() {
            job.cancel.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Job>>> {
        self.inner.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A run id: the submission time and a per-daemon number, so ids sort by submission.
fn run_id(n: u64) -> String {
    let t = wall_clock();
    let day = t.date();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{n:04}",
        day.year(),
        u8::from(day.month()),
        day.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn now() -> String {
    wall_clock()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Timestamps of runs are real times, not the (pausable) tokio clock.
#[allow(clippy::disallowed_methods)]
fn wall_clock() -> time::OffsetDateTime {
    time::OffsetDateTime::from(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_only_two_are_unfinished() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.name()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
        let open: Vec<Status> = Status::ALL.into_iter().filter(|s| !s.finished()).collect();
        assert_eq!(open, [Status::Queued, Status::Running]);
    }

    #[test]
    fn ids_sort_by_submission() {
        let (a, b) = (run_id(9), run_id(10));
        assert!(a < b, "{a} {b}");
        assert_eq!(a.len(), "20261124-010203-0009".len());
    }
}
