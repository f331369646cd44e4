//! Run-store benchmark (issue: runs API and store). (1) A chaos run of 10,000 cases against
//! an in-process agent (1 ms per call, concurrency 10), with and without writing it to the
//! store (every case as it ends, then its verdicts and the final flush), interleaved, median
//! of 3 each: the ratio is the store's cost. (2) `GET /v1/runs/{id}` on a daemon whose store
//! holds 1,000 runs, against `GET /healthz` on the same connection: p50 and p99 of 2,000
//! requests each. Prints a markdown section for docs/benchmarks.md.
//! `cargo bench --bench store`.

// A benchmark measures and paces in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use flakestorm::agent::Agent;
use flakestorm::config::{self, Overrides};
use flakestorm::daemon::Daemon;
use flakestorm::run::{RunContext, RunKind, RunRequest, execute, prepare};
use flakestorm::store::{NewRun, Recorder, RunStatus};
use http_body_util::{BodyExt, Empty};
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
    let mut rows = vec![];
    let mut last = None;
    for ms in [1, 10] {
        let (p, s, daemon, dir) = store_cost(ms).await;
        rows.push((ms, p, s));
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
    println!(
        "## Run store\n\n- Command: `cargo bench --bench store` (source: `benches/store.rs`)\n\
         - Machine: {} cores\n\n\
         | measure | baseline | with the store | ratio |\n|--|--:|--:|--:|\n\
         {}\
         | GET p50, 1,000 runs stored (baseline: /healthz) | {:.3} ms | {:.3} ms | |\n\
         | GET p99 | {:.3} ms | {:.3} ms | |\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        rows.iter()
            .map(|(ms, p, s)| format!(
                "| chaos run of {CASES} cases ({ms} ms agent, concurrency 10), median of {ROUNDS} | {p:.3} s | {s:.3} s | {:.3} |\n",
                s / p
            ))
            .collect::<String>(),
        health.0,
        run.0,
        health.1,
        run.1,
    );
}

/// A 10,000-case chaos run against an agent taking `ms` per call, without and with the
/// store: median wall times, and the daemon (its store) for the API measure.
async fn store_cost(ms: u64) -> (f64, f64, Daemon, tempfile::TempDir) {
    let port = agent(Duration::from_millis(ms)).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    let prompts: Vec<String> = (0..CASES).map(|i| format!("\"prompt {i}\"")).collect();
    std::fs::write(
        &path,
        format!(
            "proxy: {{listen: '127.0.0.1:0'}}\ncontrol: {{listen: '127.0.0.1:0'}}\n\
             agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\n\
             golden_prompts: [{}]\ninvariants: [{{type: output_not_empty}}]\n\
             chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n\
             advanced: {{seed: 1, concurrency: 10}}\n",
            prompts.join(", ")
        ),
    )
    .unwrap();
    let loaded =
        config::load_with_env(Some(&path), &Overrides::default(), &Default::default()).unwrap();
    let cfg = &loaded.config;
    let daemon = Daemon::start(cfg).await.unwrap();
    let ctx = RunContext {
        seed: 1,
        engine: daemon.chaos.clone(),
        journal: daemon.journal.clone(),
        agent: Agent::new(cfg.agent.as_ref().unwrap(), 0).unwrap(),
        concurrency: 10,
        attribution: cfg.advanced.attribution,
        config_digest: None,
        progress: None,
        embedder: None,
        declared: Default::default(),
        min_score: 0.0,
    };
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
        stored.push(start.elapsed().as_secs_f64());
    }
    (median(plain), median(stored), daemon, dir)
}
