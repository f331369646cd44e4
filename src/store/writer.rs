//! The one writer: a dedicated thread that owns the read-write connection and applies
//! what the `Store` handles send it, so a run (or the proxy) never waits on SQLite. Ops
//! that arrive together are committed in one transaction (10,000 cases are a few
//! commits, not 10,000 fsyncs); if that transaction fails, each op is retried alone so
//! one bad write loses only itself. A failed write never panics the thread: the first
//! error is kept for `Store::health` and every later `flush` reports it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use super::ops::{add_done, write};
use super::owner::OwnerLock;
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

/// `first` and the ops sent within `WINDOW` after it, up to `BATCH` or a `Flush`. A
/// writer that is behind (its last batch was full) or asked to flush does not sleep.
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
    /// Runs until every `Store` handle is gone and the channel is drained.
    pub fn run(mut self, rx: Receiver<Op>) {
        let mut behind = false;
        while let Ok(first) = rx.recv() {
            let ops = gather(first, &rx, behind);
            behind = ops.len() == BATCH;
            self.apply(ops);
        }
    }

    fn apply(&mut self, ops: Vec<Op>) {
        let (flushes, writes): (Vec<Op>, Vec<Op>) =
            ops.into_iter().partition(|op| matches!(op, Op::Flush(_)));
        if !writes.is_empty() && self.commit(&writes).is_err() {
            // The rolled-back cases' numbers were never stored: count from the database.
            self.next_seq.clear();
            for op in &writes {
                if let Err(e) = self.commit(std::slice::from_ref(op)) {
                    self.next_seq.clear();
                    self.fail(e);
                }
            }
        }
        for op in flushes {
            if let Op::Flush(done) = op {
                let _ = done.send(());
            }
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
