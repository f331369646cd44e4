//! The web view's reads of stored runs on a real `flakestorm serve`, over a store written
//! by the store's own code (as a CLI run would leave it): a bad query is refused with the
//! words `/v1/runs` uses; a run's tapes listed (none when it recorded none, or they are
//! gone) and downloaded, a tape it does not have a 404 naming it.

mod common;

use std::collections::BTreeMap;

use common::serve::{Serve, serve};
use flakestorm::run::RunKind;
use flakestorm::store::{NewRun, RunStatus, Store};
use serde_json::Value;

/// A daemon on `dir`, whose store holds the runs `seed` wrote.
async fn daemon(dir: &std::path::Path, seed: impl FnOnce(&Store)) -> Serve {
    let data = dir.join(".flakestorm");
    let store = Store::open(&data).unwrap();
    seed(&store);
    store.flush().await.unwrap();
    drop(store);
    let yaml = "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\n";
    std::fs::write(dir.join("flakestorm.yaml"), yaml).unwrap();
    serve(dir, &[], "warn", false).await
}

/// A finished run of the store, with its tapes in `tapes` if given; its id.
fn finished(store: &Store, tapes: Option<&std::path::Path>) -> String {
    let id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
    if let Some(dir) = tapes {
        store.set_artifact(&id, "tapes", dir);
    }
    store.finish_run(&id, RunStatus::Failed, BTreeMap::new(), None);
    id.as_str().to_string()
}

async fn get(s: &Serve, path: &str) -> (u16, Value) {
    let r = s.client().get(s.url(path)).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
    (status, body)
}

#[tokio::test]
async fn a_bad_query_reads_as_v1_runs_says_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = daemon(dir.path(), |store| {
        finished(store, None);
    })
    .await;
    for query in ["?bogus=1", "?limit=x"] {
        let (status, api) = get(&s, &format!("/v1/runs{query}")).await;
        assert_eq!(status, 400, "{api}");
        assert_eq!(api["error"]["code"], "bad_body", "{api}");
        let message = api["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("bad request body: query string: "),
            "{message}"
        );
        let (status, ui) = get(&s, &format!("/ui/api/runs{query}")).await;
        assert_eq!(status, 400, "{ui}");
        assert_eq!(ui, api, "{query}");
    }
    let (status, page) = get(&s, "/ui/api/runs").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["runs"].as_array().unwrap().len(), 1, "{page}");
}

#[tokio::test]
async fn a_runs_tapes_are_listed_and_downloaded_and_a_missing_one_is_a_404() {
    let dir = tempfile::tempdir().unwrap();
    let tapes = dir.path().join("tapes");
    std::fs::create_dir(&tapes).unwrap();
    std::fs::write(tapes.join("chaos-1.har"), b"{\"log\": 1}").unwrap();
    std::fs::write(tapes.join("chaos-0.har"), b"{\"log\": 0}").unwrap();
    std::fs::write(tapes.join("notes.txt"), b"not a tape").unwrap();
    std::fs::create_dir(tapes.join("dir.har")).unwrap();
    let mut ids = vec![];
    let s = daemon(dir.path(), |store| {
        ids.push(finished(store, Some(&tapes)));
        ids.push(finished(store, None));
        ids.push(finished(store, Some(&dir.path().join("deleted"))));
    })
    .await;
    let [with, without, deleted] = [&ids[0], &ids[1], &ids[2]];

    let (status, list) = get(&s, &format!("/ui/api/runs/{with}/tapes")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        list["tapes"],
        serde_json::json!(["chaos-0.har", "chaos-1.har"])
    );
    for id in [without, deleted] {
        let (status, list) = get(&s, &format!("/ui/api/runs/{id}/tapes")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["tapes"], serde_json::json!([]), "{id}");
    }

    let r = s
        .client()
        .get(s.url(&format!("/ui/api/runs/{with}/tapes/chaos-1.har")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"chaos-1.har\""
    );
    assert_eq!(&r.bytes().await.unwrap()[..], b"{\"log\": 1}");

    for (id, name) in [
        (with, "gone.har"),
        (without, "chaos-0.har"),
        (deleted, "chaos-0.har"),
    ] {
        let (status, body) = get(&s, &format!("/ui/api/runs/{id}/tapes/{name}")).await;
        assert_eq!(status, 404, "{id} {name}: {body}");
        assert_eq!(body["error"]["code"], "tape_not_found", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(id) && message.contains(name), "{message}");
    }
    let (status, body) = get(&s, "/ui/api/runs/nope/tapes").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "run_not_found", "{body}");
}
