//! Mutation benchmark (issue #11): generating every rule-based type × 20 variants for 10
//! prompts, and a mutation run of 200 cases against a local agent whose every call takes
//! 50 ms, at concurrency 10, against a same-run baseline: the same 200 inputs sent straight
//! to the agent by 10 workers (the floor any runner has). Medians of 5 runs; refreshes its
//! section of docs/benchmarks.md. `cargo bench --bench mutate`.

// A benchmark measures and paces in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use flakestorm::agent::Agent;
use flakestorm::config::{self, AgentSpec, MutationsSpec, Overrides};
use flakestorm::daemon::Daemon;
use flakestorm::mutate::kind::{Family, MutationType};
use flakestorm::mutate::{Draw, wire};
use flakestorm::run::{RunContext, plan_mutations, run_mutation};

#[path = "support/agent.rs"]
mod support;

const RUNS: usize = 5;
const AGENT_MS: u64 = 50;

/// An agent on 127.0.0.1:0 answering every request after `AGENT_MS`.
async fn agent() -> u16 {
    support::serve(br#"{"result": "ok"}"#, Duration::from_millis(AGENT_MS)).await
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn prompts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "Book a flight from Paris to Tokyo for {i} people on March {i}, window seat please."
            )
        })
        .collect()
}

/// Median time to plan every type that needs no LLM (13 rule-based, 9 wire-level) × 20
/// variants of 10 prompts, the variants planned, and the median time to build every
/// wire attack of that plan (which a run builds one at a time, as it sends them).
fn generation() -> (f64, usize, usize, f64, usize) {
    let kinds: Vec<MutationType> = MutationType::all()
        .filter(|t| t.family() != Family::Model)
        .collect();
    let spec = MutationsSpec {
        count: 20,
        types: kinds.clone(),
        max_per_run: 100_000,
        custom_templates: vec![("polite".into(), "Please: {prompt}".into())],
        ..MutationsSpec::default()
    };
    let golden = prompts(10);
    let target = serde_json::from_value::<AgentSpec>(
        serde_json::json!({"endpoint": "http://127.0.0.1:9/invoke"}),
    )
    .unwrap()
    .compile()
    .unwrap();
    let (mut plan_t, mut wire_t) = (vec![], vec![]);
    let (mut made, mut wire_bytes) = (0, 0);
    for _ in 0..RUNS {
        let start = Instant::now();
        let plan = plan_mutations(&spec, &golden, 42, &Default::default());
        plan_t.push(start.elapsed().as_secs_f64());
        made = plan.variants.len();
        let start = Instant::now();
        wire_bytes = 0;
        for v in plan
            .variants
            .iter()
            .filter(|v| v.kind.family() == Family::Wire)
        {
            let prompt = &golden[v.prompt_index];
            let mut d = Draw::new(42, v.kind, prompt, v.index);
            let attack = wire::generate(v.kind, prompt, v.index, &mut d, &target).unwrap();
            wire_bytes += attack.requests.iter().map(Vec::len).sum::<usize>();
        }
        wire_t.push(start.elapsed().as_secs_f64());
    }
    (
        median(plan_t),
        kinds.len(),
        made,
        median(wire_t),
        wire_bytes,
    )
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("mutate bench: skipped (run with `cargo bench --bench mutate`)");
        return;
    }
    let (gen_s, types, made, wire_s, wire_bytes) = generation();
    let port = agent().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    let yaml = format!(
        "proxy: {{listen: \"127.0.0.1:0\"}}\ncontrol: {{listen: \"127.0.0.1:0\"}}\n\
         agent: {{endpoint: \"http://127.0.0.1:{port}/invoke\"}}\n\
         golden_prompts: {:?}\ninvariants: [{{type: output_not_empty}}]\n\
         mutations: {{count: 20, max_per_run: 200, types: [noise, tone_shift, prompt_injection, encoding_attacks, context_manipulation, format_poisoning, temporal_attack, language_mixing, advanced_jailbreak, multi_turn_attack]}}\n\
         advanced: {{seed: 1, concurrency: 10}}\n",
        prompts(10)
    );
    std::fs::write(&path, yaml).unwrap();
    let cfg = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap()
        .config;
    let daemon = Daemon::start(&cfg).await.unwrap();
    let agent = Agent::new(cfg.agent.as_ref().unwrap(), 0).unwrap();
    let parts = flakestorm::run::Parts {
        seed: daemon.chaos.seed(),
        engine: daemon.chaos.clone(),
        journal: daemon.journal.clone(),
        agent: agent.clone(),
        config_digest: None,
        min_score: cfg.scoring.min_score,
        embedder: None,
    };
    let mut ctx = RunContext {
        concurrency: 10,
        settle: std::time::Duration::ZERO,
        ..RunContext::of(&cfg, parts)
    };
    ctx.scoring.trials = Default::default();
    ctx.scoring.declared = Default::default();
    let inputs: Arc<Vec<String>> = Arc::new(
        plan_mutations(&cfg.mutations, &cfg.golden_prompts, 1, &Default::default())
            .variants
            .into_iter()
            .map(|v| v.text)
            .collect(),
    );
    let (mut run_t, mut base_t, mut cases) = (vec![], vec![], 0);
    for _ in 0..RUNS {
        let start = Instant::now();
        let r = run_mutation(&ctx, None, &cfg).await.unwrap();
        run_t.push(start.elapsed().as_secs_f64());
        cases = r.mutants.len();
        // Baseline: the same inputs, 10 workers invoking the agent directly.
        let start = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..10)
            .map(|_| {
                let (agent, inputs, next) = (agent.clone(), inputs.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(input) = inputs.get(i) else { break };
                        agent.invoke(input, &Default::default()).await;
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        base_t.push(start.elapsed().as_secs_f64());
    }
    daemon.stop().await;
    let (run_s, base_s) = (median(run_t), median(base_t));
    let mut md = String::from("<!-- bench:mutate:start -->\n## Mutation runs\n\n");
    md.push_str(&format!(
        "- Command: `cargo bench --bench mutate` (source: `benches/mutate.rs`)\n- Machine: {} cores\n\
         - Method: median of {RUNS} runs. Generation: `plan_mutations` over every type that needs no LLM ({types}: 13 rule-based, 9 wire-level) × 20 variants × 10 prompts; a wire variant is planned as a placeholder and built when it is sent, so its build is a row of its own. The two model-written types are one LLM call per variant and are not measured here. Run: {cases} mutated cases against an in-process agent whose every call takes {AGENT_MS} ms, concurrency 10, the real proxy and run engine; baseline: the same inputs sent straight to the agent by 10 workers in the same process.\n\
         - For scale: the Python Flakestorm asks its LLM for every variant before the first case runs.\n\n\
         | what | median | |\n|--|--:|--:|\n\
         | plan {made} variants | {:.1} ms | |\n\
         | build the plan's wire attacks ({:.0} MB of requests) | {:.0} ms | |\n\
         | mutation run, {cases} cases | {run_s:.3} s | {:.2}× the baseline |\n\
         | baseline: {cases} direct calls, 10 workers | {base_s:.3} s | |\n\
         <!-- bench:mutate:end -->\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        gen_s * 1000.0,
        wire_bytes as f64 / 1e6,
        wire_s * 1000.0,
        run_s / base_s,
    ));
    print!("{md}");
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/benchmarks.md");
    let old = std::fs::read_to_string(&doc).unwrap_or_default();
    let new = match (
        old.find("<!-- bench:mutate:start -->"),
        old.find("<!-- bench:mutate:end -->"),
    ) {
        (Some(a), Some(b)) => format!(
            "{}{}{}",
            &old[..a],
            md,
            &old[b + "<!-- bench:mutate:end -->\n".len()..]
        ),
        _ => format!("{old}\n{md}"),
    };
    std::fs::write(doc, new).unwrap();
}
