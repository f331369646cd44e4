//! `flakestorm.db` alone (copied without its `-wal`) holds the runs: after a clean stop of
//! `serve` (SIGTERM), at the end of a CLI run, when the last `Store` handle drops, on
//! `Store::checkpoint`, and within seconds on a writer that went idle.

mod common;

use std::path::Path;

use common::cli::{flakestorm, write_config};
use common::origin::{self, text};
use common::within;
use flakestorm::store::{DB_FILE, NewRun, RunKind, RunStatus, Store};

/// The ids of the runs `flakestorm.db` of `data` holds on its own: the file copied into
/// a new folder without its `-wal`, read there. An empty list when the copy is not yet a
/// database (a checkpoint was writing it).
fn runs_in_the_file_alone(data: &Path) -> Vec<String> {
    let copy = tempfile::tempdir().unwrap();
    let db = copy.path().join(DB_FILE);
    std::fs::copy(data.join(DB_FILE), &db).unwrap();
    let read = || -> rusqlite::Result<Vec<String>> {
        let conn = rusqlite::Connection::open(&db)?;
        let mut stmt = conn.prepare("SELECT id FROM runs ORDER BY id")?;
        stmt.query_map([], |r| r.get(0))?.collect()
    };
    read().unwrap_or_default()
}

fn wal_len(data: &Path) -> u64 {
    std::fs::metadata(data.join(format!("{DB_FILE}-wal"))).map_or(0, |m| m.len())
}

fn begin(store: &Store) -> String {
    let id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
    store.finish_run(&id, RunStatus::Passed, Default::default(), None);
    id.to_string()
}

#[tokio::test]
async fn the_last_handle_dropped_leaves_every_run_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let ids = [begin(&store), begin(&store)];
    let clone = store.clone();
    drop(store);
    drop(clone); // no flush: the writer drains, commits and copies before the drop returns
    let mut ids = ids.to_vec();
    ids.sort();
    assert_eq!(runs_in_the_file_alone(dir.path()), ids);
    assert_eq!(wal_len(dir.path()), 0, "the -wal is emptied");
}

#[tokio::test]
async fn checkpoint_copies_the_runs_into_the_database_file_and_the_store_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let first = begin(&store);
    store.checkpoint().await.unwrap();
    assert_eq!(
        runs_in_the_file_alone(dir.path()),
        std::slice::from_ref(&first)
    );
    assert_eq!(wal_len(dir.path()), 0);
    let second = begin(&store);
    store.flush().await.unwrap();
    assert_eq!(store.list(&Default::default()).unwrap().runs.len(), 2);
    // Idle for a second after writing, the writer copies on its own.
    within("the idle writer's checkpoint", async {
        while !runs_in_the_file_alone(dir.path()).contains(&second) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// An agent that answers every call at once.
async fn agent() -> origin::Origin {
    origin::start(None, |_req| async { text(r#"{"result": "fine"}"#) }).await
}

fn run_config(agent: &origin::Origin) -> String {
    format!(
        "agent: {{endpoint: '{}'}}\ngolden_prompts: [one, two]\n\
         invariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n",
        agent.http_url("/invoke")
    )
}

#[tokio::test]
async fn a_cli_run_leaves_its_run_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent().await;
    write_config(
        dir.path(),
        &format!("data_dir: data\n{}", run_config(&agent)),
    );
    let d = dir.path().to_path_buf();
    let (_, out, err) =
        tokio::task::spawn_blocking(move || flakestorm(&["run", "--chaos-only", "--quiet"], &d))
            .await
            .unwrap();
    let data = dir.path().join("data");
    let alone = runs_in_the_file_alone(&data);
    assert_eq!(alone.len(), 1, "{out}{err}");
    assert_eq!(wal_len(&data), 0);
}

#[tokio::test]
async fn serve_stopped_with_sigterm_leaves_its_runs_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "data_dir: data\n");
    let daemon = common::serve::serve(d, &["-c", "flakestorm.yaml"], "warn", false).await;
    let agent = agent().await;
    let id = daemon.submit("chaos", &run_config(&agent)).await;
    drop(daemon.until_event(&id, "done").await);
    let pid = daemon.child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut child = daemon.child;
    let status = within("serve stops", child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    let data = d.join("data");
    assert_eq!(runs_in_the_file_alone(&data), std::slice::from_ref(&id));
    assert_eq!(wal_len(&data), 0);
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(data.join(DB_FILE), copy.path().join(DB_FILE)).unwrap();
    let c = copy.path().to_str().unwrap();
    let (code, out, err) = flakestorm(&["runs", "show", &id, "--data-dir", c], d);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("run {id}  chaos  ")), "{out}");
    assert!(out.contains("cases     2/2"), "{out}");
}
