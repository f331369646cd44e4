//! `flakestorm runs list|show|compare` as a user runs them, over a store populated through
//! the public `Store` API in a temporary data_dir.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::flakestorm;
use flakestorm::store::{
    CaseRecord, CellRecord, NewRun, RunId, RunKind, RunStatus, Store, Verdict,
};

fn begin(store: &Store, kind: RunKind) -> RunId {
    store.begin_run(NewRun {
        kind,
        config_digest: Some("sha256:0123".into()),
        seed: Some(7),
        status: RunStatus::Running,
    })
}

fn cell(invariant: &str, severity: &str, verdict: Verdict) -> CellRecord {
    CellRecord {
        phase: RunKind::Contract,
        scenario: "search-down".into(),
        invariant: invariant.into(),
        severity: severity.parse().unwrap(),
        verdict,
        reason: format!("{invariant}: {verdict}"),
        consistency: None,
    }
}

fn case(input: &str, verdict: Verdict) -> CaseRecord {
    CaseRecord {
        phase: RunKind::Contract,
        scenario: "search-down".into(),
        input: input.into(),
        answer: Some("the search tool is unavailable".into()),
        error: None,
        verdict: Some(verdict),
        checks: serde_json::json!([]),
        faults: serde_json::json!([{"rule": "web_search", "mode": "error"}]),
        exchanges: serde_json::Value::Null,
        latency_ms: 40.0,
        trial: None,
        outcome: None,
        timeline: None,
    }
}

/// A passing contract run, then one where the `admits-outage` cell regressed (and
/// `answers`, a failure before, is fixed), and a chaos run.
async fn populate(dir: &Path) -> (String, String) {
    let store = Store::open(dir).unwrap();
    let a = begin(&store, RunKind::Contract);
    store.case_finished(&a, case("What is up?", Verdict::Pass));
    store.cell(&a, cell("admits-outage", "high", Verdict::Pass));
    store.cell(&a, cell("answers", "low", Verdict::Fail));
    store.cell(&a, cell("polite", "medium", Verdict::Pass));
    let scores = BTreeMap::from([("contract".to_string(), 90.0)]);
    store.finish_run(&a, RunStatus::Passed, scores, None);
    let b = begin(&store, RunKind::Contract);
    store.planned(&b, 3);
    store.case_finished(&b, case("What is up?", Verdict::Pass));
    store.cell(&b, cell("admits-outage", "high", Verdict::Fail));
    store.cell(&b, cell("answers", "low", Verdict::Pass));
    store.cell(&b, cell("polite", "medium", Verdict::Pass));
    let report = store.run_dir(&b).unwrap().join("report.json");
    std::fs::write(&report, "{}").unwrap();
    store.set_artifact(&b, "json", &report);
    let scores = BTreeMap::from([("contract".to_string(), 72.5)]);
    let why = Some("critical check `admits-outage` failed".to_string());
    store.finish_run(&b, RunStatus::Failed, scores, why);
    let c = begin(&store, RunKind::Chaos);
    store.finish_run(&c, RunStatus::Passed, BTreeMap::new(), None);
    store.flush().await.unwrap();
    (a.to_string(), b.to_string())
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let data = dir.join("data");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--data-dir", data.to_str().unwrap()]);
    flakestorm(&all, dir)
}

#[tokio::test]
async fn list_show_and_compare_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = populate(&dir.path().join("data")).await;

    let (code, out, err) = run(dir.path(), &["runs", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ID "), "{out}");
    assert_eq!(out.lines().count(), 4, "a header and three runs:\n{out}");
    let line_b = out.lines().find(|l| l.starts_with(&b)).unwrap();
    assert!(
        line_b.contains("failed") && line_b.contains("1/3") && line_b.contains("contract 72.5"),
        "{line_b}"
    );
    let ids: Vec<&str> = out.lines().skip(1).map(|l| &l[..22]).collect();
    assert_eq!(ids[1..], [b.as_str(), a.as_str()], "newest first:\n{out}");

    let (code, out, _) = run(
        dir.path(),
        &["runs", "list", "--kind", "contract", "--json"],
    );
    assert_eq!(code, 0);
    let page: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [b.as_str(), a.as_str()],
        "contract runs only, newest first"
    );

    let (code, out, _) = run(
        dir.path(),
        &["runs", "list", "--status", "failed", "--limit", "1"],
    );
    assert_eq!(code, 0);
    assert!(out.contains(&b) && !out.contains(&a), "{out}");

    let (code, out, err) = run(dir.path(), &["runs", "show", &b]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("reason    critical check `admits-outage` failed"),
        "{out}"
    );
    assert!(
        out.contains("artifact  json: ") && out.contains("report.json"),
        "{out}"
    );
    assert!(
        out.contains("fail           high      search-down / admits-outage"),
        "{out}"
    );

    let (code, out, err) = run(dir.path(), &["runs", "compare", &a, &b]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[2].starts_with("contract      90.0    72.5   -17.5"),
        "{out}"
    );
    assert!(
        lines[3].starts_with(
            "REGRESSION [contract] cell search-down / admits-outage (high): pass → fail"
        ),
        "the regressed cell is listed first:\n{out}"
    );
    assert!(lines[4].starts_with("fixed"), "{out}");
    assert_eq!(
        lines.len(),
        5,
        "the unchanged cell and case are not listed:\n{out}"
    );

    let (code, out, _) = run(dir.path(), &["runs", "compare", &a, &b, "--json"]);
    assert_eq!(code, 0);
    let cmp: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(cmp["changes"][0]["kind"], "regression");
    assert_eq!(cmp["changes"][0]["name"], "admits-outage");
    assert_eq!(cmp["deltas"][0]["delta"], -17.5);
}

#[tokio::test]
async fn an_unknown_run_id_exits_2_and_says_where_the_runs_are() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = populate(&dir.path().join("data")).await;
    for args in [
        vec!["runs", "show", "nope"],
        vec!["runs", "compare", &a, "nope"],
    ] {
        let (code, _, err) = run(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(
            err.trim(),
            "flakestorm: no run nope; `flakestorm runs list` shows the runs"
        );
    }
    let (code, _, err) = run(dir.path(), &["runs", "list", "--kind", "weekly"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown run kind `weekly`"), "{err}");
}

#[tokio::test]
async fn the_config_names_the_data_dir_and_an_empty_one_has_no_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = populate(&dir.path().join("kept")).await;
    std::fs::write(dir.path().join("flakestorm.yaml"), "data_dir: kept\n").unwrap();
    let (code, out, err) = flakestorm(&["runs", "list"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&a), "./flakestorm.yaml's data_dir:\n{out}");

    let (code, out, _) = flakestorm(&["runs", "list", "--data-dir", "empty"], dir.path());
    assert_eq!((code, out.as_str()), (0, "no runs stored\n"));
    assert!(
        !dir.path().join("empty").exists(),
        "listing creates nothing"
    );
}

#[tokio::test]
async fn a_run_left_running_by_a_dead_process_lists_as_interrupted_a_live_one_as_running() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Store::open(&data).unwrap();
    let dead = begin(&store, RunKind::Ci);
    store.case_finished(&dead, case("kept", Verdict::Pass));
    store.flush().await.unwrap();
    drop(store); // its lock goes, as a killed process's does
    let live_store = Store::open(&data).unwrap();
    let live = begin(&live_store, RunKind::Chaos);
    live_store.flush().await.unwrap();

    let (code, out, err) = run(dir.path(), &["runs", "list"]);
    assert_eq!(code, 0, "{err}");
    let status = |id: &RunId| {
        let line = out.lines().find(|l| l.starts_with(id.as_str())).unwrap();
        line.split_whitespace().nth(2).unwrap().to_string()
    };
    assert_eq!(status(&dead), "interrupted", "{out}");
    assert_eq!(status(&live), "running", "{out}");
    let (_, out, _) = run(dir.path(), &["runs", "show", dead.as_str()]);
    assert!(out.contains("kept"), "its finished case is kept:\n{out}");
}

#[test]
fn a_file_that_is_not_a_store_is_refused_untouched_with_how_to_move_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("flakestorm.db");
    std::fs::write(&db, "not a database at all, just some text").unwrap();
    let (code, _, err) = run(dir.path(), &["runs", "list"]);
    assert_eq!(code, 2);
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains(&format!("mv {}", db.display())), "{err}");
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        "not a database at all, just some text"
    );
}
