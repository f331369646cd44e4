//! SIGKILL `flakestorm serve` in the middle of a run submitted over `/v1/runs`: started
//! again, its store opens and the run is `interrupted` with the case it had finished; the
//! database passes `PRAGMA integrity_check`.

mod common;

use common::cli::{flakestorm, write_config};
use common::origin;
use common::serve::Serve;
use common::serve::one_at_a_time;
use common::within;
use serde_json::Value;

async fn serve(dir: &std::path::Path) -> Serve {
    common::serve::serve(dir, &["-c", "flakestorm.yaml"], "warn", false).await
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_daemon_killed_mid_run_leaves_the_run_interrupted_with_its_finished_case() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "");
    let daemon = serve(d).await;

    // The agent answers its first call and holds the second until the test ends.
    let (agent, permits) = origin::held_agent(1).await;
    let id = daemon.submit("chaos", &one_at_a_time(&agent)).await;
    let events = daemon.until_event(&id, "case").await;
    let http = daemon.client();
    // `GET /v1/runs` flushes the store: the finished case is committed before the kill.
    let listed = json_of(http.get(daemon.url("/v1/runs")).send().await.unwrap()).await;
    assert_eq!(listed["runs"][0]["status"], "running", "{listed}");
    assert_eq!(listed["runs"][0]["done"], 1, "{listed}");

    let mut child = daemon.child;
    child.start_kill().unwrap(); // SIGKILL
    let status = within("serve dies", child.wait()).await.unwrap();
    assert!(!status.success());
    drop(events);

    // Started again, the daemon opens the store and tells the run's end.
    let again = serve(d).await;
    let run = json_of(
        http.get(again.url(&format!("/v1/runs/{id}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["done"], 1, "{run}");
    let mut child = again.child;
    child.start_kill().unwrap();
    within("serve dies", child.wait()).await.unwrap();

    let data_dir = d.join(".flakestorm");
    let dd = data_dir.to_str().unwrap();
    let (code, out, err) = flakestorm(&["runs", "show", &id, "--data-dir", dd, "--json"], d);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["run"]["status"], "interrupted");
    let cases = shown["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{out}");
    let input = cases[0]["input"].as_str().unwrap();
    assert!(["one", "two", "three"].contains(&input), "{input}");
    assert_eq!(cases[0]["answer"], "fine");

    let db = data_dir.join(flakestorm::store::DB_FILE);
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    permits.add_permits(10);
}
