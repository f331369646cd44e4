//! The web view's reads of stored runs on a real `flakestorm serve`, over a store written
//! by the store's own code (as a CLI run would leave it): a bad query is refused with the
//! words `/v1/runs` uses.

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

/// A finished run of the store; its id.
fn finished(store: &Store) -> String {
    let id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
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
        finished(store);
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
