//! Reads: the run list with filters and cursor paging, one run, its cases and cells, the
//! last passing run of a kind. On the store's own read connection (WAL lets it read while
//! the writer writes); each call is one short query, but it waits on the disk and on the
//! read connection's lock: the daemon calls them on the blocking pool (`Store::blocking`).
//! A run still `queued` or `running` whose process died reads as `interrupted` at once
//! (the writer is asked to store it so), rather than at the next sweep.

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::owner::{self, INTERRUPTED};
use super::record::{CaseRecord, CellRecord, Filter, Page, RunKind, RunRecord, RunStatus, SameAs};
use super::record::{StoredCase, Verdict};
use super::writer::Op;
use super::{RunData, Store, StoreError, now_ms};

/// `list` without a limit returns this many runs, and never more than `MAX_LIMIT`.
pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 1000;

const RUN_COLUMNS: &str = "id, kind, config_digest, seed, started_ms, finished_ms, status, \
                           reason, scores, done, total, artifacts, owner, contract, trials, shards";

impl Store {
    /// Runs matching `filter`, newest first (by start time, then id), and the cursor of
    /// the next page (the last run's id). A cursor naming no run gives an empty page.
    pub fn list(&self, filter: &Filter) -> Result<Page, StoreError> {
        let limit = filter.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs
             WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2)
               AND (?3 IS NULL OR (started_ms, id) <
                    (SELECT started_ms, id FROM runs WHERE id = ?3))
             ORDER BY started_ms DESC, id DESC LIMIT ?4"
        );
        let mut rows = self.query(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![
                    filter.kind.map(RunKind::as_str),
                    filter.status.map(RunStatus::as_str),
                    filter.cursor,
                    limit as i64 + 1
                ],
                owned_row,
            )?;
            rows.collect::<Result<Vec<_>, _>>()
        })?;
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|(r, _)| r.id.clone())
        } else {
            None
        };
        let mut runs = Vec::with_capacity(rows.len());
        for (run, owner) in rows {
            let run = self.settled(run, owner.as_deref())?;
            // A run found interrupted just now no longer has the status asked for.
            if filter.status.is_none_or(|s| s == run.status) {
                runs.push(run);
            }
        }
        Ok(Page { runs, next_cursor })
    }

    /// One run, or `None` if no run has that id.
    pub fn get(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        match self.row(id)? {
            Some((run, owner)) => self.settled(run, owner.as_deref()).map(Some),
            None => Ok(None),
        }
    }

    fn row(&self, id: &str) -> Result<Option<(RunRecord, Option<String>)>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        self.query(|c| {
            c.prepare_cached(&sql)?
                .query_row([id], owned_row)
                .optional()
        })
    }

    /// `run` as it stands: one another process left `queued` or `running` and died reads
    /// as `interrupted`, and the writer is asked to store that (`owner::interrupt_orphans`).
    fn settled(&self, run: RunRecord, owner: Option<&str>) -> Result<RunRecord, StoreError> {
        let mine = owner == Some(self.inner.token.as_str());
        if run.status.is_final() || mine || !owner::owner_gone(&self.inner.data_dir, owner) {
            return Ok(run);
        }
        // Its process committed its last write before its lock went: read the run again.
        let Some((mut run, _)) = self.row(&run.id)? else {
            return Ok(run);
        };
        if !run.status.is_final() {
            run.status = RunStatus::Interrupted;
            run.reason = Some(INTERRUPTED.into());
            run.finished_ms = Some(now_ms());
            self.send(Op::Sweep);
        }
        Ok(run)
    }

    /// A run with its cells and cases (what `compare` takes), or `None`.
    pub fn load(&self, id: &str) -> Result<Option<RunData>, StoreError> {
        let Some(run) = self.get(id)? else {
            return Ok(None);
        };
        Ok(Some(RunData {
            cells: self.cells(id)?,
            cases: self.cases(id)?,
            run,
        }))
    }

    /// The newest run of `kind` that passed and is of the same config or contract as
    /// `same` says (`SameAs::matches`): another agent's runs in the same store are not.
    pub fn last_passing(
        &self,
        kind: RunKind,
        same: &SameAs,
    ) -> Result<Option<RunRecord>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE kind = ?1 AND status = 'passed'
               AND ((?2 IS NOT NULL AND config_digest = ?2) OR (?3 IS NOT NULL AND contract = ?3))
               AND trials IS ?4
             ORDER BY started_ms DESC, id DESC LIMIT 1"
        );
        // Written by the same serialiser as `Op::Trials`: equal measures, equal text.
        let trials = same
            .trials
            .as_ref()
            .map(|t| serde_json::to_string(t).unwrap_or_default());
        self.query(|c| {
            c.prepare_cached(&sql)?
                .query_row(
                    params![kind.as_str(), same.config_digest, same.contract, trials],
                    run_row,
                )
                .optional()
        })
    }

    /// A run's cases in the order they ended.
    pub fn cases(&self, id: &str) -> Result<Vec<StoredCase>, StoreError> {
        let sql = "SELECT seq, phase, scenario, input, answer, error, verdict, checks, faults,
                          exchanges, latency_ms, trial, outcome
                   FROM cases WHERE run_id = ?1 ORDER BY seq";
        self.query(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map([id], case_row)?;
            rows.collect()
        })
    }

    /// A run's cells, by phase, scenario and invariant.
    pub fn cells(&self, id: &str) -> Result<Vec<CellRecord>, StoreError> {
        let sql = "SELECT phase, scenario, invariant, severity, verdict, reason, consistency
                   FROM cells
                   WHERE run_id = ?1 ORDER BY phase, scenario, invariant";
        self.query(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map([id], |r| {
                Ok(CellRecord {
                    phase: word(r, 0)?,
                    scenario: r.get(1)?,
                    invariant: r.get(2)?,
                    severity: word(r, 3)?,
                    verdict: word(r, 4)?,
                    reason: r.get(5)?,
                    consistency: json_or_null(r, 6)?,
                })
            })?;
            rows.collect()
        })
    }

    pub(super) fn query<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.inner.read.lock().unwrap_or_else(|p| p.into_inner());
        f(&conn).map_err(|e| StoreError::sqlite(&self.inner.path, e))
    }
}

/// A closed-enum column (kind, status, phase, severity, verdict) parsed from its word; a
/// word this build does not know (a damaged row, a newer build's) is an error that names
/// the column and the word, never a panic.
fn word<T: std::str::FromStr<Err = String>>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    s.parse().map_err(|e: String| {
        let column = r.as_ref().column_name(i).unwrap_or("?");
        let why = format!("column `{column}`: {e}");
        rusqlite::Error::FromSqlConversionFailure(i, Type::Text, why.into())
    })
}

/// A JSON text column.
fn json<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    serde_json::from_str(&s)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, e.into()))
}

/// A nullable JSON text column.
fn json_or_null<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(_) => json(r, i).map(Some),
    }
}

/// A run and its owner's token (`RUN_COLUMNS`' last).
fn owned_row(r: &Row) -> rusqlite::Result<(RunRecord, Option<String>)> {
    Ok((run_row(r)?, r.get(12)?))
}

fn run_row(r: &Row) -> rusqlite::Result<RunRecord> {
    let seed: Option<String> = r.get(3)?;
    let seed = seed
        .map(|s| s.parse::<u64>())
        .transpose()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, Type::Text, e.into()))?;
    Ok(RunRecord {
        id: r.get(0)?,
        kind: word(r, 1)?,
        config_digest: r.get(2)?,
        seed,
        started_ms: r.get(4)?,
        finished_ms: r.get(5)?,
        status: word(r, 6)?,
        reason: r.get(7)?,
        scores: json(r, 8)?,
        done: r.get::<_, i64>(9)?.max(0) as u64,
        total: r.get::<_, i64>(10)?.max(0) as u64,
        artifacts: json(r, 11)?,
        contract: r.get(13)?,
        trials: json_or_null(r, 14)?,
        shards: r.get(15)?,
    })
}

pub(super) fn case_row(r: &Row) -> rusqlite::Result<StoredCase> {
    let verdict: Option<String> = r.get(6)?;
    let verdict = match verdict {
        None => None,
        Some(_) => Some(word::<Verdict>(r, 6)?),
    };
    Ok(StoredCase {
        seq: r.get::<_, i64>(0)?.max(0) as u64,
        case: CaseRecord {
            phase: word(r, 1)?,
            scenario: r.get(2)?,
            input: r.get(3)?,
            answer: r.get(4)?,
            error: r.get(5)?,
            verdict,
            checks: json(r, 7)?,
            faults: json(r, 8)?,
            exchanges: json(r, 9)?,
            latency_ms: r.get(10)?,
            trial: r.get(11)?,
            // A class of a newer build reads as none rather than failing the run's read.
            outcome: r.get::<_, Option<String>>(12)?.and_then(|s| s.parse().ok()),
            timeline: None,
        },
    })
}
