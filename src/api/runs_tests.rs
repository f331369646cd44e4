//! `/v1/runs` through the router (`oneshot`): the token on every route, the 400s of bad
//! submissions (path-named config errors, all at once), 404 and 409, 202 with `Location`;
//! the shared `App` the other runs tests use. Reads are in `runs_read_tests.rs`, what a
//! hostile or off-loopback submission can do in `runs_submitted_tests.rs`.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::api::{ApiState, router};
use crate::store::{NewRun, RunKind, RunStatus};

struct App {
    state: ApiState,
    /// Sent on every request that names no `authorization` of its own.
    auth: Option<String>,
    _dir: tempfile::TempDir,
}

/// With `token`, requests carry no token unless the test gives one; without, the state's
/// token is sent on each. Off loopback, the listener is `0.0.0.0`.
fn app_with(token: Option<&str>, loopback: bool) -> App {
    let dir = tempfile::tempdir().unwrap();
    let mut state = crate::api::test_state(crate::jobs::Jobs::for_tests(dir.path()));
    if !loopback {
        state.hosts = crate::api::Hosts::new(std::net::Ipv4Addr::UNSPECIFIED.into(), &[]);
    }
    if let Some(t) = token {
        state.token = t.into();
    }
    let auth = token.is_none().then(|| format!("Bearer {}", state.token));
    App {
        state,
        auth,
        _dir: dir,
    }
}

fn app() -> App {
    app_with(None, true)
}

impl App {
    fn router(&self) -> Router {
        router(self.state.clone())
    }

    async fn send(&self, mut req: axum::http::request::Builder, body: &str) -> Reply {
        let headers = req.headers_mut().unwrap();
        if !headers.contains_key("host") {
            headers.insert("host", "127.0.0.1:8081".parse().unwrap());
        }
        if let Some(auth) = self
            .auth
            .as_deref()
            .filter(|_| !headers.contains_key("authorization"))
        {
            headers.insert("authorization", auth.parse().unwrap());
        }
        if !body.is_empty() && !headers.contains_key("content-type") {
            headers.insert("content-type", "application/json".parse().unwrap());
        }
        let req = req.body(Body::from(body.to_string())).unwrap();
        let resp = self.router().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            text: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    async fn get(&self, uri: &str) -> Reply {
        self.send(axum::http::Request::get(uri), "").await
    }

    async fn post(&self, body: &str) -> Reply {
        let req = axum::http::Request::post("/v1/runs").header("content-type", "application/json");
        self.send(req, body).await
    }

    /// A run stored as ended with `status` (as an earlier daemon or a CLI run left it).
    async fn stored(&self, kind: RunKind, status: RunStatus) -> String {
        let store = self.state.jobs.store();
        let id = store.begin_run(NewRun {
            kind,
            config_digest: None,
            seed: Some(7),
            status: RunStatus::Running,
        });
        store.finish_run(&id, status, BTreeMap::from([("chaos".into(), 80.0)]), None);
        store.flush().await.unwrap();
        id.as_str().to_string()
    }
}

struct Reply {
    status: u16,
    headers: axum::http::HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text))
    }

    /// `error.code` and `error.message`, after checking the status.
    fn error(&self, status: u16) -> (String, String) {
        assert_eq!(self.status, status, "{}", self.text);
        let v = self.json();
        let s = |k: &str| v["error"][k].as_str().unwrap_or_default().to_string();
        (s("code"), s("message"))
    }
}

/// A config an endpoint-only agent can run (nothing listens there: the run itself fails
/// later; these tests are about the request).
fn config(port: u16) -> Value {
    json!(format!(
        "agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\ngolden_prompts: [hi]\n\
         invariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n"
    ))
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/runs"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs/r1"),
    ("DELETE", "/v1/runs/r1"),
    ("GET", "/v1/runs/r1/events"),
    ("GET", "/v1/runs/r1/report"),
];

#[tokio::test]
async fn every_runs_route_needs_the_token_and_a_401_says_nothing_more() {
    let a = app_with(Some("s3cret"), true);
    let mut messages = vec![];
    for &(method, uri) in ROUTES {
        for auth in [None, Some("Bearer wrong"), Some("Basic s3cret")] {
            let mut req = axum::http::Request::builder().method(method).uri(uri);
            if let Some(auth) = auth {
                req = req.header("authorization", auth);
            }
            let r = a.send(req, r#"{"kind": "chaos"}"#).await;
            let (code, message) = r.error(401);
            assert_eq!(code, "unauthorized", "{method} {uri}");
            assert!(!r.text.contains("s3cret"), "{}", r.text);
            messages.push(message);
        }
        // With the token the route answers (here: not found, or a bad body), never 401.
        let req = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", "Bearer s3cret");
        let r = a.send(req, "{}").await;
        assert_ne!(r.status, 401, "{method} {uri}: {}", r.text);
    }
    messages.dedup();
    assert_eq!(messages.len(), 1, "missing and wrong tokens look alike");
}

#[tokio::test]
async fn an_invalid_inline_config_gets_every_problem_at_its_path() {
    let a = app();
    let bad = "agent: {endpoint: 'not a url'}\nadvanced: {concurrency: 0}\ngolden_prompts: [hi]\n";
    let r = a
        .post(&json!({"kind": "chaos", "config": bad}).to_string())
        .await;
    let (code, _) = r.error(400);
    assert_eq!(code, "invalid_config");
    let errors = r.json()["error"]["errors"].as_array().unwrap().clone();
    let paths: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"agent.endpoint"), "{paths:?}");
    assert!(paths.contains(&"advanced.concurrency"), "{paths:?}");
    for e in &errors {
        assert!(!e["message"].as_str().unwrap().is_empty(), "{e}");
    }

    // With the request's own problems, all in one answer.
    let body = json!({"kind": "fuzz", "min_score": 101, "config": bad}).to_string();
    let r = a.post(&body).await;
    assert_eq!(r.error(400).0, "invalid_config");
    let errors = r.json()["error"]["errors"].as_array().unwrap().clone();
    let paths: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths[..2], ["kind", "min_score"], "{errors:?}");
    assert!(paths.contains(&"agent.endpoint"), "{paths:?}");
    assert!(paths.contains(&"advanced.concurrency"), "{paths:?}");

    // The same as a JSON object, and in a YAML body.
    let object = json!({"agent": {"endpoint": "not a url"}, "advanced": {"concurrency": 0}});
    let r = a
        .post(&json!({"kind": "chaos", "config": object}).to_string())
        .await;
    assert_eq!(r.error(400).0, "invalid_config");
    assert!(r.json()["error"]["errors"].as_array().unwrap().len() >= 2);
    let yaml = format!("kind: chaos\nconfig: |\n  {}\n", bad.replace('\n', "\n  "));
    let req = axum::http::Request::post("/v1/runs").header("content-type", "application/yaml");
    let r = a.send(req, &yaml).await;
    assert_eq!(r.error(400).0, "invalid_config", "{yaml}");
}

#[tokio::test]
async fn bad_submissions_are_400_naming_the_problem() {
    let a = app();
    let cfg = config(closed_port());

    let (code, message) = a
        .post(&json!({"kind": "fuzz", "config": cfg}).to_string())
        .await
        .error(400);
    assert_eq!(code, "bad_body");
    assert!(
        message.contains("kind") && message.contains("`fuzz`"),
        "{message}"
    );
    for k in ["contract", "chaos", "mutation", "replay", "ci"] {
        assert!(message.contains(k), "valid kinds listed: {message}");
    }

    let (code, message) = a.post(r#"{"kind": "chaos", "config": "#).await.error(400);
    assert_eq!(code, "bad_body");
    assert!(message.contains("JSON"), "{message}");

    let body = json!({"kind": "chaos", "config": cfg, "seeed": 3}).to_string();
    let (_, message) = a.post(&body).await.error(400);
    assert!(message.contains("seeed"), "{message}");

    let body = json!({"kind": "chaos", "config": cfg, "config_path": "x.yaml"}).to_string();
    let (_, message) = a.post(&body).await.error(400);
    assert!(message.contains("not both"), "{message}");
    let (_, message) = a.post(r#"{"kind": "chaos"}"#).await.error(400);
    assert!(message.contains("config: missing"), "{message}");

    let (_, message) = a
        .post(&json!({"kind": "chaos", "config": 5}).to_string())
        .await
        .error(400);
    assert!(message.contains("config: expected"), "{message}");

    let body = json!({"kind": "chaos", "config": cfg, "min_score": 101}).to_string();
    let (_, message) = a.post(&body).await.error(400);
    assert!(message.contains("min_score"), "{message}");

    let body = json!({"kind": "chaos", "config": cfg, "seed": "x"}).to_string();
    let (_, message) = a.post(&body).await.error(400);
    assert!(message.contains("body: seed:"), "at its field: {message}");

    // A config that cannot make the run asked for.
    let (code, message) = a
        .post(&json!({"kind": "contract", "config": cfg}).to_string())
        .await
        .error(400);
    assert_eq!(code, "not_runnable");
    assert!(message.contains("contract:"), "{message}");
    let (code, message) = a
        .post(&json!({"kind": "replay", "config": cfg}).to_string())
        .await
        .error(400);
    assert_eq!(code, "not_runnable");
    assert!(message.contains("replays.sessions"), "{message}");
    let missing = a.dir_path().join("missing.yaml");
    let body = json!({"kind": "chaos", "config_path": missing}).to_string();
    let r = a.post(&body).await;
    assert_eq!(r.error(400).0, "invalid_config");
    assert!(r.text.contains("missing.yaml"), "{}", r.text);
}

impl App {
    fn dir_path(&self) -> &std::path::Path {
        self._dir.path()
    }
}

#[tokio::test]
async fn a_valid_submission_is_202_with_its_location() {
    let a = app();
    let body = json!({"kind": "chaos", "config": config(closed_port()), "seed": 11});
    let r = a.post(&body.to_string()).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let run = r.json();
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["kind"], "chaos");
    assert_eq!(run["seed"], 11);
    assert!(
        !run["warnings"]
            .to_string()
            .contains("not used by a run on a daemon"),
        "{}",
        run["warnings"]
    );
    // Sections a run on a daemon does not use are named, not silently ignored.
    let with_proxy = format!(
        "proxy: {{listen: '127.0.0.1:0'}}\n{}",
        config(closed_port()).as_str().unwrap()
    );
    let r2 = a
        .post(&json!({"kind": "chaos", "config": with_proxy}).to_string())
        .await;
    assert_eq!(r2.status, 202, "{}", r2.text);
    let warnings = r2.json()["warnings"].to_string();
    assert!(
        warnings.contains("proxy: not used by a run on a daemon"),
        "{warnings}"
    );
    let location = r.headers["location"].to_str().unwrap();
    assert_eq!(location, format!("/v1/runs/{id}"));
    let got = a.get(location).await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json()["id"], id.as_str());
    let list = a.get("/v1/runs").await.json();
    assert!(
        list["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == id.as_str()),
        "{list}"
    );
}

#[tokio::test]
async fn an_unknown_run_is_404_on_every_route() {
    let a = app();
    for &(method, uri) in &ROUTES[2..] {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(uri.replace("r1", "nope"));
        let (code, message) = a.send(req, "").await.error(404);
        assert_eq!(code, "run_not_found", "{method} {uri}");
        assert_eq!(
            message, "no run nope; `flakestorm runs list` shows the runs",
            "{method} {uri}"
        );
    }
}

#[tokio::test]
async fn cancelling_an_ended_run_is_409() {
    let a = app();
    let id = a.stored(RunKind::Chaos, RunStatus::Passed).await;
    let req = axum::http::Request::delete(format!("/v1/runs/{id}"));
    let (code, message) = a.send(req, "").await.error(409);
    assert_eq!(code, "run_finished");
    assert!(
        message.contains(&id) && message.contains("passed"),
        "{message}"
    );
}

#[path = "runs_import_tests.rs"]
mod import;
#[path = "runs_read_tests.rs"]
mod read;
#[path = "runs_submitted_tests.rs"]
mod submitted;
