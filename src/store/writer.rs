//! The one writer: a dedicated thread that owns the read-write connection and applies
//! what the `Store` handles send it, so a run (or the proxy) never waits on SQLite. Ops
//! that arrive together are committed in one transaction (10,000 cases are a few
//! commits, not 10,000 fsyncs); if that transaction fails, each op is retried alone so
//! one bad write loses only itself. A failed write never panics the thread: the first
//! error is kept for `Store::health` and every later `flush` reports it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, Transaction, params};

use super::owner::OwnerLock;
use super::record::{CaseRecord, CellRecord, NewRun, RunStatus, Verdict};
use super::{RunId, StoreError};

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
    if !behind && !matches!(first, Op::Flush(_)) {
        std::thread::sleep(WINDOW);
    }
    let mut ops = vec![first];
    while ops.len() < BATCH && !matches!(ops.last(), Some(Op::Flush(_))) {
        match rx.try_recv() {
            Ok(op) => ops.push(op),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
        }
    }
    ops
}

pub(super) enum Op {
    Begin {
        id: RunId,
        run: NewRun,
        started_ms: i64,
    },
    Status(RunId, RunStatus),
    Case(RunId, Box<CaseRecord>),
    Judge {
        run: RunId,
        phase: String,
        scenario: String,
        input: String,
        verdict: Verdict,
        checks: serde_json::Value,
    },
    Cell(RunId, Box<CellRecord>),
    Progress(RunId, u64, u64),
    Planned(RunId, u64),
    Finish {
        run: RunId,
        status: RunStatus,
        scores: BTreeMap<String, f64>,
        reason: Option<String>,
        finished_ms: i64,
    },
    Artifact(RunId, String, String),
    /// Answered once every op sent before it is committed (or has failed).
    Flush(tokio::sync::oneshot::Sender<()>),
    /// Tests: caps the database at its current size, as a full disk would.
    #[cfg(test)]
    FillDisk,
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

fn add_done(tx: &Transaction, id: &RunId, n: i64) -> rusqlite::Result<()> {
    tx.prepare_cached("UPDATE runs SET done = done + ?2 WHERE id = ?1")?
        .execute(params![id.as_str(), n])?;
    Ok(())
}

/// Stores a case with its run's next `seq`.
fn insert_case(
    tx: &Transaction,
    next_seq: &mut HashMap<RunId, i64>,
    id: &RunId,
    c: &CaseRecord,
) -> rusqlite::Result<()> {
    let seq = match next_seq.get(id) {
        Some(n) => *n,
        None => tx
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM cases WHERE run_id = ?1")?
            .query_row([id.as_str()], |r| r.get(0))?,
    };
    tx.prepare_cached(
        "INSERT INTO cases (run_id, seq, phase, scenario, input, answer, error, verdict,
            checks, faults, exchanges, latency_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        id.as_str(),
        seq,
        c.phase,
        c.scenario,
        c.input,
        c.answer,
        c.error,
        c.verdict.map(Verdict::as_str),
        json(&c.checks),
        json(&c.faults),
        json(&c.exchanges),
        c.latency_ms
    ])?;
    next_seq.insert(id.clone(), seq + 1);
    Ok(())
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// Statements are prepared once per connection (`prepare_cached`): a run writes each kind
/// thousands of times, and parsing the SQL each time was a third of the store's cost
/// (docs/benchmarks.md, "Run store").
fn write(
    tx: &Transaction,
    op: &Op,
    owner: &str,
    next_seq: &mut HashMap<RunId, i64>,
) -> rusqlite::Result<()> {
    match op {
        Op::Begin {
            id,
            run,
            started_ms,
        } => {
            tx.prepare_cached(
                "INSERT INTO runs (id, kind, config_digest, seed, started_ms, status, owner)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                id.as_str(),
                run.kind.as_str(),
                run.config_digest,
                run.seed.map(|s| s.to_string()),
                started_ms,
                run.status.as_str(),
                owner
            ])?;
        }
        Op::Status(id, status) => {
            tx.prepare_cached("UPDATE runs SET status = ?2 WHERE id = ?1")?
                .execute(params![id.as_str(), status.as_str()])?;
        }
        Op::Case(id, c) => insert_case(tx, next_seq, id, c)?,
        Op::Judge {
            run,
            phase,
            scenario,
            input,
            verdict,
            checks,
        } => {
            tx.prepare_cached(
                "UPDATE cases SET verdict = ?5, checks = ?6
                 WHERE run_id = ?1 AND phase = ?2 AND scenario = ?3 AND input = ?4",
            )?
            .execute(params![
                run.as_str(),
                phase,
                scenario,
                input,
                verdict.as_str(),
                json(checks)
            ])?;
        }
        Op::Cell(id, c) => {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO cells (run_id, phase, scenario, invariant, severity,
                    verdict, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                id.as_str(),
                c.phase,
                c.scenario,
                c.invariant,
                c.severity,
                c.verdict.as_str(),
                c.reason
            ])?;
        }
        Op::Progress(id, done, total) => {
            tx.prepare_cached("UPDATE runs SET done = ?2, total = ?3 WHERE id = ?1")?
                .execute(params![id.as_str(), *done as i64, *total as i64])?;
        }
        Op::Planned(id, n) => {
            tx.prepare_cached("UPDATE runs SET total = total + ?2 WHERE id = ?1")?
                .execute(params![id.as_str(), *n as i64])?;
        }
        Op::Finish {
            run,
            status,
            scores,
            reason,
            finished_ms,
        } => {
            tx.prepare_cached(
                "UPDATE runs SET status = ?2, scores = ?3, reason = ?4, finished_ms = ?5
                 WHERE id = ?1",
            )?
            .execute(params![
                run.as_str(),
                status.as_str(),
                json(scores),
                reason,
                finished_ms
            ])?;
            // An ended run stores no more cases: a daemon's writer forgets its number.
            next_seq.remove(run);
        }
        Op::Artifact(id, kind, path) => {
            tx.prepare_cached(
                "UPDATE runs SET artifacts = json_set(artifacts, '$.' || json_quote(?2), ?3)
                 WHERE id = ?1",
            )?
            .execute(params![id.as_str(), kind, path])?;
        }
        Op::Flush(_) => {}
        #[cfg(test)]
        Op::FillDisk => {
            let pages: i64 = tx.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            tx.pragma_update(None, "max_page_count", pages)?;
        }
    }
    Ok(())
}
