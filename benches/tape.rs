//! Tape replay benchmark (issue #13): what answering from a 1,000-entry tape costs a call.
//! A 1,000-entry tape of distinct ~1 KiB OpenAI-style chat requests is written and read
//! back; then 5,000 of those requests, cycling through the tape, are sent through a daemon's
//! proxy over one keep-alive connection, (a) forwarded live to an in-process origin that
//! answers at once, (b) answered from a 1-entry tape (the request's own), (c) answered from
//! the 1,000-entry tape; p50 and p99 per call. Plus the pure cost of keying a request and
//! looking it up in the 1,000-entry table. Prints a markdown section for docs/benchmarks.md.
//! `cargo bench --bench tape`.

// A benchmark measures in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use flakestorm::chaos::ReplayTable;
use flakestorm::config::replays::OnMiss;
use flakestorm::config::{self, Overrides};
use flakestorm::daemon::Daemon;
use flakestorm::tape::{RequestKey, TapeTable, har, write};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

#[path = "support/agent.rs"]
mod support;

const ENTRIES: usize = 1_000;
const CALLS: usize = 5_000;
const ANSWER: &[u8] = br#"{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ACME Q3 revenue was $4.1B"}}]}"#;

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// The n-th request body: ~1 KiB, distinct per n, with a `user` field the key ignores.
fn body(n: usize) -> String {
    let filler = "context ".repeat(110);
    format!(
        r#"{{"model":"m","user":"u-{n}","messages":[{{"role":"system","content":"{filler}"}},{{"role":"user","content":"question {n}"}}]}}"#
    )
}

fn entry(url: &str, n: usize) -> har::Entry {
    let nv = |n: &str, v: &str| har::NameValue {
        name: n.into(),
        value: v.into(),
    };
    har::Entry {
        started_date_time: write::iso8601(1_700_000_000_000),
        time: 0.0,
        request: har::Request {
            method: "POST".into(),
            url: url.into(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: vec![nv("content-type", "application/json")],
            query_string: vec![],
            post_data: Some(har::PostData {
                mime_type: "application/json".into(),
                params: vec![],
                text: body(n),
                encoding: None,
            }),
            headers_size: -1,
            body_size: body(n).len() as i64,
        },
        response: har::Response {
            status: 200,
            status_text: "OK".into(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: vec![nv("content-type", "application/json")],
            content: har::Content {
                size: ANSWER.len() as i64,
                mime_type: "application/json".into(),
                text: Some(String::from_utf8_lossy(ANSWER).into()),
                encoding: None,
                events: vec![],
                truncated: false,
            },
            redirect_url: String::new(),
            headers_size: -1,
            body_size: ANSWER.len() as i64,
        },
        cache: har::Cache {},
        timings: har::Timings {
            blocked: -1.0,
            dns: -1.0,
            connect: -1.0,
            send: 0.0,
            wait: 0.0,
            receive: 0.0,
            ssl: -1.0,
        },
        id: Some(n as u64),
        target: Some("openai".into()),
        case: None,
        fault: None,
        attacks: vec![],
        mcp: None,
        comment: None,
        error: None,
    }
}

/// The calls a measure sends.
struct Call<'a> {
    url: &'a str,
    host: &'a str,
    bodies: &'a [String],
}

impl Call<'_> {
    /// `CALLS` requests, the i-th with body `pick(i)`; p50 and p99 in ms.
    async fn time(
        &self,
        send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        pick: impl Fn(usize) -> usize,
    ) -> (f64, f64) {
        let mut v = vec![];
        for i in 0..CALLS {
            let req = hyper::Request::post(self.url)
                .header("host", self.host)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(self.bodies[pick(i)].clone())))
                .unwrap();
            send.ready().await.unwrap();
            let start = Instant::now();
            let resp = send.send_request(req).await.unwrap();
            assert_eq!(resp.status(), 200);
            let got = resp.into_body().collect().await.unwrap().to_bytes();
            v.push(start.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(&got[..], ANSWER);
        }
        (percentile(v.clone(), 0.5), percentile(v, 0.99))
    }
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("tape bench: skipped (run with `cargo bench --bench tape`)");
        return;
    }
    let port = support::serve(ANSWER, Duration::ZERO).await;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let dir = tempfile::tempdir().unwrap();
    let mut tape = write::empty(None);
    tape.log.entries = (0..ENTRIES).map(|n| entry(&url, n)).collect();
    let file = dir.path().join("big.har");
    write::save(&tape, &file).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    let start = Instant::now();
    let read = flakestorm::tape::read(&file).unwrap();
    let ignore = vec!["user".to_string()];
    let big = Arc::new(TapeTable::new(&read, &ignore));
    let load_ms = start.elapsed().as_secs_f64() * 1000.0;

    // The pure cost: key a live request and look it up.
    let bodies: Vec<String> = (0..ENTRIES).map(body).collect();
    let start = Instant::now();
    for i in 0..CALLS {
        let key = RequestKey::new("POST", &url, bodies[i % ENTRIES].as_bytes(), &ignore);
        assert!(big.answer(&key).is_some());
    }
    let lookup_us = start.elapsed().as_secs_f64() * 1e6 / CALLS as f64;

    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(
        &path,
        format!(
            "proxy: {{listen: '127.0.0.1:0'}}\ncontrol: {{listen: '127.0.0.1:0'}}\n\
             llm: [{{provider: openai, match_url: ['http://127.0.0.1:{port}/v1/*']}}]\n\
             replays: {{on_miss: error, match: {{ignore_json_fields: [user]}}}}\n"
        ),
    )
    .unwrap();
    let cfg = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap()
        .config;
    let daemon = Daemon::start(&cfg).await.unwrap();
    let tcp = tokio::net::TcpStream::connect(daemon.proxy_addr)
        .await
        .unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let host = format!("127.0.0.1:{port}");
    let call = Call {
        url: &url,
        host: &host,
        bodies: &bodies,
    };
    let live = call.time(&mut send, |i| i % ENTRIES).await;
    let small = {
        let mut one = write::empty(None);
        one.log.entries = vec![entry(&url, 0)];
        let table = Arc::new(TapeTable::new(&one, &ignore));
        let replay = ReplayTable::new(&[], OnMiss::Error).with_tape(Some(table));
        let _g = daemon.chaos.install_replay(Arc::new(replay), None);
        // Every call is entry 0's request: the 1-entry tape answers it.
        call.time(&mut send, |_| 0).await
    };
    let taped = {
        let replay = ReplayTable::new(&[], OnMiss::Error).with_tape(Some(big.clone()));
        let _g = daemon.chaos.install_replay(Arc::new(replay), None);
        call.time(&mut send, |i| i % ENTRIES).await
    };
    daemon.stop().await;
    println!(
        "## Tape replay\n\n- Command: `cargo bench --bench tape` (source: `benches/tape.rs`)\n\
         - Machine: {} cores\n\
         - Tape: {ENTRIES} entries, {size} bytes; read and indexed in {load_ms:.1} ms\n\
         - Keying a ~1 KiB JSON request and looking it up among {ENTRIES} entries: {lookup_us:.1} µs a call\n\n\
         | {CALLS} calls through the proxy, one keep-alive connection | p50 | p99 |\n|--|--:|--:|\n\
         | forwarded live to an origin that answers at once | {:.3} ms | {:.3} ms |\n\
         | answered from a 1-entry tape | {:.3} ms | {:.3} ms |\n\
         | answered from the {ENTRIES}-entry tape | {:.3} ms | {:.3} ms |\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        live.0,
        live.1,
        small.0,
        small.1,
        taped.0,
        taped.1,
    );
}
