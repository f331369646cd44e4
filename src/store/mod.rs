//! The run store: run history in SQLite at `data_dir/flakestorm.db` (WAL, versioned
//! migrations) and artifact files under `data_dir/runs/<id>/`. Owns the database file,
//! its one writer thread and its read connection; knows nothing of how runs are driven
//! (`from_run` turns the run types into its records). Writes are fire-and-forget sends
//! to the writer, so the caller never blocks on SQLite; `flush` waits for them. A file
//! that is not ours, or is damaged, is never written to. See docs/runs.md.

// No catch-all arm over an enum here: a new status or verdict must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

#[cfg(test)]
mod blocking_tests;
mod check;
mod compare;
mod error;
mod from_run;
mod id;
mod import;
#[cfg(test)]
mod linear_tests;
mod ops;
mod owner;
mod private;
mod read;
mod record;
mod recorder;
mod schema;
#[cfg(test)]
mod tests;
mod timeline;
mod upkeep;
mod wal;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

pub use compare::{Change, ChangeKind, Comparison, Delta, RunData, Subject, compare};
pub use error::StoreError;
pub use from_run::ended;
pub use id::{RunId, now_ms, readable as readable_time};
pub use import::{begin_import, import, record_import};
pub use owner::INTERRUPTED;
pub use private::check_private;
pub use record::{
    CaseKey, CaseRecord, CellRecord, Filter, NewRun, Page, RunKind, RunRecord, RunStatus, SameAs,
    Severity, StoredCase, Verdict,
};
pub use recorder::{Recorder, case_verdicts, final_verdicts};
pub use schema::APPLICATION_ID;
pub use timeline::{CASE_CALLS, CaseCalls, RUN_CALLS};

use writer::{Health, Op, Writer};

impl Drop for Inner {
    /// The last handle gone: the writer drains what was sent, commits, copies the WAL into
    /// the database file, releases this process's lock and stops, before the drop returns.
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(w) = self.writer.take()
            && w.join().is_err()
        {
            tracing::error!(path = %self.path.display(), "the run store's writer panicked");
        }
    }
}

/// The database's file name inside `data_dir`.
pub const DB_FILE: &str = "flakestorm.db";

/// A handle on the store; clones share one writer and one read connection.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish()
    }
}

struct Inner {
    data_dir: PathBuf,
    path: PathBuf,
    /// `None` only while dropping.
    tx: Option<Sender<Op>>,
    writer: Option<std::thread::JoinHandle<()>>,
    read: Mutex<rusqlite::Connection>,
    health: Health,
    interrupted: Vec<String>,
    /// This process's owner token (`owner`): its own runs are never another's orphans.
    token: String,
}

impl Store {
    /// Opens (or creates) `data_dir/flakestorm.db`, refusing one that is not ours or is
    /// damaged, migrates it, starts its writer and marks the runs of processes that died
    /// `interrupted` (`interrupted()` lists them).
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        // Made private: the run history, reports and the control token are the user's alone
        // (an existing folder keeps the mode its owner gave it).
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(data_dir)
            .map_err(|e| StoreError::io(data_dir, e))?;
        let path = data_dir.join(DB_FILE);
        // Processes opening the store at once take turns: creating the file, switching it
        // to WAL and migrating it are not safe to race.
        let turn = owner::opening(data_dir)?;
        private::private_db(&path)?;
        let conn = schema::open(&path, owner::alone(data_dir, None))?;
        let owner = owner::OwnerLock::take(data_dir)?;
        let interrupted = owner::interrupt_orphans(&conn, data_dir, &path, &owner.token)?;
        drop(turn);
        for id in &interrupted {
            tracing::warn!(run = %id, "run marked interrupted: {}", owner::INTERRUPTED);
        }
        let read = schema::open_reader(&path)?;
        let token = owner.token.clone();
        let health = Health::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = Writer {
            conn,
            path: path.clone(),
            owner,
            health: health.clone(),
            next_seq: Default::default(),
        };
        let writer = std::thread::Builder::new()
            .name("flakestorm-store".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(Store {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_path_buf(),
                path,
                tx: Some(tx),
                writer: Some(writer),
                read: Mutex::new(read),
                health,
                interrupted,
                token,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs this open found `running` or `queued` from a process that died, now
    /// `interrupted`.
    pub fn interrupted(&self) -> &[String] {
        &self.inner.interrupted
    }

    /// Records a new run; returns its id at once (the row is written by the writer).
    pub fn begin_run(&self, run: NewRun) -> RunId {
        let started_ms = id::start_ms();
        let id = RunId::new(started_ms);
        self.send(Op::Begin {
            id: id.clone(),
            run,
            started_ms,
        });
        id
    }

    /// A queued run starts.
    pub fn set_status(&self, run: &RunId, status: RunStatus) {
        self.send(Op::Status(run.clone(), status));
    }

    /// A case ended: stored with the next `seq` of its run, and `done` goes up by one.
    /// Safe to call from many tasks at once.
    pub fn case_finished(&self, run: &RunId, case: CaseRecord) {
        self.send(Op::Case(run.clone(), Box::new(case)));
    }

    /// Sets the verdict (and checks) of the run's cases of `phase`, `scenario`, `input` and
    /// trial, once they are judged (chaos and mutation runs judge after the case ends).
    pub fn judge_case(
        &self,
        run: &RunId,
        key: CaseKey<'_>,
        verdict: Verdict,
        checks: serde_json::Value,
    ) {
        self.judge_cases(run, key, vec![(verdict, checks)]);
    }

    /// Sets the verdicts of the run's cases sharing `key`, one each in the order they were
    /// stored (the first verdict to the first case stored with that key, …). One op for the
    /// key however many cases share it: the writer's work stays linear in the cases.
    pub fn judge_cases(
        &self,
        run: &RunId,
        key: CaseKey<'_>,
        verdicts: Vec<(Verdict, serde_json::Value)>,
    ) {
        let (phase, scenario, input, trial) = key;
        let verdicts = verdicts
            .into_iter()
            .map(|(v, checks)| (v, ops::json(&checks)))
            .collect();
        self.send(Op::Judge {
            run: run.clone(),
            key: (phase, scenario.into(), input.into(), trial),
            verdicts,
        });
    }

    /// The outcome class of the run's cases of `phase`, `scenario`, `input` and trial,
    /// decided when the run ends.
    pub fn set_outcome(
        &self,
        run: &RunId,
        key: CaseKey<'_>,
        class: crate::checks::spec::OutcomeClass,
    ) {
        let (phase, scenario, input, trial) = key;
        self.send(Op::Outcome {
            run: run.clone(),
            key: (phase, scenario.into(), input.into(), trial),
            class,
        });
    }

    /// A cell's verdict (a second one for the same phase, scenario and invariant replaces it).
    pub fn cell(&self, run: &RunId, cell: CellRecord) {
        self.send(Op::Cell(run.clone(), Box::new(cell)));
    }

    /// Sets the progress to `done` of `total` cases.
    pub fn progress(&self, run: &RunId, done: u64, total: u64) {
        self.send(Op::Progress(run.clone(), done, total));
    }

    /// The run plans `n` more cases (`run::Progress::planned`).
    pub fn planned(&self, run: &RunId, n: u64) {
        self.send(Op::Planned(run.clone(), n));
    }

    /// The run ended with `status`, its scores per phase and, unless it passed, why.
    pub fn finish_run(
        &self,
        run: &RunId,
        status: RunStatus,
        scores: BTreeMap<String, f64>,
        reason: Option<String>,
    ) {
        self.send(Op::Finish {
            run: run.clone(),
            status,
            scores,
            reason,
            finished_ms: id::now_ms(),
        });
    }

    /// The contract run `run` tests (its `contract.name`): `last_passing` matches on it.
    pub fn set_contract(&self, run: &RunId, name: &str) {
        self.send(Op::Contract(run.clone(), name.into()));
    }

    /// How the run was measured with several trials per case: `last_passing` matches on it.
    pub fn set_trials(&self, run: &RunId, trials: &crate::run::TrialsInfo) {
        self.send(Op::Trials(run.clone(), trials.clone()));
    }

    /// A run merged from `n` shard reports (`report merge`).
    pub fn set_shards(&self, run: &RunId, n: u32) {
        self.send(Op::Shards(run.clone(), n));
    }

    /// Records the file of an artifact (`json`, `html`, `junit`, `tape`…), best given as a
    /// path under `run_dir`.
    pub fn set_artifact(&self, run: &RunId, kind: &str, path: &Path) {
        self.send(Op::Artifact(
            run.clone(),
            kind.into(),
            path.display().to_string(),
        ));
    }

    /// `data_dir/runs/<id>/`, created: where a run's files go.
    pub fn run_dir(&self, run: &RunId) -> Result<PathBuf, StoreError> {
        let dir = self.inner.data_dir.join("runs").join(run.as_str());
        crate::files::create_private_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
        Ok(dir)
    }

    /// Runs `work` on the store off the async threads: a SQLite read or a file written
    /// waits on the disk (and a read on the read connection's lock), and would stall the
    /// proxy traffic those threads carry (all of it on a one-CPU sidecar's single thread).
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        match tokio::task::spawn_blocking(move || work(&store)).await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Dropped unrun: the runtime, and with it the store, is shutting down.
            Err(_) => Err(StoreError::Closed(self.inner.path.clone())),
        }
    }

    /// Resolves when everything sent before it is committed; the first write that
    /// failed, if any did (since the store opened).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (done, wait) = tokio::sync::oneshot::channel();
        self.send(Op::Flush(done));
        wait.await
            .map_err(|_| StoreError::Closed(self.inner.path.clone()))?;
        self.health()
    }

    /// Commits everything sent before it, then copies the WAL into the database file, so
    /// `flakestorm.db` alone holds every run, and empties it unless another process has
    /// the store open (a clean stop does this; the last handle's drop does too). The store
    /// stays open.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        let (done, wait) = tokio::sync::oneshot::channel();
        self.send(Op::Checkpoint(done));
        wait.await
            .map_err(|_| StoreError::Closed(self.inner.path.clone()))??;
        self.health()
    }

    /// The first write that failed, if any.
    pub fn health(&self) -> Result<(), StoreError> {
        let health = self.inner.health.lock().unwrap_or_else(|p| p.into_inner());
        health.clone().map_or(Ok(()), Err)
    }

    /// Tests: from now on the database cannot grow, as on a full disk.
    #[cfg(test)]
    pub(crate) fn fill_disk(&self) {
        self.send(Op::FillDisk);
    }

    fn send(&self, op: Op) {
        let sent = self.inner.tx.as_ref().is_some_and(|tx| tx.send(op).is_ok());
        if !sent {
            // Only if the writer thread died; keep it for `health` like a failed write.
            let mut health = self.inner.health.lock().unwrap_or_else(|p| p.into_inner());
            health.get_or_insert(StoreError::Closed(self.inner.path.clone()));
        }
    }
}
