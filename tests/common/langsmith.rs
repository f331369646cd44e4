//! A LangSmith API on `127.0.0.1:0` for import tests: `GET /runs/{id}`, `GET /sessions?name=`
//! and `POST /runs/query` (by `trace`, or a project's root runs by `session`, `is_root`,
//! `error`), answering in the documented v1 run schema, a page of `page` runs at a time with
//! `cursors.next`. Requests without the expected `x-api-key` get 401; every request (path
//! and JSON body) is logged.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const KEY: &str = "lsv2_test_key_123";
pub const PROJECT: &str = "my-agent";
pub const PROJECT_ID: &str = "0000aaaa-0000-0000-0000-000000000001";

/// What the server holds and saw.
#[derive(Clone)]
pub struct Fake {
    pub runs: Arc<Mutex<Vec<Value>>>,
    pub seen: Arc<Mutex<Vec<(String, Value)>>>,
    pub page: usize,
}

pub struct Server {
    pub addr: SocketAddr,
    pub fake: Fake,
    stop: tokio_util::sync::CancellationToken,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// The requests seen: `METHOD /path` and the JSON body (Null for GETs).
    pub fn seen(&self) -> Vec<(String, Value)> {
        self.fake.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A run in the v1 schema.
#[allow(clippy::too_many_arguments)]
pub fn run(
    id: &str,
    trace: &str,
    parent: Option<&str>,
    name: &str,
    run_type: &str,
    order: &str,
    inputs: Value,
    outputs: Value,
    error: Option<&str>,
) -> Value {
    json!({
        "id": id, "trace_id": trace, "parent_run_id": parent, "name": name,
        "run_type": run_type, "session_id": PROJECT_ID,
        "start_time": format!("2026-11-20T10:00:0{order}.000000"),
        "end_time": format!("2026-11-20T10:00:0{order}.020000"),
        "dotted_order": format!("20261120T10000{order}000000Z{id}"),
        "inputs": inputs, "outputs": outputs, "error": error,
        "status": if error.is_some() { "error" } else { "success" },
        "extra": {}, "tags": [], "events": [],
    })
}

pub async fn start(runs: Vec<Value>, page: usize) -> Server {
    let fake = Fake {
        runs: Arc::new(Mutex::new(runs)),
        seen: Arc::default(),
        page,
    };
    let app = axum::Router::new()
        .route("/runs/{id}", get(read_run))
        .route("/runs/query", post(query))
        .route("/sessions", get(sessions))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { s.cancelled().await })
            .await;
    });
    Server { addr, fake, stop }
}

fn denied(headers: &HeaderMap) -> Option<Response> {
    let ok = headers.get("x-api-key").is_some_and(|k| k == KEY);
    (!ok).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"detail": "Invalid token"})),
        )
            .into_response()
    })
}

async fn read_run(State(f): State<Fake>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    f.seen
        .lock()
        .unwrap()
        .push((format!("GET /runs/{id}"), Value::Null));
    if let Some(r) = denied(&headers) {
        return r;
    }
    let runs = f.runs.lock().unwrap().clone();
    match runs.into_iter().find(|r| r["id"] == id.as_str()) {
        Some(r) => Json(r).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"detail": "Run not found"})),
        )
            .into_response(),
    }
}

async fn sessions(
    State(f): State<Fake>,
    Query(q): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let name = q.get("name").cloned().unwrap_or_default();
    f.seen
        .lock()
        .unwrap()
        .push((format!("GET /sessions?name={name}"), Value::Null));
    if let Some(r) = denied(&headers) {
        return r;
    }
    if name == PROJECT {
        Json(json!([{"id": PROJECT_ID, "name": PROJECT}])).into_response()
    } else {
        Json(json!([])).into_response()
    }
}

async fn query(State(f): State<Fake>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    f.seen
        .lock()
        .unwrap()
        .push(("POST /runs/query".into(), body.clone()));
    if let Some(r) = denied(&headers) {
        return r;
    }
    let runs = f.runs.lock().unwrap().clone();
    let matched: Vec<Value> = runs
        .into_iter()
        .filter(|r| match (&body["trace"], &body["session"]) {
            (Value::String(t), _) => r["trace_id"] == t.as_str(),
            (_, Value::Array(s)) => {
                s.contains(&r["session_id"])
                    && (body["is_root"] != true || r["parent_run_id"].is_null())
                    && (body["error"] != true || !r["error"].is_null())
            }
            _ => false,
        })
        .collect();
    let from: usize = body["cursor"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let page: Vec<Value> = matched.iter().skip(from).take(f.page).cloned().collect();
    let next = (from + f.page < matched.len()).then(|| (from + f.page).to_string());
    Json(json!({"runs": page, "cursors": {"next": next, "prev": null}})).into_response()
}
