//! Repeated trials (`advanced.trials`, `--trials`, `--trial`) as a user runs them: `flakestorm
//! contract run` with the Python agent of tests/fixtures/agent, whose answer depends on its
//! search tool; a seeded 30% of the tool's calls fail under one scenario, so the agent fails
//! about 30% of its trials there, reproducibly, and passes every trial without chaos.

mod common;

use common::cli::{flakestorm, python_agent};
use serde_json::Value;

const TRIALS: u32 = 8;

fn contract(prompts: usize) -> String {
    let prompts: Vec<String> = (0..prompts).map(|i| format!("ACME fact #{i}?")).collect();
    format!(
        "golden_prompts: {}\ncontract:\n  name: Trials\n  invariants:\n    - {{id: cites, type: contains, value: According, severity: high}}\n  chaos_matrix:\n    - name: no-chaos\n    - name: flaky-search\n      tool_faults: [{{tool: web_search, mode: error, error_code: 503, probability: 0.3}}]\n",
        serde_json::to_string(&prompts).unwrap()
    )
}

/// Runs `contract run` with `args` in a fresh folder with `trials` trials: exit code,
/// output, report.
fn run(prompts: usize, args: &[&str]) -> (i32, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), prompts, args)
}

/// As `run`, in `dir` (whose run store earlier runs there share).
fn run_in(dir: &std::path::Path, prompts: usize, args: &[&str]) -> (i32, String, Value) {
    let agent = python_agent();
    // The agent does nothing after it answers: its 160 cases need not wait for more.
    let yaml = agent.yaml.replace(
        "advanced: {concurrency: 1, seed: 1}",
        &format!("advanced: {{concurrency: 1, seed: 7, trials: {TRIALS}, settle_ms: 0}}"),
    );
    assert_ne!(yaml, agent.yaml, "the fixture's advanced line changed");
    let yaml = yaml.replace("golden_prompts: [\"What was ACME's Q3 revenue?\"]\n", "");
    std::fs::write(
        dir.join("flakestorm.yaml"),
        format!("{yaml}{}", contract(prompts)),
    )
    .unwrap();
    let mut all = vec!["contract", "run"];
    all.extend_from_slice(args);
    let (code, out, err) = flakestorm(&all, dir);
    let report = std::fs::read_to_string(dir.join("reports/contract.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
    (
        code,
        format!("{out}\n{err}"),
        serde_json::from_str(&report).unwrap(),
    )
}

fn cell<'a>(r: &'a Value, scenario: &str) -> &'a Value {
    r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario)
        .unwrap()
}

/// C(n, k).
fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |a, i| a * f64::from(n - i) / f64::from(i + 1))
}

#[test]
fn pass_hat_k_measures_a_seeded_thirty_percent_failure() {
    let prompts = 10;
    let (_, out, r) = run(prompts, &[]);
    assert_eq!(
        r["cases"].as_array().unwrap().len(),
        2 * prompts * TRIALS as usize,
        "{out}"
    );
    // Without chaos: every trial passes, pass^k = 1, nothing flaky.
    let clean = &cell(&r, "no-chaos")["consistency"];
    assert_eq!(clean["trials"], 80);
    assert_eq!(clean["passed"], 80);
    assert!(
        clean["pass_hat_k"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p == 1.0)
    );
    assert_eq!(clean["flaky"], false);
    // Under the flaky search: pass^1 within the binomial interval of 0.7 (80 trials, ±3σ).
    let flaky = &cell(&r, "flaky-search")["consistency"];
    let p1 = flaky["pass_hat_k"][0].as_f64().unwrap();
    assert!((0.55..=0.85).contains(&p1), "pass^1 {p1}: {out}");
    // Each case's pass^k is the estimator on its counts, exactly; flaky when trials disagree.
    let cases: Vec<&Value> = r["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["scenario"] == "flaky-search")
        .collect();
    assert_eq!(cases.len(), prompts);
    let mut mean_hat_8 = 0.0;
    for t in &cases {
        let (n, c) = (
            t["trials"].as_u64().unwrap() as u32,
            t["passed"].as_u64().unwrap() as u32,
        );
        assert_eq!(n, TRIALS);
        for k in 1..=n {
            let want = choose(c, k) / choose(n, k);
            let got = t["pass_hat_k"][k as usize - 1].as_f64().unwrap();
            assert!((got - want).abs() < 1e-12, "{t}: pass^{k} {got} != {want}");
        }
        assert_eq!(t["flaky"], c > 0 && c < n, "{t}");
        mean_hat_8 += choose(c, 8) / prompts as f64;
    }
    assert!(
        cases.iter().any(|t| t["flaky"] == true),
        "some case is flaky"
    );
    let cell_hat_8 = flaky["pass_hat_k"][7].as_f64().unwrap();
    assert!(
        (cell_hat_8 - mean_hat_8).abs() < 1e-12,
        "the cell averages its cases"
    );
    // pass^8 is far below pass^1, near 0.7^8, as for an agent that fails 30% at random.
    assert!(cell_hat_8 < 0.3 && cell_hat_8 < p1, "pass^8 {cell_hat_8}");
    assert!(out.contains("FLAKY cites under flaky-search"), "{out}");
    assert!(out.contains("flaky case: "), "{out}");
    // The same seed, the same report (timings aside).
    let (_, _, again) = run(prompts, &[]);
    assert_eq!(again["cells"], r["cells"]);
    assert_eq!(again["trials"], r["trials"]);
}

/// `--trial i` runs that trial alone, with the same faults as in the whole run; `--trials`
/// out of range, `--trial` beyond the trials and `scoring.k` above them are exit 2 naming
/// the flag or field.
#[test]
fn one_trial_reruns_alone_and_bad_counts_are_refused() {
    let (_, _, whole) = run(3, &[]);
    let (_, out, third) = run(3, &["--trial", "3"]);
    let faults = |r: &Value, trial: u64| -> Vec<(String, String, usize)> {
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["trial"] == trial)
            .map(|c| {
                (
                    c["scenario"].as_str().unwrap().to_string(),
                    c["prompt"].as_str().unwrap().to_string(),
                    c["faults"].as_array().unwrap().len(),
                )
            })
            .collect()
    };
    assert_eq!(third["cases"].as_array().unwrap().len(), 6, "{out}");
    assert_eq!(faults(&third, 3), faults(&whole, 3));
    for (args, want) in [
        (
            &["--trials", "0"][..],
            "--trials: 0 is out of range 1..=100",
        ),
        (
            &["--trials", "101"][..],
            "--trials: 101 is out of range 1..=100",
        ),
        (&["--trial", "9"][..], "--trial: 9 is outside 1..=8"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let agent = python_agent();
        let yaml = agent
            .yaml
            .replace("seed: 1}", "seed: 1, trials: 8}")
            .replace("golden_prompts: [\"What was ACME's Q3 revenue?\"]\n", "");
        std::fs::write(
            dir.path().join("flakestorm.yaml"),
            format!("{yaml}{}", contract(1)),
        )
        .unwrap();
        let (code, out, err) = flakestorm(&[&["contract", "run"][..], args].concat(), dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// An agent whose retry races its own deadline: it gives each answer 900 ms, so when its
/// search was slow (a seeded half of the trials meet a 700 ms `slow` fault on it) it retries
/// the LLM's 429 before the 500 ms `retry-after` has passed. Its `waits-on-429` cell is
/// flaky, and every trial, the failing ones too, is a case with its own exchanges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_racy_retry_makes_its_cell_flaky() {
    use common::origin;
    let search = origin::search_tool().await;
    let llm = origin::fixed(None, r#"{"choices": [{"message": {"content": "ok"}}]}"#).await;
    let yaml = format!(
        r#"
tools: [{{name: search, match_url: 'http://{s}/*'}}]
llm: [{{provider: openai, match_url: 'http://{l}/*'}}]
advanced: {{concurrency: 1, seed: 7, trials: {TRIALS}, settle_ms: 0}}
golden_prompts: ["Q3 revenue?"]
contract:
  name: racy
  invariants:
    - {{id: waits-on-429, type: honors_retry_after, severity: high}}
  chaos_matrix:
    - name: llm-429
      tool_faults: [{{tool: search, mode: slow, delay_ms: 700, probability: 0.5}}]
      llm_faults: [{{mode: rate_limit, retry_after_s: 0.5}}]
"#,
        s = search.addr,
        l = llm.addr
    );
    let p = common::start_proxy(&yaml).await;
    let agent = racy(
        common::client_via(&p, common::H1),
        search.http_url("/q"),
        llm.http_url("/v1/chat/completions"),
    )
    .await;
    let (cfg, ctx) = common::run_context(&p, &agent.http_url("/invoke"));
    let r = common::within(
        "the racy contract",
        flakestorm::run::run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts),
    )
    .await
    .unwrap();
    let cell = r.cells.iter().find(|c| c.scenario == "llm-429").unwrap();
    let t = cell.consistency.as_ref().expect("trials");
    assert!(t.flaky, "{:?}: {t:?}", cell.verdict);
    assert_eq!(t.trials, TRIALS);
    // The slow trials are exactly the failing ones: seeded, so the same every run.
    for c in r.cases.iter().filter(|c| c.scenario == "llm-429") {
        let traffic = c.traffic.as_ref().expect("each trial has its exchanges");
        let slowed = traffic.iter().any(|e| {
            e.fault
                .as_ref()
                .is_some_and(|f| f.mode == flakestorm::exchange::FaultKind::Slow)
        });
        let failed = c
            .checks
            .iter()
            .any(|k| matches!(k.verdict, flakestorm::checks::Verdict::Fail(_)));
        assert_eq!(slowed, failed, "trial {:?}: {:?}", c.trial, c.checks);
    }
    p.stop().await;
}

/// The racy agent: search, then ask the LLM; on a 429 wait `retry-after`, but never past
/// 900 ms from the invoke, retry once, and answer either way.
async fn racy(client: reqwest::Client, search: String, llm: String) -> common::origin::Origin {
    use http_body_util::BodyExt;
    common::origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (client, search, llm) = (client.clone(), search.clone(), llm.clone());
        async move {
            let _ = req.into_body().collect().await;
            let start = tokio::time::Instant::now();
            let _ = client.get(&search).send().await;
            let ask = || {
                client
                    .post(&llm)
                    .header("content-type", "application/json")
                    .body(r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#)
                    .send()
            };
            let first = ask().await.unwrap();
            let answer = match first.status().as_u16() {
                429 => {
                    let asked: f64 = first
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok()?.parse().ok())
                        .unwrap_or(1.0);
                    let budget = std::time::Duration::from_millis(900);
                    let wait = std::time::Duration::from_secs_f64(asked)
                        .min(budget.saturating_sub(start.elapsed()));
                    tokio::time::sleep(wait).await;
                    let again = ask().await.unwrap();
                    format!("retried: {}", again.status())
                }
                s => format!("answered: {s}"),
            };
            common::origin::text(&serde_json::json!({"result": answer}).to_string())
        }
    })
    .await
}

/// `run --chaos-only --trials 3` runs each golden prompt three times, each trial its own
/// case and prompt verdict; `run --chaos --trials 3` sends each mutated input (text and
/// wire-level) three times, scores each variant by its consistency and names the flaky ones.
#[test]
fn chaos_and_mutation_runs_take_trials() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let extra = "invariants:\n  - {type: contains, value: According}\nchaos:\n  tool_faults: [{tool: web_search, mode: error, error_code: 503, probability: 0.3}]\nmutations: {types: [noise, tone_shift, http_header_injection], count: 2}\n";
    let yaml = agent.yaml.replace("seed: 1}", "seed: 1, settle_ms: 0}");
    std::fs::write(dir.path().join("flakestorm.yaml"), format!("{yaml}{extra}")).unwrap();
    let (_, out, err) = flakestorm(&["run", "--chaos-only", "--trials", "3"], dir.path());
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/chaos.json"))
            .unwrap_or_else(|e| panic!("{e}: {out}{err}")),
    )
    .unwrap();
    let trials: Vec<u64> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["trial"].as_u64().unwrap())
        .collect();
    assert_eq!(trials, [1, 2, 3], "{out}{err}");
    assert_eq!(r["prompts"].as_array().unwrap().len(), 3);
    // The prompt's consistency over its three trials.
    let t = &r["trials"][0];
    assert_eq!(
        (&t["trials"], &t["scenario"]),
        (&3.into(), &"chaos".into()),
        "{}",
        r["trials"]
    );
    let passed = r["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["passed"] == true)
        .count();
    assert_eq!(t["passed"], passed);
    assert_eq!(t["flaky"], passed > 0 && passed < 3);
    // The score is the prompt's pass^1 (scoring.consistency: mean).
    let score = r["score"].as_f64().unwrap();
    assert!(
        (score - passed as f64 * 100.0 / 3.0).abs() < 1e-9,
        "{score}"
    );

    let (_, out, err) = flakestorm(&["run", "--chaos", "--trials", "3"], dir.path());
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/mutation.json"))
            .unwrap_or_else(|e| panic!("{e}: {out}{err}")),
    )
    .unwrap();
    let mutants = r["mutants"].as_array().unwrap();
    assert_eq!(r["cases"].as_array().unwrap().len(), mutants.len());
    // 2 variants of 3 types, 3 trials each, each trial next to the others of its variant.
    assert_eq!(mutants.len(), 18, "{out}{err}");
    for (i, m) in mutants.iter().enumerate() {
        assert_eq!(m["trial"], i as u64 % 3 + 1, "{m}");
        assert_eq!(m["type"], mutants[i - i % 3]["type"]);
        assert_eq!(m["index"], mutants[i - i % 3]["index"]);
    }
    let cases: Vec<&Value> = r["cases"].as_array().unwrap().iter().collect();
    assert!(
        cases.iter().all(|c| c["trial"].is_u64()),
        "every case says its trial"
    );
    // Types count variants, not trials.
    for t in r["types"].as_array().unwrap() {
        assert_eq!(t["sent"], 2, "{t}");
    }
    // Each variant's consistency is on its judged trials; the score weighs each variant's
    // pass^1 by its type's weight.
    let variants = r["trials"].as_array().unwrap();
    assert_eq!(variants.len(), 6, "{}", r["trials"]);
    let (mut got, mut total) = (0.0, 0.0);
    for (v, three) in variants.iter().zip(mutants.chunks(3)) {
        let judged: Vec<&Value> = three.iter().filter(|m| m["judged"] == true).collect();
        let ok = judged.iter().filter(|m| m["passed"] == true).count();
        assert_eq!(
            (v["trials"].as_u64(), v["passed"].as_u64()),
            (Some(judged.len() as u64), Some(ok as u64)),
            "{v}"
        );
        assert_eq!(v["scenario"], three[0]["type"]);
        assert_eq!(v["flaky"], ok > 0 && ok < judged.len(), "{v}");
        if !judged.is_empty() {
            let w = three[0]["weight"].as_f64().unwrap();
            total += w;
            got += w * ok as f64 / judged.len() as f64;
        }
    }
    let score = r["score"].as_f64().unwrap();
    assert!(
        (score - got * 100.0 / total).abs() < 1e-9,
        "{score} vs {}",
        got * 100.0 / total
    );
    assert!(
        !r["warnings"].to_string().contains("ran once"),
        "{}",
        r["warnings"]
    );
    if variants.iter().any(|v| v["flaky"] == true) {
        assert!(out.contains("FLAKY "), "{out}");
    }
}

/// The run store keeps what trials measured: the run's measure, each case's trial (each its
/// own verdict), each cell's consistency; `runs compare` shows pass^k per cell; and
/// `--baseline last-pass` compares only with a run measured the same way.
#[test]
fn the_store_keeps_trials_and_baselines_match_their_measure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, out, four) = run_in(d, 3, &["--trials", "4"]);
    assert_eq!(code, 0, "a passing run to be a baseline: {out}");
    let (_, out, _) = flakestorm(&["runs", "list", "--json"], d);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let a = listed["runs"][0].clone();
    assert_eq!(
        a["trials"],
        serde_json::json!({"trials": 4, "consistency": "mean"}),
        "{a}"
    );
    let a = a["id"].as_str().unwrap().to_string();
    let (_, out, _) = flakestorm(&["runs", "show", &a, "--json"], d);
    let shown: Value = serde_json::from_str(&out).unwrap();
    let cells = shown["cells"].as_array().unwrap();
    for c in cells {
        let mine = cell(&four, c["scenario"].as_str().unwrap());
        assert_eq!(c["consistency"], mine["consistency"], "{c}");
    }
    // Every trial is its own case, stored with its own trial and verdict.
    let cases = shown["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2 * 3 * 4);
    let trials: std::collections::BTreeSet<u64> =
        cases.iter().map(|c| c["trial"].as_u64().unwrap()).collect();
    assert_eq!(trials, (1..=4).collect());

    // Measured with 2 trials: the 4-trial run is no `last-pass` baseline for it.
    let (_, out, _) = run_in(d, 3, &["--trials", "2", "--baseline", "last-pass"]);
    assert!(
        out.contains("--baseline last-pass: no passing contract run"),
        "{out}"
    );
    // A run id given is compared, and the run says the measures differ.
    let (_, out, _) = run_in(d, 3, &["--trials", "2", "--baseline", &a]);
    assert!(
        out.contains(&format!(
            "baseline run {a} was measured with 4 trials, scored by mean, this run with 2 \
             trials, scored by mean"
        )),
        "{out}"
    );
    // Measured alike: found.
    let (_, out, _) = run_in(d, 3, &["--trials", "4", "--baseline", "last-pass"]);
    assert!(!out.contains("no passing contract run"), "{out}");
    assert!(!out.contains("was measured with"), "{out}");

    let (_, out, _) = flakestorm(&["runs", "list", "--json"], d);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let b = listed["runs"][1]["id"].as_str().unwrap().to_string();
    let (_, out, _) = flakestorm(&["runs", "compare", &a, &b, "--json"], d);
    let cmp: Value = serde_json::from_str(&out).unwrap();
    for c in cmp["changes"].as_array().unwrap() {
        if c["subject"] == "cell" {
            assert_eq!(c["pass_hat"]["k"], 2, "pass^k at the trials both have: {c}");
        } else {
            assert!(c["trial"].as_u64().is_some_and(|t| t <= 2), "{c}");
        }
    }
}
