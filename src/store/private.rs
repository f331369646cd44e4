//! A data_dir that is the user's alone (issue #51): it holds the run history, every run's
//! reports and tapes (the agent's prompts, answers and traffic) and the control token. A
//! data_dir or `runs/` folder that already exists and that other users may write, or that
//! another user owns, is refused at start (a warning instead with
//! `control.allow_shared_data_dir`): whoever can write it can swap the files in it. One
//! others may only read is used with a warning saying how to close it. What flakestorm
//! makes itself is private: folders 0700, files 0600, the database and its -wal too.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::StoreError;

/// Checks `data_dir` and its `runs/`, where they exist.
pub fn check_private(data_dir: &Path, allow_shared: bool) -> Result<(), StoreError> {
    for dir in [data_dir.to_path_buf(), data_dir.join("runs")] {
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue; // made 0700 when needed
        };
        let me = rustix::process::geteuid().as_raw();
        let mode = meta.permissions().mode() & 0o777;
        let shown = dir.display();
        let problem = if meta.uid() != me {
            Some((
                format!(
                    "it is owned by uid {}, not by this user (uid {me})",
                    meta.uid()
                ),
                "use a data_dir of your own".to_string(),
            ))
        } else if mode & 0o022 != 0 {
            Some((
                format!("other users may write it (mode {mode:o})"),
                format!("run `chmod go-w {shown}`"),
            ))
        } else {
            None
        };
        match problem {
            Some((why, fix)) if !allow_shared => {
                return Err(StoreError::NotPrivate {
                    path: dir.clone(),
                    why,
                    fix,
                });
            }
            Some((why, _)) => tracing::warn!(
                "{shown}: {why}; used anyway (control.allow_shared_data_dir): other users may \
                 read or change its runs"
            ),
            None if mode & 0o077 != 0 => tracing::warn!(
                "{shown}: other users may list it (mode {mode:o}); run `chmod 700 {shown}` to \
                 keep the names of its runs to yourself"
            ),
            None => {}
        }
    }
    Ok(())
}

/// The database file made 0600 before SQLite first opens it, or made 0600 if it is ours
/// and others could read it (SQLite gives its -wal and -shm the database's mode).
pub(super) fn private_db(path: &Path) -> Result<(), StoreError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path);
            match made {
                Ok(_) => Ok(()),
                // Another process made it first: it is checked as any existing one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(StoreError::io(path, e)),
            }
        }
        Err(e) => Err(StoreError::io(path, e)),
        Ok(meta) => {
            let me = rustix::process::geteuid().as_raw();
            if meta.is_file() && meta.uid() == me && meta.permissions().mode() & 0o077 != 0 {
                for file in [
                    path.to_path_buf(),
                    wal_of(path, "-wal"),
                    wal_of(path, "-shm"),
                ] {
                    if file.exists() {
                        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                            .map_err(|e| StoreError::io(&file, e))?;
                    }
                }
            }
            Ok(())
        }
    }
}

fn wal_of(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_folder_others_may_write_is_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_private(&data, false).unwrap_err().to_string();
        assert!(e.contains("other users may write it (mode 777)"), "{e}");
        assert!(e.contains("control.allow_shared_data_dir"), "{e}");
        check_private(&data, true).unwrap();
        // Its runs/ too.
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir(data.join("runs")).unwrap();
        std::fs::set_permissions(data.join("runs"), std::fs::Permissions::from_mode(0o775))
            .unwrap();
        let e = check_private(&data, false).unwrap_err().to_string();
        assert!(e.contains("runs") && e.contains("mode 775"), "{e}");
        // Readable only: used (with a warning).
        std::fs::set_permissions(data.join("runs"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        check_private(&data, false).unwrap();
    }

    #[tokio::test]
    async fn the_store_and_run_folders_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let store = super::super::Store::open(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(store.path()), 0o600);
        let id = store.begin_run(super::super::NewRun {
            kind: super::super::RunKind::Chaos,
            config_digest: None,
            seed: None,
            status: super::super::RunStatus::Running,
        });
        let run = store.run_dir(&id).unwrap();
        assert_eq!((mode(&data.join("runs")), mode(&run)), (0o700, 0o700));
        store.flush().await.unwrap();
        let wal = wal_of(store.path(), "-wal");
        assert_eq!(
            mode(&wal),
            0o600,
            "SQLite gives the -wal the database's mode"
        );
    }

    #[test]
    fn a_loose_database_of_ours_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("flakestorm.db");
        std::fs::write(&db, "").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        private_db(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
    }
}
