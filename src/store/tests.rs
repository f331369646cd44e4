//! The store on real files in a temporary data_dir: migrations, reopening, interrupted
//! runs, files that are not ours, the writer's ordering and failures, reads.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use super::*;

fn new_run(kind: RunKind) -> NewRun {
    NewRun {
        kind,
        config_digest: Some("sha256:abc".into()),
        seed: Some(u64::MAX),
        status: RunStatus::Running,
    }
}

fn case(input: &str, verdict: Option<Verdict>) -> CaseRecord {
    CaseRecord {
        phase: RunKind::Chaos,
        scenario: "timeouts".into(),
        input: input.into(),
        answer: Some(format!("answer to {input}")),
        error: None,
        verdict,
        checks: Value::Array(vec![]),
        faults: serde_json::json!([{"rule": "r", "mode": "timeout"}]),
        exchanges: Value::Null,
        latency_ms: 12.5,
        trial: None,
        outcome: None,
        timeline: None,
    }
}

fn raw(dir: &Path) -> Connection {
    Connection::open(dir.join(DB_FILE)).unwrap()
}

fn pragma(conn: &Connection, name: &str) -> String {
    let sql = format!("SELECT CAST({name} AS TEXT) FROM pragma_{name}");
    conn.query_row(&sql, [], |r| r.get(0)).unwrap()
}

/// Run code shares one handle across tasks and threads (a progress hook runs on many).
#[test]
fn the_handle_is_send_sync_and_cheap_to_clone() {
    fn shared<T: Send + Sync + Clone + std::fmt::Debug>() {}
    shared::<Store>();
}

#[tokio::test]
async fn a_new_store_is_migrated_marked_ours_and_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.path(), dir.path().join(DB_FILE));
    let conn = raw(dir.path());
    assert_eq!(pragma(&conn, "user_version"), schema::latest().to_string());
    assert_eq!(pragma(&conn, "application_id"), APPLICATION_ID.to_string());
    assert_eq!(pragma(&conn, "journal_mode"), "wal");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables, ["cases", "cells", "runs"]);
}

#[test]
fn stores_opened_at_once_on_a_new_folder_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let opened: Vec<Result<Store, StoreError>> = std::thread::scope(|s| {
        let all: Vec<_> = (0..4)
            .map(|_| s.spawn(|| Store::open(dir.path())))
            .collect();
        all.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &opened {
        assert!(o.is_ok(), "{:?}", o.as_ref().err());
    }
    assert_eq!(
        pragma(&raw(dir.path()), "user_version"),
        schema::latest().to_string()
    );
}

#[tokio::test]
async fn reopening_keeps_the_runs_and_migrates_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Ci));
    let scores = BTreeMap::from([("overall".to_string(), 81.5)]);
    store.finish_run(&id, RunStatus::Passed, scores.clone(), None);
    store.flush().await.unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let store2 = Store::open(dir.path()).unwrap();
    assert_eq!(store.interrupted(), [] as [String; 0]);
    let run = store2.get(id.as_str()).unwrap().unwrap();
    assert_eq!(
        (run.status, run.scores, run.seed),
        (RunStatus::Passed, scores, Some(u64::MAX))
    );
    assert!(run.finished_ms.is_some());
    assert_eq!(
        pragma(&raw(dir.path()), "user_version"),
        schema::latest().to_string()
    );
}

#[tokio::test]
async fn a_run_whose_process_died_is_interrupted_at_open_with_its_finished_cases() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let dead = store.begin_run(new_run(RunKind::Chaos));
    store.planned(&dead, 5);
    store.case_finished(&dead, case("one", None));
    store.case_finished(&dead, case("two", None));
    let ended = store.begin_run(new_run(RunKind::Chaos));
    store.finish_run(
        &ended,
        RunStatus::Failed,
        BTreeMap::new(),
        Some("low".into()),
    );
    store.flush().await.unwrap();
    // Dropping the last handle releases this "process's" lock, as dying does.
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.interrupted(), [dead.to_string()]);
    let run = store.get(dead.as_str()).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(run.reason.as_deref(), Some(INTERRUPTED));
    assert_eq!((run.done, run.total), (2, 5));
    let inputs: Vec<String> = store
        .cases(dead.as_str())
        .unwrap()
        .into_iter()
        .map(|c| c.case.input)
        .collect();
    assert_eq!(inputs, ["one", "two"]);
    let other = store.get(ended.as_str()).unwrap().unwrap();
    assert_eq!(
        other.status,
        RunStatus::Failed,
        "an ended run is left alone"
    );
}

#[tokio::test]
async fn a_run_another_live_process_is_writing_is_not_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Store::open(dir.path()).unwrap();
    let live = daemon.begin_run(new_run(RunKind::Contract));
    daemon.flush().await.unwrap();
    // A second opener (`flakestorm runs list` beside a daemon) holds its own lock.
    let cli = Store::open(dir.path()).unwrap();
    assert!(cli.interrupted().is_empty());
    let run = cli.get(live.as_str()).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Running);
    // and the live writer can still finish it.
    daemon.finish_run(&live, RunStatus::Passed, BTreeMap::new(), None);
    daemon.flush().await.unwrap();
    assert_eq!(
        cli.get(live.as_str()).unwrap().unwrap().status,
        RunStatus::Passed
    );
}

/// Opening `file` fails with an error naming it and saying how to move it aside, and the
/// file is byte-identical afterwards.
fn refused(dir: &Path, expect: &str) {
    let path = dir.join(DB_FILE);
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(dir).expect_err("a file that is not ours is refused");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("mv "), "{msg}");
    assert!(msg.contains(expect), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "left byte-identical");
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let conn = raw(dir.path());
    conn.execute_batch("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('a');")
        .unwrap();
    drop(conn);
    refused(dir.path(), "another application (application_id 0x0)");
}

#[test]
fn our_id_with_tables_we_do_not_know_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conn = raw(dir.path());
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.execute_batch("CREATE TABLE users (name TEXT);")
        .unwrap();
    drop(conn);
    refused(dir.path(), "a table flakestorm does not know (`users`)");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DB_FILE), "x".repeat(4096)).unwrap();
    refused(dir.path(), "not an SQLite database");
}

#[tokio::test]
async fn a_damaged_store_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let path = dir.path().join(DB_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    // Keep the header (ours), garble the schema page after it.
    for b in &mut bytes[100..4096] {
        *b = 0xA5;
    }
    std::fs::write(&path, bytes).unwrap();
    refused(dir.path(), "corrupt");
}

#[tokio::test]
async fn a_store_from_a_newer_flakestorm_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let conn = raw(dir.path());
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    refused(dir.path(), "schema version 99");
}

#[tokio::test]
async fn the_database_is_intact_after_the_writer_is_dropped_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Mutation));
    for i in 0..2000 {
        store.case_finished(&id, case(&format!("p{i}"), Some(Verdict::Pass)));
    }
    drop(store); // no flush, no finish
    let conn = raw(dir.path());
    assert_eq!(pragma(&conn, "integrity_check"), "ok");
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM cases", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2000, "what was sent before the drop is committed");
}

#[tokio::test]
async fn flush_resolves_after_everything_sent_before_it_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Chaos));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (store, id) = (store.clone(), id.clone());
            std::thread::spawn(move || {
                for i in 0..50 {
                    store.case_finished(&id, case(&format!("t{t}-{i}"), None));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    store.judge_case(
        &id,
        (RunKind::Chaos, "timeouts", "t0-0", None),
        Verdict::Fail,
        serde_json::json!([{"verdict": "fail", "reason": "slow"}]),
    );
    store.progress(&id, 200, 210);
    let scores = BTreeMap::from([("chaos".to_string(), 42.0)]);
    store.finish_run(&id, RunStatus::Failed, scores, Some("score 42".into()));
    store.flush().await.unwrap();
    let run = store.get(id.as_str()).unwrap().unwrap();
    assert_eq!(
        (run.status, run.done, run.total),
        (RunStatus::Failed, 200, 210)
    );
    let cases = store.cases(id.as_str()).unwrap();
    let seqs: Vec<u64> = cases.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
    // Each thread's cases keep the order that thread sent them in.
    let t1: Vec<&str> = cases
        .iter()
        .map(|c| c.case.input.as_str())
        .filter(|i| i.starts_with("t1-"))
        .collect();
    let want: Vec<String> = (0..50).map(|i| format!("t1-{i}")).collect();
    assert_eq!(t1, want);
    let judged = cases.iter().find(|c| c.case.input == "t0-0").unwrap();
    assert_eq!(judged.case.verdict, Some(Verdict::Fail));
}

#[tokio::test]
async fn a_failed_write_is_reported_by_flush_and_loses_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Chaos));
    store.case_finished(&id, case("kept", None));
    // A case of a run that does not exist breaks the foreign key: that write fails.
    store.case_finished(&RunId::from("20000101-000000-000000"), case("lost", None));
    store.case_finished(&id, case("kept too", None));
    let err = store.flush().await.unwrap_err();
    assert!(matches!(err, StoreError::Write { .. }), "{err}");
    assert!(err.to_string().contains("FOREIGN KEY"), "{err}");
    assert_eq!(store.health().unwrap_err().to_string(), err.to_string());
    let inputs: Vec<String> = store
        .cases(id.as_str())
        .unwrap()
        .into_iter()
        .map(|c| c.case.input)
        .collect();
    assert_eq!(inputs, ["kept", "kept too"]);
}

#[tokio::test]
async fn a_full_disk_is_reported_and_what_was_committed_stays() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Contract));
    for i in 0..10 {
        store.case_finished(&id, case(&format!("early {i}"), None));
    }
    store.flush().await.unwrap();
    store.fill_disk();
    let big = "x".repeat(64 * 1024);
    for _ in 0..50 {
        store.case_finished(&id, case(&big, None));
    }
    let err = store.flush().await.unwrap_err();
    assert!(err.to_string().contains("full"), "{err}");
    // The run ends `error` with the reason: a small update still fits in a full file's
    // free pages, and the writer goes on after a failure.
    store.finish_run(
        &id,
        RunStatus::Error,
        BTreeMap::new(),
        Some(err.to_string()),
    );
    let _ = store.flush().await;
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let run = store.get(id.as_str()).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Error);
    assert!(run.reason.unwrap().contains("full"));
    let cases = store.cases(id.as_str()).unwrap();
    assert_eq!(
        cases.len(),
        10,
        "the committed cases stay, the failed ones are not half-written"
    );
    assert_eq!(pragma(&raw(dir.path()), "integrity_check"), "ok");
}

#[tokio::test]
async fn list_filters_by_kind_and_status_and_pages_with_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut ids = vec![];
    for i in 0..7 {
        let kind = if i % 2 == 0 {
            RunKind::Contract
        } else {
            RunKind::Chaos
        };
        let id = store.begin_run(new_run(kind));
        let status = if i < 3 {
            RunStatus::Passed
        } else {
            RunStatus::Failed
        };
        store.finish_run(&id, status, BTreeMap::new(), None);
        ids.push(id.to_string());
    }
    store.flush().await.unwrap();
    ids.reverse(); // newest first
    let mut seen = vec![];
    let mut filter = Filter {
        limit: Some(3),
        ..Filter::default()
    };
    loop {
        let page = store.list(&filter).unwrap();
        assert!(page.runs.len() <= 3);
        seen.extend(page.runs.into_iter().map(|r| r.id));
        match page.next_cursor {
            Some(c) => filter.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, ids, "every run once, newest first");
    let contract = Filter {
        kind: Some(RunKind::Contract),
        ..Filter::default()
    };
    let runs = store.list(&contract).unwrap().runs;
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r.kind == RunKind::Contract));
    let failed_chaos = Filter {
        kind: Some(RunKind::Chaos),
        status: Some(RunStatus::Failed),
        ..Filter::default()
    };
    let runs = store.list(&failed_chaos).unwrap();
    assert_eq!(runs.runs.len(), 2, "chaos runs 3 and 5");
    assert_eq!(runs.next_cursor, None);
    let same = SameAs {
        config_digest: Some("sha256:abc".into()),
        contract: None,
        trials: None,
    };
    let passing = store.last_passing(RunKind::Chaos, &same).unwrap().unwrap();
    assert_eq!(passing.status, RunStatus::Passed);
    assert_eq!(passing.kind, RunKind::Chaos);
    assert!(store.get("nope").unwrap().is_none());
}

#[tokio::test]
async fn artifacts_live_in_the_runs_folder_and_are_recorded_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Contract));
    let folder = store.run_dir(&id).unwrap();
    assert_eq!(folder, dir.path().join("runs").join(id.as_str()));
    let report = folder.join("report.json");
    std::fs::write(&report, "{}").unwrap();
    store.set_artifact(&id, "json", &report);
    store.set_artifact(&id, "html", &folder.join("report.html"));
    store.flush().await.unwrap();
    let run = store.get(id.as_str()).unwrap().unwrap();
    assert_eq!(
        run.artifacts.get("json").map(String::as_str),
        Some(report.display().to_string().as_str())
    );
    assert_eq!(run.artifacts.len(), 2);
}

#[tokio::test]
async fn a_store_of_the_first_version_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Chaos));
    store.flush().await.unwrap();
    drop(store);
    {
        // As version 1 left it: no index on the cases' inputs, no contract column, no
        // trials columns, no outcome column.
        let conn = raw(dir.path());
        conn.execute_batch(
            "DROP INDEX cases_by_input; ALTER TABLE runs DROP COLUMN contract;
             ALTER TABLE runs DROP COLUMN trials; ALTER TABLE cases DROP COLUMN trial;
             ALTER TABLE cells DROP COLUMN consistency; ALTER TABLE cases DROP COLUMN outcome;
             ALTER TABLE runs DROP COLUMN shards; ALTER TABLE cases DROP COLUMN timeline;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert!(store.get(id.as_str()).unwrap().is_some(), "the run is kept");
    store.set_contract(&id, "Weather");
    store.flush().await.unwrap();
    let run = store.get(id.as_str()).unwrap().unwrap();
    assert_eq!(run.contract.as_deref(), Some("Weather"));
    let conn = raw(dir.path());
    assert_eq!(pragma(&conn, "user_version"), schema::latest().to_string());
    let indexed: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'cases_by_input'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 1);
}

/// Trials of one input are cases of their own: a verdict written for one trial leaves the
/// others; a cell's consistency and the run's measure are read back as written, and
/// `last_passing` finds only a run measured the same way.
#[tokio::test]
async fn trials_are_cases_of_their_own_and_runs_keep_their_measure() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Chaos));
    for t in [1, 2] {
        store.case_finished(
            &id,
            CaseRecord {
                trial: Some(t),
                outcome: None,
                ..case("hi", None)
            },
        );
    }
    let key = (RunKind::Chaos, "timeouts", "hi", Some(2));
    store.judge_case(&id, key, Verdict::Fail, Value::Null);
    let measure = crate::run::TrialsInfo {
        trials: 2,
        trial: None,
        consistency: crate::config::ConsistencyScore::PassK,
        k: Some(2),
    };
    store.set_trials(&id, &measure);
    let cell = CellRecord {
        phase: RunKind::Contract,
        scenario: "s".into(),
        invariant: "i".into(),
        severity: crate::store::Severity::High,
        verdict: Verdict::Fail,
        reason: "1 of 2".into(),
        consistency: Some(crate::run::Consistency::of(2, 1)),
    };
    store.cell(&id, cell.clone());
    store.finish_run(&id, RunStatus::Passed, BTreeMap::new(), None);
    store.flush().await.unwrap();
    let verdicts: Vec<(Option<u32>, Option<Verdict>)> = store
        .cases(id.as_str())
        .unwrap()
        .into_iter()
        .map(|c| (c.case.trial, c.case.verdict))
        .collect();
    assert_eq!(verdicts, [(Some(1), None), (Some(2), Some(Verdict::Fail))]);
    assert_eq!(store.cells(id.as_str()).unwrap(), [cell]);
    let run = store.get(id.as_str()).unwrap().unwrap();
    assert_eq!(run.trials.as_ref(), Some(&measure));
    let same = |trials| SameAs {
        config_digest: Some("sha256:abc".into()),
        contract: None,
        trials,
    };
    let found = store.last_passing(RunKind::Chaos, &same(Some(measure.clone())));
    assert_eq!(found.unwrap().map(|r| r.id), Some(id.to_string()));
    assert!(same(Some(measure.clone())).matches(&run));
    assert_eq!(
        store.last_passing(RunKind::Chaos, &same(None)).unwrap(),
        None
    );
    assert!(
        !same(None).matches(&run),
        "one trial per case is another measure"
    );
}

/// The words stored and accepted (`--status`, `--kind`) are serde's, for every value.
#[test]
fn stored_words_are_serdes_and_parse_back() {
    for s in RunStatus::all() {
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        assert_eq!(s.as_str().parse(), Ok(s));
    }
    assert_eq!(RunStatus::all().count(), 8);
    for v in Verdict::all() {
        assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        assert_eq!(v.as_str().parse(), Ok(v));
    }
    assert_eq!(
        "maybe".parse::<Verdict>(),
        Err("unknown verdict `maybe` (one of pass, fail, not_applicable, not_tested)".into())
    );
}

/// Phases and severities are read into their enums from the words stored (the schema keeps
/// text); a word this build does not know is an error naming the column and the word.
#[tokio::test]
async fn a_phase_or_severity_this_build_does_not_know_is_an_error_naming_its_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(new_run(RunKind::Contract));
    store.case_finished(&id, case("hi", None));
    let cell = CellRecord {
        phase: RunKind::Contract,
        scenario: "s".into(),
        invariant: "i".into(),
        severity: crate::store::Severity::Critical,
        verdict: Verdict::Pass,
        reason: "fine".into(),
        consistency: None,
    };
    store.cell(&id, cell.clone());
    store.flush().await.unwrap();
    let conn = raw(dir.path());
    let stored: (String, String) = conn
        .query_row("SELECT phase, severity FROM cells", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(stored, ("contract".into(), "critical".into()), "as words");
    assert_eq!(store.cells(id.as_str()).unwrap(), [cell]);
    conn.execute("UPDATE cells SET severity = 'urgent'", [])
        .unwrap();
    conn.execute("UPDATE cases SET phase = 'warmup'", [])
        .unwrap();
    let e = store.cells(id.as_str()).unwrap_err().to_string();
    assert!(
        e.contains("column `severity`: unknown severity `urgent`"),
        "{e}"
    );
    let e = store.cases(id.as_str()).unwrap_err().to_string();
    assert!(
        e.contains("column `phase`: unknown run kind `warmup`"),
        "{e}"
    );
}
