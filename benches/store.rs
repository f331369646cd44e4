//! Run-store benchmark (issue: runs API and store). (1) A chaos run of 10,000 cases against
//! an in-process agent (1 or 10 ms per call, concurrency 10), with and without writing it
//! to the store (every case as it ends, then the verdicts that changed and the final
//! flush), interleaved, median of 3 each: the ratio is the store's cost. The agent either
//! calls a tool through the proxy, whose fault fires (a run that tests something: each
//! case's verdict is known as it ends), or calls nothing, so the fault never fires and every
//! verdict changes to not tested at the end (the store's worst case). (2) `GET /v1/runs/{id}` on a daemon whose store
//! holds 1,000 runs, against `GET /healthz` on the same connection: p50 and p99 of 2,000
//! requests each. (3) Opening a store of 1,000 runs and 100,000 cases: `Store::open`
//! (its `PRAGMA quick_check` and `-wal` check included) and `quick_check` alone, median of
//! 5; and `Store::checkpoint` (TRUNCATE) after 10,000 more cases. Prints a markdown
//! section for docs/benchmarks.md.
//! `cargo bench --bench store` (all), `cargo bench --bench store -- open` (only (3)).

// A benchmark measures and paces in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use flakestorm::agent::Agent;
use flakestorm::config::{self, Overrides};
use flakestorm::daemon::Daemon;
use flakestorm::run::{RunContext, RunKind, RunRequest, RunVerdict, execute, prepare};
use flakestorm::store::{CaseRecord, NewRun, Recorder, RunStatus, Store};
use http_body_util::{BodyExt, Empty};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

#[path = "support/agent.rs"]
mod support;

const CASES: usize = 10_000;
const ROUNDS: usize = 3;

async fn agent(delay: Duration) -> u16 {
    support::serve(br#"{"result": "ok"}"#, delay).await
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("store bench: skipped (run with `cargo bench --bench store`)");
        return;
    }
    if std::env::args().any(|a| a == "open") {
        println!("{}", open_cost().await);
        return;
    }
    // The tool-calling agent's client (reqwest without a built-in crypto provider).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut rows = vec![];
    let mut last = None;
    for (ms, tool) in [(1, true), (1, false), (10, true)] {
        let (p, s, daemon, dir) = store_cost(ms, tool).await;
        rows.push((ms, tool, p, s));
        if let Some((d, _dir)) = last.replace((daemon, dir)) {
            d.stop().await;
        }
    }
    let (daemon, _dir) = last.unwrap();
    // (2) 1,000 runs stored, then the API.
    for _ in 0..1_000 {
        daemon.store.begin_run(NewRun {
            kind: RunKind::Ci,
            config_digest: None,
            seed: Some(1),
            status: RunStatus::Running,
        });
    }
    daemon.store.flush().await.unwrap();
    let id = daemon.store.list(&Default::default()).unwrap().runs[0]
        .id
        .clone();
    let control = daemon.control_addr;
    let tcp = tokio::net::TcpStream::connect(control).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut time = async |uri: &str| {
        let mut v = vec![];
        for _ in 0..2_000 {
            let req = hyper::Request::get(uri)
                .header("host", control.to_string())
                .header("authorization", format!("Bearer {}", daemon.control_token))
                .body(Empty::<Bytes>::new())
                .unwrap();
            send.ready().await.unwrap();
            let start = Instant::now();
            let resp = send.send_request(req).await.unwrap();
            let _ = resp.into_body().collect().await.unwrap();
            v.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        (percentile(v.clone(), 0.5), percentile(v, 0.99))
    };
    let health = time("/healthz").await;
    let run = time(&format!("/v1/runs/{id}")).await;
    daemon.stop().await;
    let open = open_cost().await;
    println!(
        "## Run store\n\n- Command: `cargo bench --bench store` (source: `benches/store.rs`)\n\
         - Machine: {} cores\n\n\
         | measure | baseline | with the store | ratio |\n|--|--:|--:|--:|\n\
         {}\
         | GET p50, 1,000 runs stored (baseline: /healthz) | {:.3} ms | {:.3} ms | |\n\
         | GET p99 | {:.3} ms | {:.3} ms | |\n\n{open}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        rows.iter()
            .map(|(ms, tool, p, s)| format!(
                "| chaos run of {CASES} cases ({ms} ms agent{}, concurrency 10), median of {ROUNDS} | {p:.3} s | {s:.3} s | {:.3} |\n",
                if *tool { " calling a faulted tool" } else { ", no fault fires" },
                s / p
            ))
            .collect::<String>(),
        health.0,
        run.0,
        health.1,
        run.1,
    );
}

/// An agent that calls the tool at `tool` through the proxy at `proxy` (known once the
/// daemon is up), then answers after `delay`.
async fn tool_agent(tool: u16, proxy: Arc<OnceLock<std::net::SocketAddr>>, delay: Duration) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = Arc::new(OnceLock::<reqwest::Client>::new());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (proxy, client) = (proxy.clone(), client.clone());
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    let client = client
                        .get_or_init(|| {
                            let at = format!("http://{}", proxy.get().unwrap());
                            reqwest::Client::builder()
                                .proxy(reqwest::Proxy::http(at).unwrap())
                                .build()
                                .unwrap()
                        })
                        .clone();
                    async move {
                        let url = format!("http://127.0.0.1:{tool}/search");
                        let _ = client.get(url).send().await.map(|r| r.status());
                        tokio::time::sleep(delay).await;
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(Bytes::from_static(br#"{"result": "ok"}"#)),
                        ))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    port
}

/// A 10,000-case chaos run against an agent taking `ms` per call (and calling a faulted
/// tool through the proxy if `tool`), without and with the store: median wall times, and
/// the daemon (its store) for the API measure.
async fn store_cost(ms: u64, tool: bool) -> (f64, f64, Daemon, tempfile::TempDir) {
    let delay = Duration::from_millis(ms);
    let proxy = Arc::new(OnceLock::new());
    let tool_port = agent(Duration::ZERO).await;
    let port = match tool {
        true => tool_agent(tool_port, proxy.clone(), delay).await,
        false => agent(delay).await,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    let prompts: Vec<String> = (0..CASES).map(|i| format!("\"prompt {i}\"")).collect();
    std::fs::write(
        &path,
        format!(
            "proxy: {{listen: '127.0.0.1:0'}}\ncontrol: {{listen: '127.0.0.1:0'}}\n\
             agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\n\
             golden_prompts: [{}]\ninvariants: [{{type: output_not_empty}}]\n\
             tools: [{{name: search, match_url: 'http://127.0.0.1:{tool_port}/*'}}]\n\
             chaos: {{tool_faults: [{{tool: search, mode: error, error_code: 503}}]}}\n\
             advanced: {{seed: 1, concurrency: 10}}\n",
            prompts.join(", ")
        ),
    )
    .unwrap();
    let loaded =
        config::load_with_env(Some(&path), &Overrides::default(), &Default::default()).unwrap();
    let cfg = &loaded.config;
    let daemon = Daemon::start(cfg).await.unwrap();
    proxy.set(daemon.proxy_addr).unwrap();
    let parts = flakestorm::run::Parts {
        seed: 1,
        engine: daemon.chaos.clone(),
        journal: daemon.journal.clone(),
        agent: Agent::new(cfg.agent.as_ref().unwrap(), 0).unwrap(),
        config_digest: None,
        min_score: 0.0,
        embedder: None,
    };
    let mut ctx = RunContext {
        concurrency: 10,
        ..RunContext::of(cfg, parts)
    };
    ctx.scoring.trials = Default::default();
    ctx.scoring.declared = Default::default();
    let req = RunRequest {
        kind: RunKind::Chaos,
        under_chaos: false,
        profile: None,
    };
    let prepared = prepare(cfg, &req).unwrap();
    let (mut plain, mut stored) = (vec![], vec![]);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        execute(&ctx, cfg, &prepared).await.unwrap();
        plain.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let r = Recorder::begin(
            &daemon.store,
            RunKind::Chaos,
            None,
            Some(1),
            RunStatus::Running,
        );
        let with = RunContext {
            progress: Some(r.hooks()),
            ..ctx.clone()
        };
        let report = execute(&with, cfg, &prepared).await.unwrap();
        r.finish(&report, &[]).await.unwrap();
        // The run tested what the row says: the fault fired on every case, or on none.
        let verdict = report.judgement().verdict;
        assert_eq!(
            verdict == RunVerdict::NotTested,
            !tool,
            "{:?}",
            report.judgement()
        );
        stored.push(start.elapsed().as_secs_f64());
    }
    (median(plain), median(stored), daemon, dir)
}

/// A case as a chaos run stores it: an answer, a fault, two exchanges in its summary.
fn stored_case(i: usize) -> CaseRecord {
    let url = format!("http://127.0.0.1:8099/search?q=what+is+the+status+of+order+{i}");
    CaseRecord {
        phase: RunKind::Chaos,
        scenario: "search-down".into(),
        input: format!("What is the status of order {i}? Please check the tracking system."),
        answer: Some(format!(
            "I could not reach the search tool (it answered 503), so I cannot confirm order \
             {i} right now. Please try again later or contact support."
        )),
        error: None,
        verdict: Some(flakestorm::store::Verdict::Pass),
        checks: serde_json::json!([{"invariant": "output_not_empty", "passed": true}]),
        faults: serde_json::json!([{"rule": "tool_faults[0]", "mode": "error"}]),
        exchanges: serde_json::json!([
            {"method": "GET", "url": url, "status": 503, "error": null, "fault": "error", "ms": 0.4},
            {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
             "status": 200, "error": null, "fault": null, "ms": 812.5},
        ]),
        latency_ms: 815.0,
        trial: None,
        outcome: None,
        timeline: None,
    }
}

/// (3): the cost of opening a large store, and of a checkpoint.
async fn open_cost() -> String {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for _ in 0..1_000 {
        let id = store.begin_run(NewRun {
            kind: RunKind::Chaos,
            config_digest: Some("sha256:0123".into()),
            seed: Some(1),
            status: RunStatus::Running,
        });
        for i in 0..100 {
            store.case_finished(&id, stored_case(i));
        }
        store.finish_run(&id, RunStatus::Passed, Default::default(), None);
    }
    store.flush().await.unwrap();
    drop(store);
    let db = dir.path().join(flakestorm::store::DB_FILE);
    let mb = std::fs::metadata(&db).unwrap().len() as f64 / 1e6;
    let (mut open, mut check) = (vec![], vec![]);
    for _ in 0..5 {
        let start = Instant::now();
        drop(Store::open(dir.path()).unwrap());
        open.push(start.elapsed().as_secs_f64() * 1000.0);
        let conn = rusqlite::Connection::open(&db).unwrap();
        let start = Instant::now();
        let ok: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .unwrap();
        check.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(ok, "ok");
    }
    let store = Store::open(dir.path()).unwrap();
    let id = store.begin_run(NewRun {
        kind: RunKind::Chaos,
        config_digest: None,
        seed: Some(1),
        status: RunStatus::Running,
    });
    for i in 0..10_000 {
        store.case_finished(&id, stored_case(i));
    }
    store.flush().await.unwrap();
    let wal = dir
        .path()
        .join(format!("{}-wal", flakestorm::store::DB_FILE));
    let wal_mb = std::fs::metadata(&wal).map_or(0.0, |m| m.len() as f64 / 1e6);
    let start = Instant::now();
    store.checkpoint().await.unwrap();
    let checkpoint = start.elapsed().as_secs_f64() * 1000.0;
    format!(
        "| opening a store of 1,000 runs, 100,000 cases ({mb:.0} MB) | median of 5 |\n|--|--:|\n\
         | `Store::open` (all checks, writer started, closed) | {:.1} ms |\n\
         | `PRAGMA quick_check` alone | {:.1} ms |\n\
         | `Store::checkpoint` (TRUNCATE) after 10,000 more cases ({wal_mb:.1} MB of -wal) | {checkpoint:.1} ms |\n",
        median(open),
        median(check),
    )
}
