//! Which process owns a running run, so that any process sharing the data_dir can tell a
//! run whose process died from one another live process is still writing (a daemon and a
//! CLI, or two daemons). Each process with a writer holds an exclusive OS lock on
//! `data_dir/locks/<token>.lock` for as long as its writer lives; the OS releases it when
//! the process dies, SIGKILL included, so no lease or heartbeat can go stale or be
//! mistimed. A `running` or `queued` run whose owner's lock can be taken (or is gone) is
//! marked `interrupted`, with the cases it had finished: at every open, by every writer's
//! periodic sweep, and as readers see it (`Store::list`, `Store::get`).

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::StoreError;
use super::id::{now_ms, random_hex};

/// Why an interrupted run ended, as stored in its `reason`.
pub const INTERRUPTED: &str = "the process running it stopped before it ended";

/// This process's lock; released (and its file removed) when dropped.
#[derive(Debug)]
pub struct OwnerLock {
    pub token: String,
    path: PathBuf,
    _file: File,
}

impl OwnerLock {
    pub fn take(data_dir: &Path) -> Result<OwnerLock, StoreError> {
        let dir = data_dir.join("locks");
        crate::files::create_private_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let token = format!("{}-{}", std::process::id(), random_hex(4));
        let path = dir.join(format!("{token}.lock"));
        let file = File::create(&path).map_err(|e| StoreError::io(&path, e))?;
        file.try_lock().map_err(|e| StoreError::Io {
            path: path.clone(),
            reason: format!("cannot lock: {e}"),
        })?;
        Ok(OwnerLock {
            token,
            path,
            _file: file,
        })
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Waits for this process's turn to open the store (`data_dir/locks/open.lock`, held
/// until the returned file is dropped).
pub fn opening(data_dir: &Path) -> Result<File, StoreError> {
    let dir = data_dir.join("locks");
    crate::files::create_private_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let path = dir.join("open.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io(&path, e))?;
    file.lock().map_err(|e| StoreError::Io {
        path: path.clone(),
        reason: format!("cannot lock: {e}"),
    })?;
    Ok(file)
}

/// Whether no other process has the store open: no lock under `data_dir/locks/` is held
/// but `me`'s. Exact while this process holds `opening`'s lock (no one is between taking
/// the turn and its own lock); a lock that cannot be checked counts as held.
pub fn alone(data_dir: &Path, me: Option<&str>) -> bool {
    let Ok(entries) = std::fs::read_dir(data_dir.join("locks")) else {
        return true;
    };
    let mine = me.map(|t| format!("{t}.lock"));
    entries.flatten().all(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".lock") || name == "open.lock" || mine.as_deref() == Some(&name) {
            return true;
        }
        File::open(e.path()).is_ok_and(|f| f.try_lock().is_ok())
    })
}

/// Whether the process that owns `token` is gone: its lock file is missing or can be
/// locked. A dead owner's lock file is removed.
pub fn owner_gone(data_dir: &Path, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let path = data_dir.join("locks").join(format!("{token}.lock"));
    let Ok(file) = File::open(&path) else {
        return true;
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = std::fs::remove_file(&path);
            true
        }
        Err(_) => false,
    }
}

/// Marks the runs of dead processes `interrupted`; returns their ids. A run whose process
/// ended it between the look and the mark keeps its status: the owner's last write
/// committed before its lock went, and the mark only applies to a run still open.
pub fn interrupt_orphans(
    conn: &Connection,
    data_dir: &Path,
    db: &Path,
    me: &str,
) -> Result<Vec<String>, StoreError> {
    let sql = "SELECT id, owner FROM runs WHERE status IN ('queued', 'running')";
    let open: Vec<(String, Option<String>)> = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(|e| StoreError::sqlite(db, e))?;
    let mut gone = vec![];
    for (id, owner) in open {
        if owner.as_deref() != Some(me) && owner_gone(data_dir, owner.as_deref()) {
            gone.push(id);
        }
    }
    let (now, mut marked) = (now_ms(), vec![]);
    for id in gone {
        let n = conn
            .prepare_cached(
                "UPDATE runs SET status = 'interrupted', finished_ms = ?2, reason = ?3
                 WHERE id = ?1 AND status IN ('queued', 'running')",
            )
            .and_then(|mut s| s.execute(params![id, now, INTERRUPTED]))
            .map_err(|e| StoreError::sqlite(db, e))?;
        if n > 0 {
            marked.push(id);
        }
    }
    Ok(marked)
}
