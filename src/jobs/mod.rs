//! The daemon's runs, submitted through `/v1/runs`: each waits its turn (one at a time
//! under `exclusive` attribution, since a scenario's rules are the proxy's global rules;
//! up to `control.max_parallel_runs` under `header`), readies its agent through the
//! daemon's own proxy, runs with `run::execute`, and keeps its status, progress, events
//! and report. Cancelling ends the run's in-flight cases and stops the agent it started.
//! Owns no sockets: it reaches the proxy through the `Engine` and the `Journal` as runs
//! started from the CLI do.

mod drive;
mod events;
mod run_event;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use events::{Event, EventLog};
pub use run_event::{CaseEnded, EventError, EventKind, RunEvent};

use crate::config::{LlmEndpointSpec, Loaded, ToolSpec};
use crate::run::{RunKind, RunRequest, prepare};
use crate::session::Proxy;
use crate::store::{Filter, Page, Recorder, RunRecord, Store, StoreError};
use crate::telemetry::Metrics;

pub use crate::store::RunStatus as Status;

/// A run to start: its config and what to run, with the request's overrides.
pub struct Submission {
    pub loaded: Loaded,
    pub request: RunRequest,
    /// Overrides `advanced.seed`.
    pub seed: Option<u64>,
    /// Overrides `scoring.min_score`.
    pub min_score: Option<f64>,
    /// Runs only this trial of each case.
    pub trial: Option<u32>,
}

/// One submitted run.
pub struct Job {
    pub id: String,
    /// Its record as the store will have it, kept current here (the store's writer
    /// commits a little later).
    state: Mutex<RunRecord>,
    recorder: Recorder,
    metrics: Metrics,
    pub events: EventLog,
    cancel: CancellationToken,
}

impl Job {
    pub fn record(&self) -> RunRecord {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunRecord> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why a run cannot be cancelled.
#[derive(Debug)]
pub enum CancelError {
    NotFound,
    Finished(Status),
    /// Stored as queued or running by another process (a CLI run, another daemon).
    Elsewhere(Status),
    /// The store could not be read.
    Store(StoreError),
}

/// What the daemon's runs share: the proxy they go through and where they write.
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    /// The daemon's proxy (engine, journal, address, CA) and its store.
    proxy: Proxy,
    metrics: Metrics,
    /// The daemon's own `tools:` and `llm:`: a run that declares others has the daemon to
    /// itself while its declarations classify the traffic.
    tools: Vec<ToolSpec>,
    llm: Vec<LlmEndpointSpec>,
    /// Live runs (this daemon's), in submission order.
    runs: Mutex<Vec<Arc<Job>>>,
    /// `max_parallel` permits; an exclusive run takes them all (fair, so in order).
    turns: Arc<Semaphore>,
    max_parallel: u32,
    /// The daemon is stopping: runs cancelled now end `interrupted`.
    stopping: std::sync::atomic::AtomicBool,
    /// The seed of runs that fix none (`advanced.seed`): the daemon's own, taken before
    /// any run. Kept apart from the engine's, which an exclusive run swaps for its own
    /// while it runs (a run submitted meanwhile must not record that one).
    base_seed: u64,
}

/// Where the daemon's proxy is and where runs write.
pub struct Setup {
    /// The daemon's proxy, behind which every run's session runs; its store holds the
    /// history, and reports and agent logs go under `data_dir/runs/<id>/`.
    pub proxy: Proxy,
    pub metrics: Metrics,
    pub tools: Vec<ToolSpec>,
    pub llm: Vec<LlmEndpointSpec>,
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
                base_seed: s.proxy.engine.seed(),
                proxy: s.proxy,
                metrics: s.metrics,
                tools: s.tools,
                llm: s.llm,
                runs: Mutex::default(),
                turns: Arc::new(Semaphore::new(max_parallel as usize)),
                max_parallel,
                stopping: Default::default(),
            }),
        }
    }

    /// Runs for unit tests: a proxy address nothing listens on, reports under `data_dir`.
    #[cfg(test)]
    pub(crate) fn for_tests(data_dir: &std::path::Path) -> Jobs {
        use crate::chaos::Engine;
        use crate::journal::{Journal, Redactor};
        use std::net::SocketAddr;
        Jobs::new(Setup {
            proxy: Proxy {
                store: Store::open(data_dir).expect("a store in a fresh folder"),
                engine: Engine::new(1),
                journal: Journal::new(16, Redactor::new(&[], &[])),
                addr: SocketAddr::from(([127, 0, 0, 1], 9)),
                ca_cert: data_dir.join("ca.pem"),
                lanes: Arc::new(|| {
                    Box::pin(async { Err(std::io::Error::other("no proxy in unit tests")) })
                }),
                wrap_dir: None,
            },
            metrics: Metrics::new(),
            tools: vec![],
            llm: vec![],
            max_parallel: 2,
        })
    }

    pub fn store(&self) -> &Store {
        &self.inner.proxy.store
    }

    /// Queues `sub` and starts driving it; the problem in words when its config cannot
    /// make the run it asks for.
    pub fn submit(&self, sub: Submission) -> Result<Arc<Job>, String> {
        let prepared = prepare(&sub.loaded.config, &sub.request).map_err(|e| e.to_string())?;
        if sub.loaded.config.agent.is_none() {
            return Err("runs need an `agent:` section (endpoint of the agent under test)".into());
        }
        let (kind, digest) = (sub.request.kind, sub.loaded.digest.clone());
        // Known from submission on: `GET /v1/runs/{id}` shows it while queued.
        let seed = sub
            .seed
            .or(sub.loaded.config.advanced.seed)
            .unwrap_or(self.inner.base_seed);
        let recorder = Recorder::begin(
            &self.inner.proxy.store,
            kind,
            digest.clone(),
            Some(seed),
            Status::Queued,
        );
        let id = recorder.id.as_str().to_string();
        let job = Arc::new(Job {
            state: Mutex::new(RunRecord {
                id: id.clone(),
                kind,
                config_digest: digest,
                seed: Some(seed),
                started_ms: crate::store::now_ms(),
                finished_ms: None,
                status: Status::Queued,
                reason: None,
                scores: BTreeMap::new(),
                done: 0,
                total: 0,
                artifacts: BTreeMap::new(),
                // As the store has it once the run ends (`Store::set_contract`).
                contract: match kind {
                    RunKind::Contract => {
                        sub.loaded.config.contract.as_ref().map(|c| c.name.clone())
                    }
                    RunKind::Chaos | RunKind::Mutation | RunKind::Replay | RunKind::Ci => None,
                },
                // Known when the run ends (`Store::set_trials`).
                trials: None,
                shards: None,
            }),
            id,
            recorder,
            metrics: self.inner.metrics.clone(),
            events: EventLog::default(),
            cancel: CancellationToken::new(),
        });
        {
            let mut runs = self.lock();
            prune(&mut runs, |j| j.lock().status.is_final(), KEPT_ENDED);
            runs.push(job.clone());
        }
        job.events.push(RunEvent::Queued { id: job.id.clone() });
        tokio::spawn(drive::drive(self.inner.clone(), job.clone(), sub, prepared));
        Ok(job)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.lock().iter().find(|j| j.id == id).cloned()
    }

    /// A run's record: live, else stored; `None` when there is no such run.
    pub async fn record(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        match self.get(id) {
            Some(job) => Ok(Some(job.record())),
            None => self.stored(id).await,
        }
    }

    /// Run `id` as the store has it.
    async fn stored(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let id = id.to_string();
        self.store().blocking(move |store| store.get(&id)).await
    }

    /// Stored runs newest first, filtered and paged, with this daemon's live runs as they
    /// are now.
    pub async fn list(&self, filter: &Filter) -> Result<Page, StoreError> {
        self.store().flush().await?;
        let filter = filter.clone();
        let mut page = self
            .store()
            .blocking(move |store| store.list(&filter))
            .await?;
        for r in &mut page.runs {
            if let Some(job) = self.get(&r.id) {
                *r = job.record();
            }
        }
        Ok(page)
    }

    /// Cancels run `id`: a queued run never starts; a running one's in-flight cases end
    /// and the agent it started is stopped.
    pub async fn cancel(&self, id: &str) -> Result<RunRecord, CancelError> {
        let Some(job) = self.get(id) else {
            // A stored run of an earlier daemon or a CLI run: ended, or not this daemon's.
            return match self.stored(id).await {
                Ok(Some(r)) if r.status.is_final() => Err(CancelError::Finished(r.status)),
                Ok(Some(r)) => Err(CancelError::Elsewhere(r.status)),
                Ok(None) => Err(CancelError::NotFound),
                Err(e) => Err(CancelError::Store(e)),
            };
        };
        let status = job.lock().status;
        if status.is_final() {
            return Err(CancelError::Finished(status));
        }
        job.cancel.cancel();
        Ok(job.record())
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

/// Ended runs kept in memory with their events; older ones are served from the store.
const KEPT_ENDED: usize = 100;

/// Drops the oldest ended items of `items` beyond the newest `keep` ended ones, so a
/// long-lived daemon's memory does not grow with every run it drove.
fn prune<T>(items: &mut Vec<T>, ended: impl Fn(&T) -> bool, keep: usize) {
    let total = items.iter().filter(|i| ended(i)).count();
    let mut drop = total.saturating_sub(keep);
    items.retain(|i| {
        let gone = drop > 0 && ended(i);
        if gone {
            drop -= 1;
        }
        !gone
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_oldest_ended_runs_are_dropped() {
        // Odd numbers have ended; 1 and 3 are the oldest of them.
        let mut runs: Vec<u32> = (0..10).collect();
        super::prune(&mut runs, |n| n % 2 == 1, 3);
        assert_eq!(runs, [0, 2, 4, 5, 6, 7, 8, 9]);
        super::prune(&mut runs, |n| n % 2 == 1, 3);
        assert_eq!(runs.len(), 8, "nothing more to drop");
    }
}
