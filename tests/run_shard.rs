//! Sharded contract runs as a user runs them (docs/scale.md): `contract run --shard K/N`
//! with the Python agent of tests/fixtures/agent, then `report merge`; the merged report
//! equals the whole run on the same seed (cases, verdicts, scores, coverage; timings and
//! exchange ids aside), for N = 1, 3 and more shards than prompts. Merging refuses shards
//! of another run, a shard given twice and a missing shard (not tested with
//! `--allow-partial`); bad `--shard` values are usage errors.

mod common;

use common::cli::{PythonAgent, flakestorm, flakestorm_env, python_agent};
use serde_json::{Value, json};

const PROMPTS: usize = 8;

/// The contract: a seeded half of the search calls fail under one scenario, all under
/// the other; a (baseline) pass runs first for `behavior_unchanged`.
fn config(agent: &PythonAgent, seed: u64) -> String {
    let prompts: Vec<String> = (0..PROMPTS).map(|i| format!("ACME fact #{i}?")).collect();
    let yaml = agent.yaml.replace(
        "advanced: {concurrency: 1, seed: 1}",
        &format!("advanced: {{concurrency: 1, seed: {seed}, settle_ms: 0}}"),
    );
    assert_ne!(yaml, agent.yaml, "the fixture's advanced line changed");
    let yaml = yaml.replace("golden_prompts: [\"What was ACME's Q3 revenue?\"]\n", "");
    format!(
        "{yaml}golden_prompts: {}\ncontract:\n  name: Shards\n  invariants:\n    - {{id: cites, type: contains, value: According, severity: high}}\n    - {{id: same, type: behavior_unchanged, severity: low}}\n    - {{id: searched, type: tool_called, tool: web_search}}\n    - {{id: outcome, type: outcome, allow: [recovered, degraded_honest]}}\n  chaos_matrix:\n    - name: flaky-search\n      tool_faults: [{{tool: web_search, mode: error, error_code: 503, probability: 0.5}}]\n    - name: search-down\n      tool_faults: [{{tool: web_search, mode: error, error_code: 503}}]\n",
        serde_json::to_string(&prompts).unwrap()
    )
}

fn folder(agent: &PythonAgent, seed: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flakestorm.yaml"), config(agent, seed)).unwrap();
    dir
}

fn read(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// What must be equal between a whole run and its merged shards: everything but timings,
/// exchange ids and the run's own record.
fn judged(r: &Value) -> Value {
    let cases: Vec<Value> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let faults: Vec<Value> = c["faults"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| json!([f["rule"], f["mode"], f["applied"]]))
                .collect();
            let exchanges = c["exchanges"].as_array().map(|e| {
                e.iter()
                    .map(|x| {
                        json!([
                            x["target"]["kind"],
                            x["request"]["url"],
                            x["outcome"]["response"]["status"]
                        ])
                    })
                    .collect::<Vec<_>>()
            });
            // The outcome's evidence names exchanges by id: its kinds must agree.
            let outcome = c.get("outcome").map(|o| {
                let kinds: Vec<&Value> = o["evidence"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| &e["kind"])
                    .collect();
                json!([o["class"], o["reason"], kinds])
            });
            json!({
                "scenario": c["scenario"], "prompt": c["prompt"], "answer": c["answer"],
                "error": c["error"], "not_judged": c["not_judged"], "checks": c["checks"],
                "faults": faults, "exchanges": exchanges, "outcome": outcome,
            })
        })
        .collect();
    json!({
        "cases": cases, "cells": r["cells"], "score": r["score"],
        "verdict": r["verdict"], "verdict_reasons": r["verdict_reasons"],
        "coverage": r["coverage"], "agent_calls": r["agent_calls"], "seed": r["seed"],
        "config_digest": r["config_digest"], "scenarios": r["scenarios"],
    })
}

/// Runs the N shards in `dir` and merges them: the merge's exit code, output and report.
fn shards_merged(dir: &std::path::Path, n: u32) -> (i32, String, Value) {
    let mut files = vec![];
    for k in 1..=n {
        let shard = format!("{k}/{n}");
        let (code, out, err) = flakestorm(&["contract", "run", "--shard", &shard], dir);
        let file = format!("reports/contract.shard-{k}-of-{n}.json");
        let report = read(&dir.join(&file));
        let units = report["shard"]["units"].as_array().unwrap().len();
        if units == 0 {
            assert_eq!(code, 0, "an empty shard is no failure: {out}{err}");
            assert!(out.contains("holds none of the run's 8 prompts"), "{out}");
        } else {
            // A shard in error asks to be tried again (3), apart from bad usage (2); a part
            // not tested on its own leaves it to the merge (0).
            let want = match report["verdict"].as_str().unwrap() {
                "error" => 3,
                "not_tested" => 0,
                _ => report_code(&report),
            };
            assert_eq!(code, want, "shard {shard}: {out}{err}");
        }
        assert_eq!(report["shard"]["k"], k);
        assert_eq!(report["shard"]["units_total"], PROMPTS);
        files.push(file);
    }
    let mut args = vec!["report", "merge", "-o", "merged.json"];
    // A folder of shard reports (a volume the shards wrote to) merges as its files do.
    match n {
        3 => args.push("reports"),
        _ => args.extend(files.iter().map(String::as_str)),
    }
    let (code, out, err) = flakestorm(&args, dir);
    let merged = read(&dir.join("merged.json"));
    (code, format!("{out}{err}"), merged)
}

/// Runs `args` whole in a fresh folder with `yaml`: its report (`reports/<file>`), after
/// checking the exit code is the verdict's.
fn whole_run(yaml: &str, args: &[&str], file: &str) -> Value {
    let dir = with_config(yaml);
    let (code, out, err) = flakestorm(args, dir.path());
    let report = read(&dir.path().join("reports").join(file));
    assert_eq!(code, report_code(&report), "{out}{err}");
    report
}

/// A fresh folder with `yaml` as its flakestorm.yaml.
fn with_config(yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flakestorm.yaml"), yaml).unwrap();
    dir
}

/// A chaos report's cases: prompt, answer and how many faults each met.
fn chaos_cases(r: &Value) -> Vec<Value> {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!([
                c["prompt"],
                c["answer"],
                c["faults"].as_array().unwrap().len()
            ])
        })
        .collect()
}

fn report_code(r: &Value) -> i32 {
    match r["verdict"].as_str().unwrap() {
        "pass" => 0,
        "fail" => 1,
        _ => 2,
    }
}

#[test]
fn merged_shards_equal_the_whole_run() {
    let agent = python_agent();
    let whole_dir = folder(&agent, 7);
    let (code, out, err) = flakestorm(&["contract", "run"], whole_dir.path());
    let whole = read(&whole_dir.path().join("reports/contract.json"));
    assert_eq!(code, report_code(&whole), "{out}{err}");
    // The run is worth comparing: the flaky scenario failed some cases and not others.
    let flaky: Vec<&Value> = whole["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scenario"] == "flaky-search")
        .collect();
    let cited = flaky
        .iter()
        .filter(|c| c["answer"].as_str().unwrap().starts_with("According"))
        .count();
    assert!(0 < cited && cited < PROMPTS, "{cited} of {PROMPTS} cited");
    // Every case under chaos has its class: not exercised where the fault skipped it.
    let class = |c: &&Value| c["outcome"]["class"].as_str().unwrap_or("none").to_string();
    let classes: std::collections::BTreeSet<String> = flaky.iter().map(class).collect();
    assert!(
        classes.contains("not_exercised") && classes.len() > 1,
        "{classes:?}"
    );
    assert_eq!(whole["agent_calls"], 3 * PROMPTS, "baseline + 2 scenarios");
    let want = judged(&whole);
    for n in [3, 1, 12] {
        let dir = folder(&agent, 7);
        let (code, out, merged) = shards_merged(dir.path(), n);
        assert_eq!(code, report_code(&whole), "N = {n}: {out}");
        assert!(merged.get("shard").is_none(), "a merged report is whole");
        let got = judged(&merged);
        if got != want {
            panic!(
                "N = {n}: the merge differs from the whole run\nmerged: {}\nwhole:  {}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&want).unwrap()
            );
        }
    }
}

#[test]
fn merging_refuses_what_is_not_one_whole_run() {
    let agent = python_agent();
    let dir = folder(&agent, 7);
    let d = dir.path();
    for k in 1..=3 {
        let (code, out, err) = flakestorm(&["contract", "run", "--shard", &format!("{k}/3")], d);
        assert!(code <= 3, "{out}{err}");
    }
    let shard = |k: u32| format!("reports/contract.shard-{k}-of-3.json");
    // A shard of the config with another seed (`advanced.seed`): its digest differs.
    let other = folder(&agent, 8);
    flakestorm(&["contract", "run", "--shard", "2/3"], other.path());
    let foreign = other.path().join(shard(2));
    let foreign = foreign.to_str().unwrap();
    let (s1, s2, s3) = (shard(1), shard(2), shard(3));
    let refuse = |args: &[&str], why: &str| {
        let mut all = vec!["report", "merge"];
        all.extend_from_slice(args);
        let (code, out, err) = flakestorm(&all, d);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(why), "{args:?}: {err}");
    };
    refuse(
        &[&s1, foreign, &s3],
        "is not a shard of the same run as reports/contract.shard-1-of-3.json: `config_digest` is sha256:",
    );
    refuse(&[&s1, &s2, &s2, &s3], "shard 2/3 is given twice");
    refuse(&[&s1, &s3], "shard(s) 2/3 missing (--allow-partial");
    refuse(
        &["reports/contract.shard-9-of-3.json"],
        "contract.shard-9-of-3.json: No such file",
    );
    // A whole run's report is not a shard.
    flakestorm(&["contract", "run", "-o", "whole.json"], d);
    refuse(&[&s1, "whole.json"], "whole.json: not a shard report");
    // A shard of a newer format: named, field and version.
    let newer = std::fs::read_to_string(d.join(&s2)).unwrap().replacen(
        "flakestorm.contract/2",
        "flakestorm.contract/3",
        1,
    );
    std::fs::write(d.join("newer.json"), newer).unwrap();
    refuse(
        &[&s1, "newer.json", &s3],
        "newer.json: `schema` is flakestorm.contract/3",
    );
    // Another config: its digest is named.
    let edited = config(&agent, 7).replace("severity: low", "severity: medium");
    std::fs::write(d.join("edited.yaml"), edited).unwrap();
    refuse(
        &["-c", "edited.yaml", &s1, &s2, &s3],
        "the shards were run with config sha256:",
    );
    // With --allow-partial: not tested, never a pass, and says what is missing.
    let (code, out, err) = flakestorm(
        &[
            "report",
            "merge",
            "--allow-partial",
            "-o",
            "partial.json",
            &s1,
            &s3,
        ],
        d,
    );
    assert_eq!(code, 2, "{out}{err}");
    let partial = read(&d.join("partial.json"));
    assert_eq!(partial["verdict"], "not_tested");
    let why = partial["verdict_reasons"][0].as_str().unwrap();
    assert!(why.starts_with("INCOMPLETE: shard(s) 2/3 missing"), "{why}");
    assert_eq!(partial["score"]["passed"], false);
}

#[test]
fn bad_shards_are_usage_errors_naming_the_form() {
    let agent = python_agent();
    let dir = folder(&agent, 7);
    for (shard, why) in [
        ("0/3", "K is 0"),
        ("4/3", "outside 1..=3"),
        ("1/0", "N is 0"),
        ("x/y", "not a whole number"),
        ("auto/3", "auto needs JOB_COMPLETION_INDEX"),
    ] {
        let (code, out, err) = flakestorm(&["contract", "run", "--shard", shard], dir.path());
        assert_eq!(code, 2, "{shard}: {out}{err}");
        assert!(
            err.contains(why) && err.contains("expected K/N"),
            "{shard}: {err}"
        );
        assert!(!dir.path().join("reports").exists(), "{shard}: nothing ran");
    }
    // auto/N in an Indexed Job: JOB_COMPLETION_INDEX 1 is shard 2.
    let (code, out, err) = flakestorm_env(
        &["contract", "run", "--shard", "auto/2"],
        dir.path(),
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert!(code <= 3, "{out}{err}");
    let r = read(&dir.path().join("reports/contract.shard-2-of-2.json"));
    assert_eq!(r["shard"]["k"], 2);
    assert_eq!(r["shard"]["n"], 2);
    // An agent that cannot start: an environment error, worth another try (3).
    let yaml = config(&agent, 7);
    let start = yaml.find("  command: ").unwrap();
    let end = start + yaml[start..].find('\n').unwrap();
    let broken = format!("{}  command: \"exit 7\"{}", &yaml[..start], &yaml[end..]);
    std::fs::write(dir.path().join("broken.yaml"), broken).unwrap();
    let (code, out, err) = flakestorm(
        &["contract", "run", "-c", "broken.yaml", "--shard", "1/2"],
        dir.path(),
    );
    assert_eq!(code, 3, "{out}{err}");
    let (code, _, _) = flakestorm(&["contract", "run", "-c", "broken.yaml"], dir.path());
    assert_eq!(code, 2, "a whole run keeps its exit code");
}

/// `ci` with every phase it can run here: mutations (text types, seeded), the contract,
/// and the `chaos:` section under the top-level invariants.
fn ci_config(agent: &PythonAgent) -> String {
    format!(
        "{}invariants:\n  - {{type: contains, value: According}}\nchaos:\n  tool_faults: [{{tool: web_search, mode: error, error_code: 503, probability: 0.5}}]\nmutations: {{count: 2, types: [noise, tone_shift]}}\n",
        config(agent, 7)
    )
}

/// The parts of a ci report that must be equal between a whole run and its merge.
fn ci_judged(r: &Value) -> Value {
    let chaos = &r["chaos"];
    let chaos_cases = chaos_cases(chaos);
    let mutants: Vec<Value> = r["mutation"]["mutants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!([m["type"], m["text"], m["passed"], m["judged"], m["checks"]]))
        .collect();
    json!({
        "overall": r["overall"], "verdict": r["verdict"], "verdict_reasons": r["verdict_reasons"],
        "phases": r["phases"], "contract": judged(&r["contract"]),
        "chaos": {"cases": chaos_cases, "prompts": chaos["prompts"], "score": chaos["score"],
                  "coverage": chaos["coverage"], "verdict": chaos["verdict"]},
        "mutation": {"mutants": mutants, "score": r["mutation"]["score"], "types": r["mutation"]["types"]},
    })
}

#[test]
fn a_sharded_ci_merges_equal_to_the_whole_ci() {
    let agent = python_agent();
    let yaml = ci_config(&agent);
    let whole = whole_run(&yaml, &["ci"], "ci.json");
    assert!(
        whole["mutation"]["mutants"].as_array().unwrap().len() >= 4,
        "{whole}"
    );
    let dir = with_config(&yaml);
    for k in 1..=3 {
        let (code, out, err) = flakestorm(&["ci", "--shard", &format!("{k}/3")], dir.path());
        let shard = read(&dir.path().join(format!("reports/ci.shard-{k}-of-3.json")));
        assert_eq!(shard["shard"], json!({"k": k, "n": 3}));
        // Mutations run whole on shard 1 alone.
        assert_eq!(shard["mutation"].is_null(), k != 1, "shard {k}: {out}{err}");
        assert!(code <= 1, "shard {k}: {out}{err}");
    }
    let (code, out, err) = flakestorm(
        &["report", "merge", "reports", "-o", "merged.json"],
        dir.path(),
    );
    let merged = read(&dir.path().join("merged.json"));
    assert_eq!(code, report_code(&whole), "{out}{err}");
    let (got, want) = (ci_judged(&merged), ci_judged(&whole));
    if got != want {
        panic!(
            "the merged ci differs from the whole ci\nmerged: {}\nwhole:  {}",
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&want).unwrap()
        );
    }
    // Without shard 1, the mutation phase is missing, and the run is not a pass.
    std::fs::remove_file(dir.path().join("reports/ci.shard-1-of-3.json")).unwrap();
    let (code, out, err) = flakestorm(
        &[
            "report",
            "merge",
            "reports",
            "--allow-partial",
            "-o",
            "partial.json",
        ],
        dir.path(),
    );
    assert_eq!(code, 2, "{out}{err}");
    let partial = read(&dir.path().join("partial.json"));
    let mutation = &partial["phases"][0];
    assert_eq!(mutation["name"], "mutation");
    assert!(
        mutation["skipped"]
            .as_str()
            .unwrap()
            .contains("shard 1/3, which runs it whole, is missing"),
        "{mutation}"
    );
}

#[test]
fn a_sharded_chaos_run_merges_equal_to_the_whole_run() {
    let agent = python_agent();
    let yaml = ci_config(&agent);
    let whole = whole_run(&yaml, &["run", "--chaos-only"], "chaos.json");
    let dir = with_config(&yaml);
    for k in 1..=2 {
        flakestorm(
            &["run", "--chaos-only", "--shard", &format!("{k}/2")],
            dir.path(),
        );
    }
    let (code, out, err) = flakestorm(&["report", "merge", "reports"], dir.path());
    assert_eq!(code, report_code(&whole), "{out}{err}");
    let merged = read(&dir.path().join("reports/chaos.json"));
    let strip = |r: &Value| {
        json!([
            chaos_cases(r),
            r["prompts"],
            r["score"],
            r["coverage"],
            r["verdict"],
            r["verdict_reasons"]
        ])
    };
    assert_eq!(strip(&merged), strip(&whole));
}

#[test]
fn a_cases_trials_stay_in_its_shard_and_merge_to_the_whole_runs_consistency() {
    let agent = python_agent();
    let yaml = config(&agent, 7).replace("settle_ms: 0}", "settle_ms: 0, trials: 3}");
    assert!(yaml.contains("trials: 3"));
    let whole = whole_run(&yaml, &["contract", "run"], "contract.json");
    assert_eq!(whole["agent_calls"], 3 * 3 * PROMPTS);
    // The shards take their trials from the command line, not the config: the merge judges
    // with the trials the shards ran.
    let dir = with_config(&config(&agent, 7));
    for k in 1..=3 {
        flakestorm(
            &[
                "contract",
                "run",
                "--trials",
                "3",
                "--shard",
                &format!("{k}/3"),
            ],
            dir.path(),
        );
        let shard = read(
            &dir.path()
                .join(format!("reports/contract.shard-{k}-of-3.json")),
        );
        // Every trial of a prompt is in the shard that holds the prompt.
        let units: Vec<&Value> = shard["shard"]["units"].as_array().unwrap().iter().collect();
        for c in shard["cases"].as_array().unwrap() {
            assert!(units.contains(&&c["prompt"]), "{c}");
        }
        assert_eq!(
            shard["cases"].as_array().unwrap().len(),
            3 * 3 * units.len()
        );
    }
    let (_, out, _) = flakestorm(
        &["report", "merge", "reports", "-o", "merged.json"],
        dir.path(),
    );
    let merged = read(&dir.path().join("merged.json"));
    // The configs differ only in where the trials come from.
    let judged = |r: &Value| {
        let mut j = judged(r);
        j.as_object_mut().unwrap().remove("config_digest");
        j
    };
    assert_eq!(judged(&merged), judged(&whole), "{out}");
    assert_eq!(merged["trials"], whole["trials"]);
    assert_eq!(
        merged["run"]["trials"],
        json!({"trials": 3, "consistency": "mean"})
    );
    assert!(
        whole["trials"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["flaky"] == true)
    );
    // A shard run with other trials is not a part of the same run.
    flakestorm(
        &["contract", "run", "--trials", "2", "--shard", "2/3"],
        dir.path(),
    );
    let (code, _, err) = flakestorm(&["report", "merge", "reports", "-o", "m2.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`shard.trials` is 2 there, 3 in"), "{err}");
}

#[test]
fn a_merge_is_recorded_in_the_run_store_with_its_shards() {
    let agent = python_agent();
    let dir = folder(&agent, 7);
    let d = dir.path();
    let (_, out, merged) = shards_merged(d, 2);
    assert_eq!(merged["run"]["merged_shards"], 2, "{merged}");
    // Shard runs are parts: the store has only the merged run, with its shards.
    assert!(out.contains("recorded as run "), "{out}");
    let (_, out, _) = flakestorm(&["runs", "list", "--json"], d);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{out}");
    let run = &runs[0];
    assert_eq!(run["kind"], "contract");
    assert_eq!(run["shards"], 2, "{run}");
    assert_eq!(run["scores"]["contract"], merged["score"]["value"]);
    let id = run["id"].as_str().unwrap();
    let (_, out, _) = flakestorm(&["runs", "show", id, "--json"], d);
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        shown["cells"].as_array().unwrap().len(),
        merged["cells"].as_array().unwrap().len(),
        "{out}"
    );
    // `--no-store`: the merged report only.
    let (code, out, err) = flakestorm(
        &[
            "report",
            "merge",
            "reports",
            "--no-store",
            "-o",
            "again.json",
        ],
        d,
    );
    assert!(code <= 1, "{out}{err}");
    assert!(!err.contains("recorded as run"), "{err}");
    // A merged report imported elsewhere says its shards too.
    let (code, out, err) = flakestorm(&["runs", "import", "merged.json"], d);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("imported merged.json as run "), "{out}");
    let (_, out, _) = flakestorm(&["runs", "list", "--json"], d);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let shards: Vec<&Value> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["shards"])
        .collect();
    assert_eq!(shards, [&json!(2), &json!(2)], "{out}");
    // Not a report: refused, nothing recorded.
    let (code, _, err) = flakestorm(&["runs", "import", "flakestorm.yaml"], d);
    assert_eq!(code, 2);
    assert!(err.contains("flakestorm.yaml"), "{err}");
}

#[test]
fn a_sharded_replay_run_merges_equal_to_the_whole_run() {
    let agent = python_agent();
    let sessions: String = (0..6)
        .map(|i| {
            let answer = match i % 2 {
                0 => "{status: 503, response: null}".to_string(),
                _ => format!("{{status: 200, response: {{results: [\"fact {i}\"]}}}}"),
            };
            let answer = answer.replacen('{', "{tool: web_search, ", 1);
            format!(
                "    - {{id: incident-{i}, input: \"question {i}?\", tool_responses: [{answer}]}}\n"
            )
        })
        .collect();
    let yaml = format!(
        "{}invariants:\n  - {{type: contains, value: According}}\nreplays:\n  sessions:\n{sessions}",
        config(&agent, 7)
    );
    let whole = whole_run(&yaml, &["replay", "run"], "replay.json");
    let verdicts: Vec<&Value> = whole["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["verdict"])
        .collect();
    assert!(
        verdicts.contains(&&json!("pass")) && verdicts.contains(&&json!("fail")),
        "{verdicts:?}"
    );
    let dir = with_config(&yaml);
    for k in 1..=3 {
        flakestorm(&["replay", "run", "--shard", &format!("{k}/3")], dir.path());
    }
    let (code, out, err) = flakestorm(&["report", "merge", "reports"], dir.path());
    assert_eq!(code, report_code(&whole), "{out}{err}");
    let merged = read(&dir.path().join("reports/replay.json"));
    let strip = |r: &Value| {
        let sessions: Vec<Value> = r["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let case = &r["cases"][s["case"].as_u64().unwrap() as usize];
                json!([
                    s["id"],
                    s["verdict"],
                    s["reasons"],
                    s["checks"],
                    s["served"],
                    case["scenario"],
                    case["answer"]
                ])
            })
            .collect();
        json!([
            sessions,
            r["score"],
            r["verdict"],
            r["verdict_reasons"],
            r["agent_calls"],
            r["coverage"]
        ])
    };
    assert_eq!(strip(&merged), strip(&whole));
}

#[test]
fn a_sharded_mutation_run_merges_equal_to_the_whole_run() {
    let agent = python_agent();
    let yaml = ci_config(&agent).replace(
        "types: [noise, tone_shift]",
        "types: [noise, tone_shift, http_header_injection]",
    );
    assert!(yaml.contains("http_header_injection"));
    let whole = whole_run(&yaml, &["run"], "mutation.json");
    let dir = with_config(&yaml);
    for k in 1..=3 {
        let (code, out, err) = flakestorm(&["run", "--shard", &format!("{k}/3")], dir.path());
        assert!(code <= 1, "shard {k}: {out}{err}");
    }
    let (code, out, err) = flakestorm(&["report", "merge", "reports"], dir.path());
    assert_eq!(code, report_code(&whole), "{out}{err}");
    let merged = read(&dir.path().join("reports/mutation.json"));
    let strip = |r: &Value| {
        let mutants: Vec<Value> = r["mutants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                json!([
                    m["type"],
                    m["original"],
                    m["text"],
                    m["passed"],
                    m["judged"],
                    m["checks"]
                ])
            })
            .collect();
        let answers: Vec<Value> = r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| json!([c["prompt"], c["answer"]]))
            .collect();
        json!([
            mutants,
            answers,
            r["score"],
            r["types"],
            r["verdict"],
            r["verdict_reasons"],
            r["coverage"]
        ])
    };
    let (got, want) = (strip(&merged), strip(&whole));
    assert!(
        whole["mutants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["type"] == "http_header_injection"),
        "{want}"
    );
    assert_eq!(got, want);
    // Without a shard (`--allow-partial`), every variant the others ran keeps its own verdict.
    let held: Vec<u32> = (1..=3)
        .filter(|k| {
            let r = read(
                &dir.path()
                    .join(format!("reports/mutation.shard-{k}-of-3.json")),
            );
            !r["shard"]["units"].as_array().unwrap().is_empty()
        })
        .collect();
    assert!(
        held.len() >= 2,
        "the prompts fall in two shards at least: {held:?}"
    );
    std::fs::remove_file(
        dir.path()
            .join(format!("reports/mutation.shard-{}-of-3.json", held[0])),
    )
    .unwrap();
    std::fs::remove_file(dir.path().join("reports/mutation.json")).unwrap();
    let (code, out, err) = flakestorm(
        &[
            "report",
            "merge",
            "reports",
            "--allow-partial",
            "-o",
            "partial.json",
        ],
        dir.path(),
    );
    assert_eq!(code, 2, "incomplete, never a pass: {out}{err}");
    let partial = read(&dir.path().join("partial.json"));
    let id = |m: &Value| json!([m["type"], m["original"], m["index"], m["text"]]);
    let verdict = |m: &Value| json!([m["passed"], m["judged"], m["checks"]]);
    let mutants = partial["mutants"].as_array().unwrap();
    assert!(!mutants.is_empty() && mutants.len() < whole["mutants"].as_array().unwrap().len());
    for m in mutants {
        let w = whole["mutants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| id(w) == id(m));
        assert_eq!(w.map(verdict), Some(verdict(m)), "{m}");
    }
    // Each text variant is paired with its own case (the one that sent its text).
    let texts = mutants
        .iter()
        .filter(|m| m["type"] != "http_header_injection");
    for (m, c) in texts.zip(partial["cases"].as_array().unwrap()) {
        assert_eq!(
            m["text"], c["prompt"],
            "a variant paired with another's case"
        );
    }
    // Variants a model writes differ from shard to shard: such a run is not sharded.
    let model = yaml.replace(
        "types: [noise, tone_shift, http_header_injection]",
        "types: [noise, paraphrase]",
    );
    let dir = with_config(&model);
    let (code, _, err) = flakestorm(&["run", "--shard", "1/2"], dir.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("whose variants a model writes (paraphrase) is not sharded"),
        "{err}"
    );
}

/// A shard's report carries the config it ran with (variables and flags layered over the
/// file), credentials out: `report merge DIR` needs no config file, merges as with `-c`,
/// and refuses shards that ran with other settings or carry none.
#[test]
fn shards_carry_their_config_without_its_secrets() {
    let agent = python_agent();
    let yaml = config(&agent, 7).replace(
        "  env: {TOOL_URL:",
        "  headers: {Authorization: \"Bearer ${AGENT_TOKEN}\"}\n  env: {API_SECRET: \"env-secret-0123456789\", TOOL_URL:",
    );
    assert_ne!(yaml, config(&agent, 7), "the fixture's env line changed");
    let dir = with_config(&yaml);
    let d = dir.path();
    let secrets = [
        ("AGENT_TOKEN", "agent-token-0123456789"),
        ("FLAKESTORM_CONTROL__TOKEN", "control-token-0123456789"),
    ];
    for k in 1..=2 {
        let (code, out, err) = flakestorm_env(
            &["contract", "run", "--shard", &format!("{k}/2")],
            d,
            &secrets,
        );
        assert!(code <= 3, "{out}{err}");
    }
    let shard = |k: u32| d.join(format!("reports/contract.shard-{k}-of-2.json"));
    for k in 1..=2 {
        let text = std::fs::read_to_string(shard(k)).unwrap();
        for secret in [
            "agent-token-0123456789",
            "control-token",
            "env-secret-0123456789",
        ] {
            assert!(!text.contains(secret), "shard {k} carries {secret}");
        }
        let carried = &read(&shard(k))["shard"]["config"];
        assert_eq!(carried["agent"]["headers"]["Authorization"], "(redacted)");
        assert_eq!(carried["contract"]["name"], "Shards");
    }
    // Merged where no config file is: as merged with the file.
    let with = [
        "report",
        "merge",
        "-c",
        "flakestorm.yaml",
        "-o",
        "with.json",
        "reports",
    ];
    let (code, out, err) = flakestorm_env(&with, d, &secrets);
    let with_file = read(&d.join("with.json"));
    assert_eq!(code, report_code(&with_file), "{out}{err}");
    let elsewhere = tempfile::tempdir().unwrap();
    let e = elsewhere.path();
    std::fs::create_dir(e.join("shards")).unwrap();
    for k in 1..=2 {
        std::fs::copy(
            shard(k),
            e.join(format!("shards/contract.shard-{k}-of-2.json")),
        )
        .unwrap();
    }
    let (code, out, err) = flakestorm(&["report", "merge", "shards", "-o", "alone.json"], e);
    let alone = read(&e.join("alone.json"));
    assert_eq!(code, report_code(&alone), "{out}{err}");
    assert_eq!(judged(&alone), judged(&with_file));
    assert_eq!(alone["config_digest"], with_file["config_digest"]);
    // Without -o, the merged report is written beside the shards.
    let (code, out, err) = flakestorm(&["report", "merge", "shards", "--no-store"], e);
    assert_eq!(code, report_code(&alone), "{out}{err}");
    assert_eq!(
        judged(&read(&e.join("shards/contract.json"))),
        judged(&alone)
    );
    // A report is anyone's file: what it carries expands no variable of the merge's
    // environment, opens no file and records in no store outside the working folder.
    let hostile = |name: &str, edit: &dyn Fn(&mut Value)| {
        let folder = e.join(name);
        std::fs::create_dir(&folder).unwrap();
        for k in 1..=2 {
            let mut r = read(&shard(k));
            edit(&mut r["shard"]["config"]);
            std::fs::write(
                folder.join(format!("contract.shard-{k}-of-2.json")),
                r.to_string(),
            )
            .unwrap();
        }
        let env = [("MERGER_SECRET", "merger-secret-0123456789")];
        let (code, out, err) = flakestorm_env(&["report", "merge", name], e, &env);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert!(!folder.join("contract.json").exists(), "{name}: written");
        assert!(
            !format!("{out}{err}").contains("merger-secret"),
            "{name}: {err}"
        );
        err
    };
    let err = hostile("vars", &|c| {
        c["contract"]["name"] = json!("${MERGER_SECRET}")
    });
    assert!(err.contains("`${MERGER_SECRET}` is not expanded"), "{err}");
    let err = hostile("pricing", &|c| {
        c["pricing"] = json!({"file": "/etc/passwd"})
    });
    assert!(
        err.contains("pricing.file") && err.contains("outside the working directory"),
        "{err}"
    );
    // The contract's `behavior_unchanged` compares answers: a merge would send them there.
    let err = hostile("embeddings", &|c| {
        c["advanced"]["embeddings"] =
            json!({"url": "http://127.0.0.1:9/v1/embeddings", "model": "m"})
    });
    assert!(
        err.contains("advanced.embeddings") && err.contains("-c FILE"),
        "{err}"
    );
    let err = hostile("store", &|c| c["data_dir"] = json!("/tmp/elsewhere"));
    assert!(
        err.contains("data_dir `/tmp/elsewhere`") && err.contains("--no-store"),
        "{err}"
    );
    // A shard that ran with another setting (an edited copy): named, with where it differs.
    let mut value = read(&e.join("shards/contract.shard-2-of-2.json"));
    let severity = &mut value["shard"]["config"]["contract"]["invariants"][0]["severity"];
    assert_eq!(severity, "high");
    *severity = json!("low");
    std::fs::write(e.join("edited.json"), value.to_string()).unwrap();
    let one = "shards/contract.shard-1-of-2.json";
    let (code, _, err) = flakestorm(&["report", "merge", one, "edited.json"], e);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("edited.json is not a shard of the same run as shards/contract.shard-1-of-2.json: the same config file with other settings")
            && err.contains("(first at `contract.invariants[0].severity`)"),
        "{err}"
    );
    // A shard written before shards carried their config, beside one that does.
    value["shard"].as_object_mut().unwrap().remove("config");
    std::fs::write(e.join("old.json"), value.to_string()).unwrap();
    let (code, _, err) = flakestorm(&["report", "merge", "old.json", one], e);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("old.json carries no config (written by an older flakestorm)"),
        "{err}"
    );
    // With -c the file is the config, whatever the shards carry.
    let file = d.join("flakestorm.yaml");
    let mut with_c = vec!["report", "merge", "-c", file.to_str().unwrap()];
    with_c.extend([
        "--no-store",
        "-o",
        "c.json",
        "old.json",
        "shards/contract.shard-1-of-2.json",
    ]);
    let (code, out, err) = flakestorm_env(&with_c, e, &secrets);
    assert_eq!(code, report_code(&read(&e.join("c.json"))), "{out}{err}");
}
