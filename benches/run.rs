//! Contract-run benchmark (issue: the run engine): 4 invariants × 4 scenarios × 3 prompts
//! against a local agent whose every call takes ~50 ms, at concurrency 1 and 10 under
//! exclusive attribution, 10 under header attribution (all scenarios at once) and a pool of
//! 10 agent processes (this binary run as `--agent PORT`), each without settling
//! (`settle_ms: 0`) and with the default 500 ms. The agent
//! only sleeps, so the scenarios' faults never touch it: this measures the run engine's
//! own cost and parallelism, not an agent's reaction to faults. Reports wall time (median of 5 runs) and agent calls,
//! and refreshes its section of docs/benchmarks.md. `cargo bench --bench run`.
//!
//! A second table (issue #50) measures what settling costs once windows overlap: a
//! 50-case contract of an agent that makes 4 calls of 50 ms per case through its proxy
//! lane (this binary as `--caller PORT`), with `settle_ms: 0` and 500, at concurrency 1
//! and 10, with the pool's own spares and without any, and an agent that exits after each
//! answer (`--exit`), whose settle ends at its exit.

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
/// The settle table's agent: its calls per case, each to a tool that takes 50 ms.
const CALLS: usize = 4;
/// Runs per row of the settle table (one for the row that pays a window per case).
const SETTLE_RUNS: usize = 3;

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

/// This binary run as one of the bench's agents (`--caller PORT [--exit]`, `--agent
/// PORT`): serves it until killed, and says so (`true`); `false` when run as the bench.
async fn as_agent(args: &[String]) -> bool {
    let port = |i: usize| args[i + 1].parse().unwrap();
    if let Some(i) = args.iter().position(|a| a == "--caller") {
        let tool = std::env::var("TOOL_URL").unwrap();
        let exit = args.iter().any(|a| a == "--exit");
        support::serve_caller(port(i), AGENT_BODY, tool, CALLS, exit).await;
        return true;
    }
    if let Some(i) = args.iter().position(|a| a == "--agent") {
        support::serve_on(port(i), AGENT_BODY, Duration::from_millis(AGENT_MS)).await;
        return true;
    }
    false
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if as_agent(&args).await {
        return;
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
        let (t, calls, score) = measure(dir.path(), &r, tool_port, agent_port).await;
        rows.push((r, t, calls, score));
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
    md.push_str("\nEach prompt is invoked once per scenario and every invariant checked on that answer: 4 scenarios × 3 prompts = 12 calls, not × 4 invariants. Exclusive attribution runs one scenario at a time, and the cases of a scenario with chaos one at a time on the main listener's lane (the no-chaos scenario's 3 at once); header attribution gives each case its scenario's rules under its trace id, so all 12 cases share the 10 slots; a pool runs each case on one of 10 agent processes, each behind its own proxy lane. With `settle_ms: 500` each case also waits half a second after its answer for calls made after answering, which is what the default costs an agent that makes none; a case gives its slot back at its answer, so under header attribution, or with spare pool instances, other cases run while it settles and the run pays the settle about once at its end. With 4 trials each case runs 4 times, each with its own seeded chaos: 4× the agent calls; the wall time against 4× the one-trial row is the trials' own overhead.\n");
    md.push_str(&settle_table(dir.path()).await);
    md.push_str("<!-- bench:run:end -->\n");
    print!("{md}");
    write_section(&md);
}

/// One row of the contract table: its run's median wall time over `RUNS`, agent calls and
/// score, with the tool at `tool_port` and (off a pool) the agent at `agent_port`.
async fn measure(
    dir: &std::path::Path,
    r: &Row,
    tool_port: u16,
    agent_port: u16,
) -> (f64, usize, f64) {
    let path = dir.join("flakestorm.yaml");
    let agent = agent_line((!r.pool).then_some(agent_port));
    std::fs::write(&path, config_yaml(&agent, tool_port, r.settle_ms)).unwrap();
    let mut cfg = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap()
        .config;
    if r.mode == "header" {
        cfg.advanced.attribution = flakestorm::config::Attribution::Header;
    }
    let daemon = Daemon::start(&cfg).await.unwrap();
    let pool = match r.pool {
        true => {
            let log = dir.join("agent.log");
            let n = r.instances.unwrap_or(r.concurrency);
            let size = config::PoolSize {
                start: n,
                most: n,
                cases: None,
            };
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
    if let Some(p) = pool {
        p.stop().await;
    }
    daemon.stop().await;
    (median(times), calls, score)
}

/// Puts `md` in docs/benchmarks.md between its `bench:run` markers (at its end when it
/// has none).
fn write_section(md: &str) {
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

/// One row of the settle table.
struct SettleRow {
    concurrency: u32,
    settle_ms: u64,
    /// `agent.instances`; `None`: the pool's own spares.
    instances: Option<u32>,
    /// The agent exits after each answer.
    exits: bool,
    runs: usize,
}

/// The 50-case contract of the settle table, its agent the `--caller` of this binary.
fn settle_yaml(r: &SettleRow, tool_port: u16) -> String {
    let exe = std::env::current_exe().unwrap();
    let prompts: Vec<String> = (1..=25).map(|i| format!("question {i}")).collect();
    format!(
        r#"
proxy: {{listen: "127.0.0.1:0"}}
control: {{listen: "127.0.0.1:0"}}
tools: [{{name: search, match_url: "http://127.0.0.1:{tool_port}/*"}}]
agent:
  endpoint: 'http://127.0.0.1:{{port}}/invoke'
  command: '{exe} --caller {{port}}{exit}'
  env: {{TOOL_URL: 'http://127.0.0.1:{tool_port}/q'}}
{instances}
golden_prompts: {prompts:?}
contract:
  name: settle
  invariants:
    - {{id: cites, type: contains, value: according}}
  chaos_matrix:
    - name: no-chaos
    - name: search-slow
      tool_faults: [{{tool: search, mode: slow, delay_ms: 1}}]
advanced: {{seed: 1, settle_ms: {settle}, concurrency: {c}}}
"#,
        exe = exe.display(),
        exit = if r.exits { " --exit" } else { "" },
        instances = r
            .instances
            .map_or(String::new(), |n| format!("  instances: {n}")),
        settle = r.settle_ms,
        c = r.concurrency,
    )
}

/// Median wall time of `r`'s runs, and the most instances its pool held.
async fn settle_row(dir: &std::path::Path, r: &SettleRow, tool_port: u16) -> (f64, usize) {
    let path = dir.join("settle.yaml");
    std::fs::write(&path, settle_yaml(r, tool_port)).unwrap();
    let cfg = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap()
        .config;
    let daemon = Daemon::start(&cfg).await.unwrap();
    let (mut times, mut held) = (vec![], 0);
    for _ in 0..r.runs {
        let spec = cfg.agent.as_ref().unwrap();
        let size = spec.pool_size(r.concurrency, r.settle_ms, Some(50));
        let log = dir.join("settle-agent.log");
        let pool = Pool::start(&cfg, size, &daemon.lanes, &daemon.ca_cert_path, None, &log)
            .await
            .unwrap();
        let pool = std::sync::Arc::new(pool);
        let parts = flakestorm::run::Parts {
            seed: daemon.chaos.seed(),
            engine: daemon.chaos.clone(),
            journal: daemon.journal.clone(),
            agent: pool.first(),
            config_digest: None,
            min_score: cfg.scoring.min_score,
            embedder: None,
        };
        let mut ctx = RunContext {
            pool: Some(pool.clone()),
            ..RunContext::of(&cfg, parts)
        };
        ctx.scoring.declared = Default::default();
        let start = Instant::now();
        let report = run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts)
            .await
            .unwrap();
        times.push(start.elapsed().as_secs_f64());
        assert_eq!(report.cases.len(), 50);
        // Retries included (`agent_calls` counts attempts): an instance restarted after
        // its agent exited may refuse the first.
        if report.agent_calls != 50 {
            eprintln!(
                "concurrency {}, settle_ms {}, exits {}: {} agent calls for 50 cases",
                r.concurrency, r.settle_ms, r.exits, report.agent_calls
            );
        }
        held = held.max(pool.size());
        pool.stop().await;
    }
    daemon.stop().await;
    (median(times), held)
}

/// The settle table (issue #50), as markdown.
async fn settle_table(dir: &std::path::Path) -> String {
    let tool_port = server(r#"{"results": ["ACME"]}"#, Duration::from_millis(AGENT_MS)).await;
    let row = |concurrency, settle_ms, instances, exits| SettleRow {
        concurrency,
        settle_ms,
        instances,
        exits,
        runs: SETTLE_RUNS,
    };
    let plan = [
        row(1, 0, None, false),
        row(1, 500, None, false),
        SettleRow {
            runs: 1,
            ..row(1, 500, Some(1), false)
        },
        row(10, 0, None, false),
        row(10, 500, None, false),
        row(10, 500, Some(40), false),
        row(10, 500, Some(10), false),
        row(1, 0, None, true),
        row(1, 500, None, true),
    ];
    let mut md = format!(
        "\n## Settle windows that overlap (issue #50): 50 cases, {CALLS} calls of {AGENT_MS} ms each\n\n\
         - Method: a pool of this binary as an agent that makes {CALLS} sequential calls through its proxy lane to a tool taking {AGENT_MS} ms, then answers; 25 prompts × 2 scenarios; median wall time of {SETTLE_RUNS} runs (1 for the row without spares, which pays a window per case); `instances held`: the most instances the pool held (started with it, or as it grew when none was free).\n\n\
         | concurrency | agent.instances | agent | settle_ms | wall time | instances held | against settle_ms 0 |\n|--:|--:|--|--:|--:|--:|--:|\n"
    );
    let mut base: std::collections::HashMap<(u32, bool), f64> = Default::default();
    for r in &plan {
        let (t, held) = settle_row(dir, r, tool_port).await;
        let b = *base.entry((r.concurrency, r.exits)).or_insert(t);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {t:.3} s | {held} | {:+.3} s |\n",
            r.concurrency,
            r.instances
                .map_or("(spares)".to_string(), |n| n.to_string()),
            if r.exits {
                "exits after answering"
            } else {
                "stays up"
            },
            r.settle_ms,
            t - b
        ));
    }
    md.push_str("\nThe goal: with `settle_ms: 500` a run takes at most the same run with `settle_ms: 0` plus one window (0.5 s) plus 5 %. `(spares)`: the pool starts 4 × the concurrency instances (at most one per case), ready before the first case, and grows when none is free toward what the measured case time asks for; `agent.instances` set starts exactly that many. Without spare instances (`agent.instances` equal to the concurrency) every case holds its instance for its window, and the run ends one window after its last answer like the others (it warns that calls later than the window went to the next case). An agent that exits after answering ends its settle at its exit: no window is paid, only its restart before its next case.\n");
    md
}
