//! Processes sharing a data_dir: a run whose process died while another lives is marked
//! `interrupted`, with the cases it finished, by the live one, without a restart: at once
//! when it is read, and stored so by the live writer's sweep. The test: two real
//! `flakestorm serve` on one data_dir, the second SIGKILLed mid-run.

mod common;

use std::path::Path;

use common::cli::{flakestorm, write_config};
use common::origin;
use common::serve::{Serve, one_at_a_time};
use common::within;
use flakestorm::store::{
    CaseRecord, DB_FILE, INTERRUPTED, NewRun, RunId, RunKind, RunStatus, Store,
};
use serde_json::{Value, json};

fn running(store: &Store) -> RunId {
    store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    })
}

fn case(input: &str) -> CaseRecord {
    CaseRecord {
        phase: flakestorm::store::RunKind::Chaos,
        scenario: "s".into(),
        input: input.into(),
        answer: Some("ok".into()),
        error: None,
        verdict: None,
        checks: json!([]),
        faults: json!([]),
        exchanges: Value::Null,
        latency_ms: 1.0,
        trial: None,
        outcome: None,
        timeline: None,
    }
}

/// The status stored in the database, read on a connection of its own.
fn stored_status(data: &Path, id: &str) -> String {
    let conn = rusqlite::Connection::open_with_flags(
        data.join(DB_FILE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row("SELECT status FROM runs WHERE id = ?1", [id], |r| r.get(0))
        .unwrap()
}

async fn until_stored(data: &Path, id: &str, status: &str) {
    within("the live writer's sweep", async {
        while stored_status(data, id) != status {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// A peer (its own `Store`: its own lock, as another process has) dies; dropping its last
/// handle releases its lock as dying does. Nothing reads: the live writer's sweep marks it.
#[tokio::test]
async fn a_dead_peers_run_is_marked_interrupted_by_a_live_writers_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let live = Store::open(dir.path()).unwrap();
    let peer = Store::open(dir.path()).unwrap();
    let run = running(&peer);
    peer.case_finished(&run, case("one"));
    let ended = running(&peer);
    peer.finish_run(&ended, RunStatus::Failed, Default::default(), None);
    peer.flush().await.unwrap();
    drop(peer);
    until_stored(dir.path(), run.as_str(), "interrupted").await;
    let got = live.get(run.as_str()).unwrap().unwrap();
    assert_eq!((got.status, got.done), (RunStatus::Interrupted, 1));
    assert_eq!(got.reason.as_deref(), Some(INTERRUPTED));
    assert_eq!(stored_status(dir.path(), ended.as_str()), "failed");
    assert!(
        live.interrupted().is_empty(),
        "none at open: the peer was alive"
    );
}

/// Read before any sweep: `get` and `list` already say `interrupted`; a live peer's run
/// still says `running`.
#[tokio::test]
async fn a_dead_peers_run_reads_interrupted_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let live = Store::open(dir.path()).unwrap();
    let (peer, other) = (
        Store::open(dir.path()).unwrap(),
        Store::open(dir.path()).unwrap(),
    );
    let run = running(&peer);
    let alive = running(&other);
    peer.flush().await.unwrap();
    other.flush().await.unwrap();
    assert_eq!(
        live.get(run.as_str()).unwrap().unwrap().status,
        RunStatus::Running
    );
    drop(peer);
    assert_eq!(
        live.get(run.as_str()).unwrap().unwrap().status,
        RunStatus::Interrupted
    );
    let page = live.list(&Default::default()).unwrap();
    let status = |id: &RunId| {
        page.runs
            .iter()
            .find(|r| r.id == id.as_str())
            .unwrap()
            .status
    };
    assert_eq!(status(&run), RunStatus::Interrupted);
    assert_eq!(status(&alive), RunStatus::Running);
    let filter = flakestorm::store::Filter {
        status: Some(RunStatus::Running),
        ..Default::default()
    };
    let still: Vec<String> = live
        .list(&filter)
        .unwrap()
        .runs
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(still, [alive.to_string()], "`running` no more");
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

async fn serve(dir: &Path) -> Serve {
    common::serve::serve(dir, &["-c", "flakestorm.yaml"], "warn", false).await
}

#[tokio::test]
async fn a_killed_peers_run_is_interrupted_on_the_live_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "");
    let first = serve(d).await;
    let second = serve(d).await;

    // The agent answers its first call and holds the others until the test ends.
    let (agent, permits) = origin::held_agent(1).await;
    let id = second.submit("chaos", &one_at_a_time(&agent)).await;
    let events = second.until_event(&id, "case").await;
    // Both daemons share the data_dir, and so its token.
    let http = second.client();
    // `GET /v1/runs` flushes the second's store: its finished case is committed.
    http.get(second.url("/v1/runs")).send().await.unwrap();
    let get = async |url: String| json_of(http.get(url).send().await.unwrap()).await;
    let seen = get(first.url(&format!("/v1/runs/{id}"))).await;
    assert_eq!(
        (&seen["status"], &seen["done"]),
        (&json!("running"), &json!(1)),
        "{seen}"
    );

    let mut child = second.child;
    child.start_kill().unwrap(); // SIGKILL
    within("the second serve dies", child.wait()).await.unwrap();
    drop(events);

    let run = get(first.url(&format!("/v1/runs/{id}"))).await;
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["done"], 1, "{run}");
    assert_eq!(run["reason"], INTERRUPTED, "{run}");
    let listed = get(first.url("/v1/runs")).await;
    assert_eq!(listed["runs"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["runs"][0]["status"], "interrupted", "{listed}");
    let data = d.join(".flakestorm");
    until_stored(&data, &id, "interrupted").await;
    let dd = data.to_str().unwrap();
    let (code, out, err) = flakestorm(&["runs", "list", "--data-dir", dd], d);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        line.contains("interrupted") && line.contains(" 1/3 "),
        "{out}"
    );
    permits.add_permits(10);
}
