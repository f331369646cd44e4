//! The database file: recognising it as ours before touching it, and the versioned
//! migrations. A file that is not flakestorm's (another application id, tables we do not
//! know, a newer `user_version` than this build knows, not SQLite at all) is refused with
//! an error naming it and is never written to: it is checked from its raw header and a
//! read-only connection before the read-write one opens. So is a damaged one (`check`):
//! a `-wal` SQLite would silently cut short, pages that fail `PRAGMA quick_check`.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{StoreError, check};

/// `PRAGMA application_id` of a flakestorm store: "FLKS".
pub const APPLICATION_ID: i32 = 0x464C_4B53;

/// Migration `i` brings the schema to `user_version = i + 1`; each runs in one
/// transaction. Append only: a released step is never edited.
const MIGRATIONS: &[&str] = &[
    // 1: runs, cases, cells. Scores and artifacts are small JSON maps; seeds are u64
    // (text, as SQLite integers are signed).
    "CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        config_digest TEXT,
        seed TEXT,
        started_ms INTEGER NOT NULL,
        finished_ms INTEGER,
        status TEXT NOT NULL,
        reason TEXT,
        scores TEXT NOT NULL DEFAULT '{}',
        done INTEGER NOT NULL DEFAULT 0,
        total INTEGER NOT NULL DEFAULT 0,
        artifacts TEXT NOT NULL DEFAULT '{}',
        owner TEXT
    );
    CREATE INDEX runs_by_start ON runs (started_ms, id);
    CREATE INDEX runs_by_kind ON runs (kind, started_ms, id);
    CREATE INDEX runs_by_status ON runs (status, started_ms, id);
    CREATE TABLE cases (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        phase TEXT NOT NULL,
        scenario TEXT NOT NULL,
        input TEXT NOT NULL,
        answer TEXT,
        error TEXT,
        verdict TEXT,
        checks TEXT NOT NULL,
        faults TEXT NOT NULL,
        exchanges TEXT NOT NULL,
        latency_ms REAL NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE cells (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        phase TEXT NOT NULL,
        scenario TEXT NOT NULL,
        invariant TEXT NOT NULL,
        severity TEXT NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (run_id, phase, scenario, invariant)
    );",
    // 2: a run's verdicts are written per case by (phase, scenario, input): without an
    // index each is a scan of the run's cases (10,000 cases: 7.5× the run's wall time).
    "CREATE INDEX cases_by_input ON cases (run_id, phase, scenario, input);",
    // 3: the contract a contract run tested (`contract.name`): `--baseline last-pass`
    // compares a contract with its own earlier runs even after its config file changed.
    "ALTER TABLE runs ADD COLUMN contract TEXT;",
    // 4: trials (docs/trials.md): how a run was measured (JSON, null for one trial per
    // case), each case's trial (a case is its phase, scenario, input and trial), and a
    // cell's consistency over its trials (JSON).
    "ALTER TABLE runs ADD COLUMN trials TEXT;
     ALTER TABLE cases ADD COLUMN trial INTEGER;
     ALTER TABLE cells ADD COLUMN consistency TEXT;",
    // 5: outcome classes (docs/outcomes.md): what the agent did with the fault that
    // reached a case, so `runs compare` can say a prompt's class got worse.
    "ALTER TABLE cases ADD COLUMN outcome TEXT;",
    // 6: a run merged from shard reports (`report merge`, docs/scale.md): how many it was
    // made of (null: not a merge); and each case's calls as its wire timeline draws them
    // (JSON, `store::timeline`), so a run's page draws them once the daemon's journal and
    // the run's events are gone (docs/web.md).
    "ALTER TABLE runs ADD COLUMN shards INTEGER;
     ALTER TABLE cases ADD COLUMN timeline TEXT;",
];

/// Tables a store of any version this build knows may hold.
const TABLES: &[&str] = &["runs", "cases", "cells"];

/// The schema version this build writes.
pub fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Opens `path` read-write after checking it is ours (or new) and undamaged, and migrates
/// it. `alone`: no other process has it open, so its `-wal` is a dead one's, safe to read.
pub fn open(path: &Path, alone: bool) -> Result<Connection, StoreError> {
    let page_size = check_header(path)?;
    check::wal(path, page_size, alone)?;
    if page_size.is_some() {
        let ro = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| StoreError::corrupt(path, e))?;
        check_contents(&ro, path)?;
        check::pages(&ro, path)?;
    }
    let mut conn = Connection::open(path).map_err(|e| StoreError::sqlite(path, e))?;
    configure(&conn, path)?;
    migrate(&mut conn, path)?;
    // WAL after the first migration: the application id is then in the main file's header
    // (a WAL database updates its header only at checkpoints).
    // Set once and kept by the file; set again only if it is not WAL (it needs a lock).
    let journal = |sql: &str| -> Result<String, StoreError> {
        conn.query_row(sql, [], |r| r.get(0))
            .map_err(|e| StoreError::sqlite(path, e))
    };
    let mode = journal("PRAGMA journal_mode").and_then(|m| {
        if m.eq_ignore_ascii_case("wal") {
            Ok(m)
        } else {
            journal("PRAGMA journal_mode = WAL")
        }
    })?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "the run store is not in WAL mode");
    }
    Ok(conn)
}

/// A read connection on a store `open` has already checked and migrated.
pub fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::sqlite(path, e))?;
    configure(&conn, path)?;
    Ok(conn)
}

fn configure(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    // A reader or a second process waits for a lock instead of failing at once.
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .and_then(|()| conn.pragma_update(None, "foreign_keys", true))
        .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
        .map_err(|e| StoreError::sqlite(path, e))
}

/// The database's page size, or `None` for a missing or empty file (a new store); an
/// error for a file whose first 100 bytes are not an SQLite header carrying flakestorm's
/// application id.
fn check_header(path: &Path) -> Result<Option<u32>, StoreError> {
    // `files::open`: a FIFO or device in the store's place is refused, not waited on.
    let mut file = match crate::files::open(path) {
        Ok(f) => f,
        Err(e) if e.not_found() => return Ok(None),
        Err(e) => {
            return Err(StoreError::Io {
                path: path.into(),
                reason: e.reason(),
            });
        }
    };
    let mut head = Vec::with_capacity(100);
    (&mut file)
        .take(100)
        .read_to_end(&mut head)
        .map_err(|e| StoreError::io(path, e))?;
    if head.is_empty() {
        return Ok(None);
    }
    if head.len() < 100 || !head.starts_with(b"SQLite format 3\0") {
        return Err(StoreError::not_ours(path, "it is not an SQLite database"));
    }
    let id = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    if id != APPLICATION_ID {
        let why = format!("an SQLite database of another application (application_id {id:#x})");
        return Err(StoreError::not_ours(path, &why));
    }
    // Big-endian at offset 16; 1 stands for 65536.
    let size = u32::from(u16::from_be_bytes([head[16], head[17]]));
    Ok(Some(if size == 1 { 65536 } else { size }))
}

/// Our application id, but is it a version and a set of tables this build knows?
fn check_contents(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| StoreError::corrupt(path, e))?;
    if version > latest() {
        return Err(StoreError::Newer {
            path: path.to_path_buf(),
            found: version,
            known: latest(),
        });
    }
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .map_err(|e| StoreError::corrupt(path, e))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| StoreError::corrupt(path, e))?;
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !TABLES.contains(&n.as_str()) && !n.starts_with("sqlite_"))
        .collect();
    if let Some(first) = unknown.first() {
        let why = format!("it has a table flakestorm does not know (`{first}`)");
        return Err(StoreError::not_ours(path, &why));
    }
    Ok(())
}

/// Applies the migrations past the file's `user_version`, one transaction each. Each step
/// takes the write lock first and reads the version again inside it, so two processes
/// opening a new store at once do not both apply it.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let target = i as i64 + 1;
        let mut step = || -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version >= target {
                return Ok(());
            }
            if i == 0 {
                tx.pragma_update(None, "application_id", APPLICATION_ID)?;
            }
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", target)?;
            tx.commit()
        };
        step().map_err(|e| StoreError::Migration {
            path: path.to_path_buf(),
            version: target,
            source: std::sync::Arc::new(e),
        })?;
    }
    Ok(())
}
