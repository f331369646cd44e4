//! A damaged store is an error that names the file and says what to do, never an empty or
//! shortened history: checked as the store opens, before anything is written. SQLite itself
//! is silent about a `-wal` it cuts short (`wal`) and only reports a damaged page when a
//! query happens to read it, so every page is read once at open (`PRAGMA quick_check`:
//! structure and every row's format, without the slower cross-checks of indexes).

use std::path::Path;

use rusqlite::Connection;

use super::{StoreError, wal};

/// The `-wal` beside `db`: an error if SQLite would drop writes committed to it, or delete
/// it outright (a `-wal` whose database is missing or empty). Only read when no other
/// process has the store open (`alone`): a live writer's `-wal` changes under the reader.
pub fn wal(db: &Path, page_size: Option<u32>, alone: bool) -> Result<(), StoreError> {
    let path = wal::path_of(db);
    let damaged = |why: String| StoreError::DamagedWal {
        wal: path.clone(),
        db: db.to_path_buf(),
        why,
    };
    let Some(page_size) = page_size else {
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        if len > 0 {
            let why = format!(
                "it holds {len} bytes of writes, but {} beside it is missing or empty (SQLite \
                 would delete it)",
                db.display()
            );
            return Err(damaged(why));
        }
        return Ok(());
    };
    if !alone {
        return Ok(());
    }
    match wal::damage(&path, page_size) {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(damaged(why)),
        Err(e) => Err(StoreError::io(&path, e)),
    }
}

/// `PRAGMA quick_check` on a read connection: the first problems it finds, as `Corrupt`.
pub fn pages(conn: &Connection, db: &Path) -> Result<(), StoreError> {
    let found: Vec<String> = conn
        .prepare("PRAGMA quick_check(3)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| StoreError::sqlite(db, e))?;
    if found.len() == 1 && found[0] == "ok" {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        path: db.to_path_buf(),
        reason: format!("PRAGMA quick_check: {}", found.join("; ")),
    })
}
