//! Contract-run benchmark (issue: the run engine): 4 invariants × 4 scenarios × 3 prompts
//! against a local agent whose every call takes ~50 ms, at concurrency 1 and 10 under
//! exclusive attribution, 10 under header attribution (all scenarios at once) and a pool of
//! 10 agent processes (this binary run as `--agent PORT`), each without settling
//! (`settle_ms: 0`) and with the default 500 ms. The agent
//! only sleeps, so the scenarios' faults never touch it: this measures the run engine's
//! own cost and parallelism, not an agent's reaction to faults. Reports wall time (median of 5 runs) and agent calls,
//! and refreshes its section of docs/benchmarks.md. `cargo bench --bench run`.

// A benchmark measures and paces in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use flakestorm::agent::{Agent, Pool};
use flakestorm::config::{self, Overrides};
use flakestorm::daemon::Daemon;
use flakestorm::run::{RunContext, run_contract};

#[path = "support/agent.rs"]
mod support;

const RUNS: usize = 5;
const AGENT_MS: u64 = 50;

/// A server on 127.0.0.1:0 answering every request with `body` after `delay`.
async fn server(body: &'static str, delay: Duration) -> u16 {
    support::serve(body.as_bytes(), delay).await
}

/// The agent line of the config: the in-process agent, or this binary as a pool.
fn agent_line(agent_port: Option<u16>) -> String {
    match agent_port {
        Some(port) => format!(r#"agent: {{endpoint: "http://127.0.0.1:{port}/invoke"}}"#),
        None => {
            let exe = std::env::current_exe().unwrap();
            format!(
                "agent: {{endpoint: 'http://127.0.0.1:{{port}}/invoke', command: '{} --agent {{port}}', instances: 10}}",
                exe.display()
            )
        }
    }
}

fn config_yaml(agent: &str, tool_port: u16, settle_ms: u64) -> String {
    format!(
        r#"
proxy: {{listen: "127.0.0.1:0"}}
control: {{listen: "127.0.0.1:0"}}
tools: [{{name: search, match_url: "http://127.0.0.1:{tool_port}/*"}}]
{agent}
golden_prompts: ["one", "two", "three"]
contract:
  name: bench
  invariants:
    - {{id: cites, type: contains, value: according, severity: critical}}
    - {{id: shape, type: regex, pattern: "^According"}}
    - {{id: answers, type: output_not_empty}}
    - {{id: fast, type: latency, max_ms: 5000}}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{{tool: search, mode: error, error_code: 503}}]
    - name: search-slow
      tool_faults: [{{tool: search, mode: slow, delay_ms: 1}}]
    - name: llm-flaky
      llm_faults: [{{mode: rate_limit, probability: 0.5}}]
advanced: {{seed: 1, settle_ms: {settle_ms}}}
"#
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const AGENT_BODY: &[u8] = br#"{"result": "According to search: ACME"}"#;

/// How one row runs: attribution, concurrency, a pool or not, settle.
struct Row {
    mode: &'static str,
    concurrency: usize,
    pool: bool,
    settle_ms: u64,
    trials: u32,
    /// Pool instances (default: the concurrency).
    instances: Option<usize>,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--agent") {
        let port = args[i + 1].parse().unwrap();
        return support::serve_on(port, AGENT_BODY, Duration::from_millis(AGENT_MS)).await;
    }
    if !args.iter().any(|a| a == "--bench") {
        println!("run bench: skipped (run with `cargo bench --bench run`)");
        return;
    }
    let tool_port = server(r#"{"results": ["ACME"]}"#, Duration::ZERO).await;
    let agent_port = support::serve(AGENT_BODY, Duration::from_millis(AGENT_MS)).await;
    let dir = tempfile::tempdir().unwrap();
    let row = |mode, concurrency, pool, settle_ms| Row {
        mode,
        concurrency,
        pool,
        settle_ms,
        trials: 1,
        instances: None,
    };
    let trials = |r: Row, trials| Row { trials, ..r };
    let spare = |r: Row, n| Row {
        instances: Some(n),
        ..r
    };
    let plan = [
        row("exclusive", 1, false, 0),
        row("exclusive", 10, false, 0),
        row("header", 10, false, 0),
        row("pool", 10, true, 0),
        row("header", 10, false, 500),
        row("pool", 10, true, 500),
        spare(row("pool", 10, true, 500), 20),
        trials(row("exclusive", 1, false, 0), 4),
        trials(row("pool", 10, true, 0), 4),
    ];
    let mut rows = vec![];
    for r in plan {
        let path = dir.path().join("flakestorm.yaml");
        let agent = agent_line((!r.pool).then_some(agent_port));
        std::fs::write(&path, config_yaml(&agent, tool_port, r.settle_ms)).unwrap();
        let mut cfg =
            config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
                .unwrap()
                .config;
        if r.mode == "header" {
            cfg.advanced.attribution = flakestorm::config::Attribution::Header;
        }
        let daemon = Daemon::start(&cfg).await.unwrap();
        let pool = match r.pool {
            true => {
                let log = dir.path().join("agent.log");
                let size = r.instances.unwrap_or(r.concurrency);
                let p = Pool::start(&cfg, size, &daemon.lanes, &daemon.ca_cert_path, None, &log)
                    .await
                    .unwrap();
                Some(std::sync::Arc::new(p))
            }
            false => None,
        };
        let agent = match &pool {
            Some(p) => p.first(),
            None => Agent::new(cfg.agent.as_ref().unwrap(), 0).unwrap(),
        };
        let parts = flakestorm::run::Parts {
            seed: daemon.chaos.seed(),
            engine: daemon.chaos.clone(),
            journal: daemon.journal.clone(),
            agent,
            config_digest: None,
            min_score: cfg.scoring.min_score,
            embedder: None,
        };
        let mut ctx = RunContext {
            concurrency: r.concurrency,
            pool: pool.clone(),
            settle: Duration::from_millis(r.settle_ms),
            ..RunContext::of(&cfg, parts)
        };
        ctx.scoring.trials = flakestorm::run::Trials {
            n: r.trials,
            ..Default::default()
        };
        ctx.scoring.declared = Default::default();
        let contract = cfg.contract.as_ref().unwrap();
        let (mut times, mut calls, mut score) = (vec![], 0, 0.0);
        for _ in 0..RUNS {
            let start = Instant::now();
            let report = run_contract(&ctx, contract, &cfg.golden_prompts)
                .await
                .unwrap();
            times.push(start.elapsed().as_secs_f64());
            calls = report.agent_calls;
            score = report.score.value;
        }
        rows.push((r, median(times), calls, score));
        if let Some(p) = pool {
            p.stop().await;
        }
        daemon.stop().await;
    }
    let mut md = String::from(
        "<!-- bench:run:start -->\n## Contract runs: 4 invariants × 4 scenarios × 3 prompts\n\n",
    );
    md.push_str(&format!(
        "- Command: `cargo bench --bench run` (source: `benches/run.rs`)\n- Machine: {} cores\n\
         - Method: an in-process agent whose every call takes {AGENT_MS} ms (it makes no calls of its own, so this measures the run engine, not fault handling), the real proxy and engine; median wall time of {RUNS} runs.\n\
         - For scale: the Python Flakestorm 2.0 took 5.2 s and 48 agent calls for this shape, one call at a time.\n\n\
         | attribution | concurrency | instances | settle_ms | trials | wall time | agent calls | score |\n|--|--:|--:|--:|--:|--:|--:|--:|\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    for (r, t, calls, score) in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {t:.3} s | {calls} | {score:.1} |\n",
            r.mode,
            r.concurrency,
            match (r.pool, r.instances) {
                (false, _) => "–".to_string(),
                (true, n) => n.unwrap_or(r.concurrency).to_string(),
            },
            r.settle_ms,
            r.trials
        ));
    }
    md.push_str("\nEach prompt is invoked once per scenario and every invariant checked on that answer: 4 scenarios × 3 prompts = 12 calls, not × 4 invariants. Exclusive attribution runs one scenario at a time, and the cases of a scenario with chaos one at a time on the main listener's lane (the no-chaos scenario's 3 at once); header attribution gives each case its scenario's rules under its trace id, so all 12 cases share the 10 slots; a pool runs each case on one of 10 agent processes, each behind its own proxy lane. With `settle_ms: 500` each case also waits half a second after its answer for calls made after answering, which is what the default costs an agent that makes none; a case gives its slot back at its answer, so under header attribution, or with spare pool instances, other cases run while it settles and the run pays the settle about once at its end. With 4 trials each case runs 4 times, each with its own seeded chaos: 4× the agent calls; the wall time against 4× the one-trial row is the trials' own overhead.\n<!-- bench:run:end -->\n");
    print!("{md}");
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/benchmarks.md");
    let old = std::fs::read_to_string(&doc).unwrap_or_default();
    let new = match (
        old.find("<!-- bench:run:start -->"),
        old.find("<!-- bench:run:end -->"),
    ) {
        (Some(a), Some(b)) => format!(
            "{}{}{}",
            &old[..a],
            md,
            &old[b + "<!-- bench:run:end -->\n".len()..]
        ),
        _ => format!("{old}\n{md}"),
    };
    std::fs::write(doc, new).unwrap();
}
