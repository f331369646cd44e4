//! A run's `/events` stream ends when the run ends, for every follower and however the run
//! ends: it passes, ends in `error`, is cancelled while queued, or is interrupted when the
//! daemon stops. Each follower reads on a connection of its own until the server closes it
//! (as the simplest SSE clients do), so a stream that outlives its run, or a connection
//! kept open after `done`, fails the bounded read.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use common::origin::{self, Origin};
use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// A daemon with its control API's read deadline at its default (30 s, longer than
/// `within`), and an agent that answers once the test gives it a permit.
struct Bench {
    p: TestProxy,
    agent: Origin,
    permits: Arc<Semaphore>,
    http: reqwest::Client,
}

impl Bench {
    async fn start() -> Bench {
        let p = start_proxy("").await;
        let (agent, permits) = origin::held_agent(0).await;
        let http = p.control();
        Bench {
            p,
            agent,
            permits,
            http,
        }
    }

    fn control(&self) -> SocketAddr {
        self.p.daemon.control_addr
    }

    /// Submits a one-case chaos run against `endpoint`; its id.
    async fn submit(&self, endpoint: &str) -> String {
        let config = format!(
            "agent: {{endpoint: '{endpoint}'}}\ngolden_prompts: [q1]\n\
             invariants: [{{type: output_not_empty}}]\n\
             chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n"
        );
        let r = self
            .http
            .post(format!("http://{}/v1/runs", self.control()))
            .header("content-type", "application/json")
            .body(json!({"kind": "chaos", "config": config}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let run: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        run["id"].as_str().unwrap().to_string()
    }

    /// A run whose agent answers only with a permit.
    async fn held(&self) -> String {
        self.submit(&self.agent.http_url("/invoke")).await
    }
}

/// One follower of a run's events, on its own connection.
struct Follower {
    conn: TcpStream,
    seen: Vec<u8>,
}

impl Follower {
    async fn open(b: &Bench, id: &str, last: Option<u64>) -> Follower {
        let control = b.control();
        let mut conn = TcpStream::connect(control).await.unwrap();
        let last = last.map_or(String::new(), |n| format!("last-event-id: {n}\r\n"));
        let token = &b.p.daemon.control_token;
        let head = format!(
            "GET /v1/runs/{id}/events HTTP/1.1\r\nhost: {control}\r\n\
             authorization: Bearer {token}\r\n{last}\r\n"
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        Follower { conn, seen: vec![] }
    }

    /// Reads until `needle` has come: the follower is attached and waiting.
    async fn until(&mut self, needle: &str) {
        within(&format!("`{needle}` on the stream"), async {
            while !String::from_utf8_lossy(&self.seen).contains(needle) {
                let mut buf = [0u8; 4096];
                let n = self.conn.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before `{needle}`: {:?}", self.text());
                self.seen.extend_from_slice(&buf[..n]);
            }
        })
        .await;
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen).into_owned()
    }

    /// Reads until the server closes the connection; the events received (kind, data).
    async fn read_to_close(mut self) -> Vec<(String, Value)> {
        let what = "the server closes the stream's connection";
        within(what, self.conn.read_to_end(&mut self.seen))
            .await
            .unwrap();
        let text = self.text();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        events(&dechunk(body))
    }
}

/// A chunked body's data.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// The events of an SSE text (keep-alive comments skipped). Every stream opens with
/// `retry: 1000` alone (how long a browser waits before it resumes a broken stream).
fn events(text: &str) -> Vec<(String, Value)> {
    let text = text
        .strip_prefix("retry: 1000\n\n")
        .unwrap_or_else(|| panic!("a stream that does not open with `retry: 1000`: {text:?}"));
    let field = |block: &str, name: &str| {
        block
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::to_string)
    };
    text.split("\n\n")
        .filter(|b| !b.is_empty() && !b.starts_with(':'))
        .map(|b| {
            let kind = field(b, "event: ").unwrap();
            let data = serde_json::from_str(&field(b, "data: ").unwrap()).unwrap();
            (kind, data)
        })
        .collect()
}

/// `events` ends with `done`, the only one; its data.
fn ends_done(events: &[(String, Value)]) -> Value {
    let dones = events.iter().filter(|(k, _)| k == "done").count();
    let (kind, data) = events.last().expect("events");
    assert_eq!((kind.as_str(), dones), ("done", 1), "{events:?}");
    data.clone()
}

#[tokio::test]
async fn every_follower_of_a_run_is_closed_when_it_ends() {
    let b = Bench::start().await;
    let id = b.held().await;
    let mut first = Follower::open(&b, &id, None).await;
    first.until("event: case_started").await;
    let mut resumed = Follower::open(&b, &id, Some(1)).await;
    resumed.until("event: case_started").await;
    b.permits.add_permits(1);
    let all = first.read_to_close().await;
    let done = ends_done(&all);
    assert!(done["finished_ms"].is_u64(), "{done}");
    let rest = resumed.read_to_close().await;
    assert_eq!(rest[..], all[1..], "resumed after event 1");

    // Followers that come after the end: the whole log, or nothing after `done`.
    let late = Follower::open(&b, &id, None).await.read_to_close().await;
    assert_eq!(late, all);
    let last = all.len() as u64;
    let had_done = Follower::open(&b, &id, Some(last)).await;
    assert_eq!(had_done.read_to_close().await, []);
}

#[tokio::test]
async fn the_followers_of_a_run_that_ends_in_error_are_closed() {
    let b = Bench::start().await;
    let first = b.held().await;
    // Its turn comes after the held run's (exclusive attribution); its agent is not there.
    let port = common::cli::closed_port();
    let failing = b.submit(&format!("http://127.0.0.1:{port}/invoke")).await;
    let mut followers = vec![];
    for _ in 0..2 {
        let mut f = Follower::open(&b, &failing, None).await;
        f.until("event: queued").await;
        followers.push(f);
    }
    b.permits.add_permits(1);
    for f in followers {
        let done = ends_done(&f.read_to_close().await);
        assert_eq!(done["status"], "error", "{done}");
        assert!(
            done["reason"].as_str().unwrap().contains("unreachable"),
            "{done}"
        );
    }
    let done = ends_done(&Follower::open(&b, &first, None).await.read_to_close().await);
    assert_ne!(done["status"], "error", "{done}");
}

#[tokio::test]
async fn the_followers_of_a_run_cancelled_while_queued_are_closed() {
    let b = Bench::start().await;
    b.held().await;
    let queued = b.held().await;
    let mut f = Follower::open(&b, &queued, None).await;
    f.until("event: queued").await;
    let r = b
        .http
        .delete(format!("http://{}/v1/runs/{queued}", b.control()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let events = f.read_to_close().await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["queued", "done"]);
    assert_eq!(events[1].1["status"], "cancelled");
    b.permits.add_permits(1);
}

#[tokio::test]
async fn stopping_the_daemon_closes_the_followers_of_its_runs() {
    let b = Bench::start().await;
    let running = b.held().await;
    let queued = b.held().await;
    let mut on_running = Follower::open(&b, &running, None).await;
    on_running.until("event: case_started").await;
    let mut on_queued = Follower::open(&b, &queued, None).await;
    on_queued.until("event: queued").await;
    let Bench { p, permits, .. } = b;
    let stop = tokio::spawn(p.stop());
    for f in [on_running, on_queued] {
        let done = ends_done(&f.read_to_close().await);
        assert_eq!(done["status"], "interrupted", "{done}");
    }
    within("the daemon stops", stop).await.unwrap();
    permits.add_permits(2);
}
