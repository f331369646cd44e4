//! Reading `/v1/runs`: 409 for a run another process is running, list filters and paging,
//! report formats and runs without a report, and the events of a stored run.

use super::*;

/// The ids `GET uri` lists, and its `next_cursor`.
async fn ids(a: &App, uri: &str) -> (Vec<String>, Option<String>) {
    let r = a.get(uri).await;
    assert_eq!(r.status, 200, "{uri}: {}", r.text);
    let v = r.json();
    let ids = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    (ids, v["next_cursor"].as_str().map(str::to_string))
}

#[tokio::test]
async fn a_run_another_process_is_running_is_409_to_cancel_and_to_follow() {
    let a = app();
    let store = a.state.jobs.store();
    let id = store.begin_run(NewRun {
        kind: RunKind::Contract,
        config_digest: None,
        seed: None,
        status: RunStatus::Running,
    });
    store.flush().await.unwrap();
    let id = id.as_str();
    for req in [
        axum::http::Request::delete(format!("/v1/runs/{id}")),
        axum::http::Request::get(format!("/v1/runs/{id}/events")),
    ] {
        let (code, message) = a.send(req, "").await.error(409);
        assert_eq!(code, "run_elsewhere");
        assert!(message.contains("running in another process"), "{message}");
    }
    assert_eq!(
        a.get(&format!("/v1/runs/{id}")).await.json()["status"],
        "running"
    );
}

#[tokio::test]
async fn list_filters_pages_and_checks_its_query() {
    let a = app();
    let passed = a.stored(RunKind::Chaos, RunStatus::Passed).await;
    let failed = a.stored(RunKind::Chaos, RunStatus::Failed).await;
    let contract = a.stored(RunKind::Contract, RunStatus::Passed).await;
    let (all, _) = ids(&a, "/v1/runs").await;
    assert_eq!(
        all,
        [contract.as_str(), failed.as_str(), passed.as_str()],
        "newest first"
    );
    assert_eq!(
        ids(&a, "/v1/runs?kind=chaos").await.0,
        [failed.as_str(), passed.as_str()]
    );
    assert_eq!(
        ids(&a, "/v1/runs?status=passed").await.0,
        [contract.as_str(), passed.as_str()]
    );
    assert_eq!(
        ids(&a, "/v1/runs?kind=chaos&status=passed").await.0,
        [passed.as_str()]
    );

    let (page, cursor) = ids(&a, "/v1/runs?limit=2").await;
    assert_eq!(page, [contract.as_str(), failed.as_str()]);
    let cursor = cursor.expect("a next page");
    let uri = format!("/v1/runs?limit=2&cursor={cursor}");
    assert_eq!(ids(&a, &uri).await, (vec![passed.clone()], None));

    for (uri, needle) in [
        ("/v1/runs?limit=0", "limit: 0 is outside 1..=1000"),
        ("/v1/runs?limit=1001", "limit: 1001"),
        ("/v1/runs?kind=fuzz", "kind: unknown run kind `fuzz`"),
        ("/v1/runs?status=done", "status: unknown run status `done`"),
        ("/v1/runs?limit=many", "limit"),
        (
            "/v1/runs?colour=red",
            "query string: colour: unknown field `colour`",
        ),
        ("/v1/runs/%FF", "run id:"),
        ("/v1/runs/r1/report?fmt=json", "unknown field `fmt`"),
    ] {
        let (code, message) = a.get(uri).await.error(400);
        assert_eq!(code, "bad_body", "{uri}");
        assert!(message.contains(needle), "{uri}: {message}");
    }
}

#[tokio::test]
async fn report_formats_and_runs_without_a_report() {
    let a = app();
    let id = a.stored(RunKind::Chaos, RunStatus::Error).await;
    let (code, message) = a
        .get(&format!("/v1/runs/{id}/report?format=pdf"))
        .await
        .error(400);
    assert_eq!(code, "bad_body");
    assert!(
        message.contains("`pdf`") && message.contains("json"),
        "{message}"
    );
    for format in ["", "?format=html"] {
        let uri = format!("/v1/runs/{id}/report{format}");
        let (code, message) = a.get(&uri).await.error(409);
        assert_eq!(code, "no_report");
        assert!(message.contains("error"), "{message}");
    }

    // A stored report is served as it was written.
    let store = a.state.jobs.store();
    let run_id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: None,
        status: RunStatus::Running,
    });
    let dir = store.run_dir(&run_id).unwrap();
    let path = dir.join("report.json");
    let fixture = include_str!("../../tests/fixtures/reports/ci.json");
    std::fs::write(&path, fixture).unwrap();
    store.set_artifact(&run_id, "json", &path);
    // The run wrote HTML too (its config asked): that file is served as written.
    std::fs::write(dir.join("report.html"), "<p>as written</p>").unwrap();
    store.set_artifact(&run_id, "html", &dir.join("report.html"));
    store.finish_run(&run_id, RunStatus::Passed, BTreeMap::new(), None);
    store.flush().await.unwrap();
    let uri = |q: &str| format!("/v1/runs/{}/report{q}", run_id.as_str());
    let r = a.get(&uri("")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.text, fixture);
    let r = a.get(&uri("?format=html")).await;
    assert_eq!(r.headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(r.text, "<p>as written</p>");
    // Formats it did not write are rendered from the JSON report.
    let r = a.get(&uri("?format=junit")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/xml; charset=utf-8");
    assert!(
        r.text.contains("<testsuite name=\"contract\""),
        "{}",
        r.text
    );
    let r = a.get(&uri("?format=markdown")).await;
    assert_eq!(r.headers["content-type"], "text/markdown; charset=utf-8");
    assert!(r.text.starts_with("## flakestorm ci: "), "{}", r.text);
    // A report file damaged after the run: a 500 that names the file and the field.
    std::fs::write(&path, r#"{"schema": "flakestorm.ci/9"}"#).unwrap();
    let r = a.get(&uri("?format=markdown")).await;
    assert_eq!(r.status, 500);
    assert!(r.text.contains("newer than this build reads"), "{}", r.text);
}

#[tokio::test]
async fn the_events_of_a_stored_run_are_its_done_record() {
    let a = app();
    let id = a.stored(RunKind::Chaos, RunStatus::Failed).await;
    let uri = format!("/v1/runs/{id}/events");
    let r = a.get(&uri).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let (head, data) = r.text.split_once("data: ").unwrap();
    assert_eq!(head, "retry: 1000\n\nid: 1\nevent: done\n");
    let done: Value = serde_json::from_str(data.trim_end()).unwrap();
    assert_eq!(done["id"], id.as_str());
    assert_eq!(done["status"], "failed");
    assert!(r.text.ends_with("\n\n"));

    let req = axum::http::Request::get(&uri).header("last-event-id", "1");
    let r = a.send(req, "").await;
    let retry = "retry: 1000\n\n";
    assert_eq!((r.status, r.text.as_str()), (200, retry), "nothing after 1");
    let req = axum::http::Request::get(&uri).header("last-event-id", "one");
    let (_, message) = a.send(req, "").await.error(400);
    assert!(message.contains("Last-Event-ID"), "{message}");
}
