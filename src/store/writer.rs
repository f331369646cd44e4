//! The one writer: a dedicated thread that owns the read-write connection and applies
//! what the `Store` handles send it, so a run (or the proxy) never waits on SQLite. Ops
//! that arrive together are committed in one transaction (10,000 cases are a few
//! commits, not 10,000 fsyncs); if that transaction fails, each op is retried alone so
//! one bad write loses only itself. A failed write never panics the thread: the first
//! error is kept for `Store::health` and every later `flush` reports it. Between batches
//! it does its chores (`upkeep`): checkpoints, and sweeps for runs of dead processes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use super::ops::{add_done, write};
use super::owner::{self, OwnerLock};
use super::upkeep::{self, Upkeep};
use super::{RunId, StoreError};

pub(super) use super::ops::Op;

/// Most ops committed in one transaction.
const BATCH: usize = 1024;

/// How long the writer lets ops gather after the first before it commits them. A run
/// sends its cases one by one as they end; a commit for each (10,000 WAL appends and lock
/// round trips), and waking the writer for each, were most of the store's cost. The
/// writer sleeps rather than waits on the channel, so a send in the window wakes nobody.
/// A process killed in the window loses at most this much of its run.
const WINDOW: Duration = Duration::from_millis(10);

/// `first` and the ops sent within `WINDOW` after it, up to `BATCH` or an op someone waits
/// for (`Flush`, `Checkpoint`). A writer that is behind (its last batch was full) or
/// waited for does not sleep.
// The writer is a plain thread with no tokio clock: its gathering window is real time.
#[allow(clippy::disallowed_methods)]
fn gather(first: Op, rx: &Receiver<Op>, behind: bool) -> Vec<Op> {
    if !behind && !first.awaited() {
        std::thread::sleep(WINDOW);
    }
    let mut ops = vec![first];
    while ops.len() < BATCH && !ops.last().is_some_and(Op::awaited) {
        match rx.try_recv() {
            Ok(op) => ops.push(op),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
        }
    }
    ops
}

/// The first write that failed, if any.
pub(super) type Health = Arc<Mutex<Option<StoreError>>>;

pub(super) struct Writer {
    pub conn: Connection,
    pub path: PathBuf,
    pub owner: OwnerLock,
    pub health: Health,
    /// The next `seq` of each run this writer has stored a case of. The writer is the only
    /// one that inserts cases, so it can number them itself: a `MAX(seq)` subquery in the
    /// insert made SQLite re-prepare the statement on every case (a third of the store's
    /// cost, docs/benchmarks.md "Run store").
    pub next_seq: HashMap<RunId, i64>,
}

impl Writer {
    /// Runs until every `Store` handle is gone and the channel is drained, then copies the
    /// WAL into the database file.
    // The writer is a plain thread with no tokio clock: its chores are due in real time.
    #[allow(clippy::disallowed_methods)]
    pub fn run(mut self, rx: Receiver<Op>) {
        let start = std::time::Instant::now();
        let mut upkeep = Upkeep::default();
        let mut behind = false;
        loop {
            match rx.recv_timeout(upkeep.wait(start.elapsed())) {
                Ok(first) => {
                    let ops = gather(first, &rx, behind);
                    behind = ops.len() == BATCH;
                    self.apply(ops, &mut upkeep, start.elapsed());
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let due = upkeep.due(start.elapsed());
            if due.sweep {
                self.sweep();
            }
            if due.checkpoint {
                // PASSIVE: copies what no other process is still reading, waits for nothing.
                if let Err(e) = upkeep::checkpoint(&self.conn, "PASSIVE") {
                    tracing::warn!(path = %self.path.display(), error = %e, "checkpoint failed");
                }
            }
        }
        if let Err(e) = self.checkpoint() {
            tracing::warn!("{e}");
        }
    }

    fn apply(&mut self, mut ops: Vec<Op>, upkeep: &mut Upkeep, now: std::time::Duration) {
        let before = ops.len();
        ops.retain(|op| !matches!(op, Op::Sweep));
        if ops.len() < before {
            upkeep.ask_sweep();
        }
        let (answers, writes): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(Op::awaited);
        if !writes.is_empty() {
            upkeep.wrote(now);
            if self.commit(&writes).is_err() {
                // The rolled-back cases' numbers were never stored: count from the database.
                self.next_seq.clear();
                for op in &writes {
                    if let Err(e) = self.commit(std::slice::from_ref(op)) {
                        self.next_seq.clear();
                        self.fail(e);
                    }
                }
            }
        }
        for op in answers {
            if let Op::Flush(done) = op {
                let _ = done.send(());
            } else if let Op::Checkpoint(done) = op {
                let _ = done.send(self.checkpoint());
            }
        }
    }

    /// Copies the WAL into the database file. Alone, it empties the file too (`TRUNCATE`:
    /// waits, up to the busy timeout, for readers). With another process on the store it
    /// copies what that one is not reading and leaves the file to it (`PASSIVE`: never
    /// blocks its writer); that process empties it when it stops.
    fn checkpoint(&self) -> Result<(), StoreError> {
        let alone = owner::alone(self.data_dir(), Some(&self.owner.token));
        let mode = if alone { "TRUNCATE" } else { "PASSIVE" };
        match upkeep::checkpoint(&self.conn, mode) {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::info!(path = %self.path.display(), "another process is reading the run store: part of its -wal is left for a later checkpoint");
                Ok(())
            }
            Err(e) => Err(StoreError::sqlite(&self.path, e)),
        }
    }

    fn data_dir(&self) -> &std::path::Path {
        self.path.parent().unwrap_or(std::path::Path::new("."))
    }

    /// Marks the runs of processes that died `interrupted`.
    fn sweep(&self) {
        let (dir, me) = (self.data_dir(), &self.owner.token);
        match owner::interrupt_orphans(&self.conn, dir, &self.path, me) {
            Ok(ids) => {
                for id in ids {
                    tracing::warn!(run = %id, "run marked interrupted: {}", owner::INTERRUPTED);
                }
            }
            Err(e) => tracing::warn!("looking for runs of processes that died: {e}"),
        }
    }

    fn commit(&mut self, ops: &[Op]) -> rusqlite::Result<()> {
        let owner = self.owner.token.clone();
        let next_seq = &mut self.next_seq;
        let tx = self.conn.transaction()?;
        // Cases done are counted once per run per transaction, not once per case: a run's
        // row rewritten for each of 10,000 cases was a measurable part of the store's cost.
        // A `Progress` op sets `done` outright: the cases counted before it are added first,
        // so the order the ops were sent in still decides.
        let mut done: Vec<(&RunId, i64)> = vec![];
        for op in ops {
            if let Op::Progress(id, ..) = op
                && let Some(at) = done.iter().position(|(r, _)| *r == id)
            {
                let (id, n) = done.swap_remove(at);
                add_done(&tx, id, n)?;
            }
            write(&tx, op, &owner, next_seq)?;
            if let Op::Case(id, _) = op {
                match done.iter_mut().find(|(r, _)| *r == id) {
                    Some((_, n)) => *n += 1,
                    None => done.push((id, 1)),
                }
            }
        }
        for (id, n) in done {
            add_done(&tx, id, n)?;
        }
        tx.commit()
    }

    fn fail(&self, e: rusqlite::Error) {
        tracing::error!(path = %self.path.display(), error = %e, "the run store could not save a write");
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        health.get_or_insert(StoreError::Write {
            path: self.path.clone(),
            reason: e.to_string(),
        });
    }
}
