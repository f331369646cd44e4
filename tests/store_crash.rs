//! A process killed with SIGKILL in the middle of a run: the next open of the store marks
//! the run `interrupted` with the cases it had finished, and the database is intact. The
//! killed process is this test binary run again as a child (`writer_child`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use flakestorm::store::{CaseRecord, NewRun, RunKind, RunStatus, Store};

const DIR_VAR: &str = "FLAKESTORM_TEST_STORE_CHILD_DIR";

fn case(i: usize) -> CaseRecord {
    CaseRecord {
        phase: RunKind::Chaos,
        scenario: "s".into(),
        input: format!("prompt {i}"),
        answer: Some("ok".into()),
        error: None,
        verdict: None,
        checks: serde_json::json!([]),
        faults: serde_json::json!([]),
        exchanges: serde_json::Value::Null,
        latency_ms: 1.0,
        trial: None,
        outcome: None,
        timeline: None,
    }
}

/// The child: starts a run, stores three cases, says so, then keeps writing until killed.
#[tokio::test]
#[ignore = "run by killed_mid_run_the_run_is_interrupted_with_its_cases as a child process"]
async fn writer_child() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let store = Store::open(std::path::Path::new(&dir)).unwrap();
    let id = store.begin_run(NewRun {
        kind: RunKind::Contract,
        config_digest: None,
        seed: Some(3),
        status: RunStatus::Running,
    });
    for i in 0..3 {
        store.case_finished(&id, case(i));
    }
    store.flush().await.unwrap();
    println!("ready {id}");
    // Writes in flight when the kill comes must not damage the file.
    for i in 3.. {
        store.case_finished(&id, case(i));
        if i % 100 == 0 {
            store.flush().await.unwrap();
        }
    }
}

#[tokio::test]
async fn killed_mid_run_the_run_is_interrupted_with_its_cases() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["writer_child", "--exact", "--ignored", "--nocapture"])
        .env(DIR_VAR, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let id = loop {
        let line = lines.next().expect("the child said ready").unwrap();
        if let Some(id) = line.strip_prefix("ready ") {
            break id.to_string();
        }
    };
    child.kill().unwrap(); // SIGKILL on unix
    child.wait().unwrap();

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.interrupted(), std::slice::from_ref(&id));
    let run = store.get(&id).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    let cases = store.cases(&id).unwrap();
    assert!(cases.len() >= 3, "{} cases", cases.len());
    let first: Vec<&str> = cases[..3].iter().map(|c| c.case.input.as_str()).collect();
    assert_eq!(first, ["prompt 0", "prompt 1", "prompt 2"]);
    assert_eq!(
        run.done as usize,
        cases.len(),
        "progress matches the cases kept"
    );
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}
