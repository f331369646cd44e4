//! Errors of the run store. Each names the file; those about a file that is not ours or
//! is damaged say how to move it aside, since flakestorm never overwrites or deletes it.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} is not flakestorm's run store: {why}. flakestorm leaves it untouched: move it \
         aside (`mv {path} {path}.bak`) or set data_dir to another folder"
    )]
    NotOurs { path: PathBuf, why: String },
    #[error(
        "{path} is corrupt ({reason}). flakestorm leaves it untouched: move it aside \
         (`mv {path} {path}.bak`, and its -wal beside it if there is one) and a new, empty \
         store is created at the next start"
    )]
    Corrupt { path: PathBuf, reason: String },
    /// A `-wal` SQLite would cut short or delete without a word (`check::wal`).
    #[error(
        "{wal} is damaged: {why}. flakestorm leaves it and {db} untouched: move the -wal \
         aside (`mv {wal} {wal}.bak`) to open the store without the writes it holds, or move \
         both aside for a new, empty store; keep the copies to recover from"
    )]
    DamagedWal {
        wal: PathBuf,
        db: PathBuf,
        why: String,
    },
    #[error(
        "{path} was written by a newer flakestorm (schema version {found}, this build knows \
         up to {known}): upgrade flakestorm, or move the file aside (`mv {path} {path}.bak`)"
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("{path}: migrating the run store to schema version {version}: {source}")]
    Migration {
        path: PathBuf,
        version: i64,
        source: std::sync::Arc<rusqlite::Error>,
    },
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    Sqlite { path: PathBuf, reason: String },
    /// A write the writer could not commit (a full disk, say); what was committed before
    /// stays.
    #[error("the run store could not save a write to {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("the run store's writer for {0} has stopped")]
    Closed(PathBuf),
    /// A data_dir (or its `runs/`) other users could change, or that another user owns:
    /// they could read or rewrite the run history, reports and the token.
    #[error(
        "{path}: {why}, so other users could read or change the run history, reports and \
         token in it: {fix}, or set control.allow_shared_data_dir: true to use it anyway"
    )]
    NotPrivate {
        path: PathBuf,
        why: String,
        fix: String,
    },
}

impl StoreError {
    pub(super) fn not_ours(path: &Path, why: &str) -> StoreError {
        StoreError::NotOurs {
            path: path.to_path_buf(),
            why: why.to_string(),
        }
    }

    pub(super) fn io(path: &Path, e: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    /// A file SQLite says is damaged or not a database is corrupt; anything else is an
    /// SQLite error on that file.
    pub(super) fn corrupt(path: &Path, e: rusqlite::Error) -> StoreError {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    pub(super) fn sqlite(path: &Path, e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => StoreError::corrupt(path, e),
            _ => StoreError::Sqlite {
                path: path.to_path_buf(),
                reason: e.to_string(),
            },
        }
    }
}
