//! A damaged run store is an error that names the file and says what to do, for `serve`,
//! `runs list|show|compare` (exit 2) and `Store::open`, and the files are left as they
//! were: a `-wal` whose frames SQLite would silently cut short, one whose header is
//! garbage, one without its database, and a damaged page in the database file. A `-wal`
//! a killed writer leaves is not damage: its runs are read.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{flakestorm, write_config};
use common::within;
use flakestorm::store::{CaseRecord, DB_FILE, NewRun, RunKind, RunStatus, Store, StoreError};
use rusqlite::config::DbConfig;

/// A store whose database file holds run `kept`, and whose `-wal` holds three more runs,
/// each its own transaction, never copied into the database file: what a process killed
/// before a checkpoint leaves. Returns the `-wal`'s path and the four ids.
async fn crashed_store(data: &Path) -> (PathBuf, Vec<String>) {
    let store = Store::open(data).unwrap();
    let kept = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
    store.finish_run(&kept, RunStatus::Passed, Default::default(), None);
    store.flush().await.unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(data.join(DB_FILE)).unwrap();
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let mut ids = vec![kept.to_string()];
    for i in 1..=3 {
        let id = format!("20261124-00000{i}-00000{i}");
        conn.execute(
            "INSERT INTO runs (id, kind, started_ms, status) VALUES (?1, 'contract', ?2, 'passed')",
            rusqlite::params![id, 1_000 + i],
        )
        .unwrap();
        ids.push(id);
    }
    drop(conn);
    let wal = data.join(format!("{DB_FILE}-wal"));
    assert!(std::fs::metadata(&wal).unwrap().len() > 4096);
    (wal, ids)
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x5A;
    std::fs::write(path, bytes).unwrap();
}

fn data_dir_arg(data: &Path) -> [&str; 2] {
    ["--data-dir", data.to_str().unwrap()]
}

/// `runs list`, `show` and `compare` each exit 2 with `expect` and how to move `file`
/// aside, and leave the database and its `-wal` byte-identical.
fn every_runs_command_refuses(dir: &Path, data: &Path, file: &Path, expect: &str) {
    let db = data.join(DB_FILE);
    let wal = data.join(format!("{DB_FILE}-wal"));
    let before = (std::fs::read(&db).ok(), std::fs::read(&wal).ok());
    let d = data_dir_arg(data);
    for args in [
        vec!["runs", "list"],
        vec!["runs", "show", "20261124-000001-000001"],
        vec![
            "runs",
            "compare",
            "20261124-000001-000001",
            "20261124-000002-000002",
        ],
    ] {
        let (code, out, err) = flakestorm(&[&args[..], &d[..]].concat(), dir);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(err.contains(expect), "{err}");
        assert!(err.contains(&format!("mv {}", file.display())), "{err}");
    }
    let after = (std::fs::read(&db).ok(), std::fs::read(&wal).ok());
    assert!(before == after, "the files are left as they were");
}

/// `flakestorm serve` on `dir`'s config exits at once, saying `expect` about `file` (as
/// the config names it); a serve that starts anyway is killed when the deadline fails the
/// test.
async fn serve_refuses(dir: &Path, file: &str, expect: &str) {
    write_config(dir, "data_dir: data\n");
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["serve", "-c", "flakestorm.yaml"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = within("serve refuses the store", child.wait_with_output())
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(file), "{err}");
    assert!(err.contains(expect), "{err}");
}

#[tokio::test]
async fn a_wal_a_killed_writer_left_is_read_with_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_, ids) = crashed_store(&data).await;
    let store = Store::open(&data).unwrap();
    let listed: Vec<String> = store
        .list(&Default::default())
        .unwrap()
        .runs
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(ids.iter().all(|id| listed.contains(id)), "{listed:?}");
}

#[tokio::test]
async fn a_damaged_wal_is_reported_by_open_runs_and_serve_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (wal, _) = crashed_store(&data).await;
    // A byte of the first frame's page: SQLite would drop every run in the -wal.
    flip(&wal, 32 + 24 + 100);
    let err = Store::open(&data).expect_err("a damaged -wal is refused");
    assert!(matches!(err, StoreError::DamagedWal { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("frame 1 of its"), "{msg}");
    assert!(msg.contains("a transaction committed at frame"), "{msg}");
    every_runs_command_refuses(dir.path(), &data, &wal, "is damaged: frame 1 of its");
    serve_refuses(dir.path(), "data/flakestorm.db-wal", "is damaged").await;
}

#[tokio::test]
async fn a_wal_whose_header_is_garbage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (wal, _) = crashed_store(&data).await;
    flip(&wal, 20); // a salt: the header's checksum no longer matches
    every_runs_command_refuses(dir.path(), &data, &wal, "its header is damaged");
}

#[tokio::test]
async fn a_wal_whose_database_was_moved_away_is_reported_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (wal, _) = crashed_store(&data).await;
    std::fs::rename(data.join(DB_FILE), dir.path().join("moved.db")).unwrap();
    let before = std::fs::read(&wal).unwrap();
    let err = Store::open(&data).expect_err("refused").to_string();
    assert!(err.contains("is missing or empty"), "{err}");
    assert_eq!(
        std::fs::read(&wal).unwrap(),
        before,
        "SQLite did not delete it"
    );
}

#[tokio::test]
async fn a_damaged_page_stops_serve_and_the_runs_commands() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Store::open(&data).unwrap();
    let id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
    for i in 0..300 {
        let case = CaseRecord {
            phase: RunKind::Chaos,
            scenario: "s".into(),
            input: format!("prompt {i}"),
            answer: Some("x".repeat(1000)),
            error: None,
            verdict: None,
            checks: serde_json::json!([]),
            faults: serde_json::json!([]),
            exchanges: serde_json::Value::Null,
            latency_ms: 1.0,
            trial: None,
            outcome: None,
            timeline: None,
        };
        store.case_finished(&id, case);
    }
    store.flush().await.unwrap();
    drop(store);
    let db = data.join(DB_FILE);
    // Everything in the database file itself, whoever closed it last.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages > 50, "{pages} pages");
    // A page of the cases table, far from the schema that open reads anyway.
    let at = pages / 2 * 4096;
    bytes[at..at + 4096].fill(0xA5);
    std::fs::write(&db, bytes).unwrap();
    let err = Store::open(&data).expect_err("refused").to_string();
    assert!(err.contains("is corrupt (PRAGMA quick_check: "), "{err}");
    every_runs_command_refuses(dir.path(), &data, &db, "is corrupt");
    serve_refuses(dir.path(), "data/flakestorm.db", "is corrupt").await;
}
