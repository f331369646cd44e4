//! Shards of a contract run, made whole again (`flakestorm report merge`, docs/scale.md):
//! `merge_contract` checks that the
//! shards are of one run (config, seed, version, case set), each given once and all
//! there, rebuilds the matrix's outcomes from their cases (exchange ids renumbered so
//! shards never collide) and judges them through `judge_matrix`, the code a whole run
//! ends with: cells, coverage, score and verdict are computed, never summed from the
//! shards' own. Missing shards with `allow_partial` make the verdict not tested
//! (INCOMPLETE), never a pass.

use std::collections::HashSet;
use std::sync::Arc;

use super::cases::CaseResult;
use super::contract::{ContractReport, Plan, Seen, judge_matrix};
use super::matrix::ScenarioOutcome;
use super::shard::{Raw, ShardPart, units_digest};
use super::verdict::{Judgement, RunVerdict};
use super::{RunContext, RunInfo};
use crate::chaos::RuleStats;
use crate::config::ContractSpec;
use crate::exchange::Exchange;

/// A shard report read from `file`.
pub struct ShardFile {
    pub file: String,
    pub report: ContractReport,
}

/// Merges `shards` of a run of `contract` (with `golden` prompts) made with the config in
/// `ctx`. The error names the file, the field and both values.
pub async fn merge_contract(
    ctx: &RunContext,
    contract: &ContractSpec,
    golden: &[String],
    shards: Vec<ShardFile>,
    allow_partial: bool,
) -> Result<ContractReport, String> {
    let plan = Plan::of(contract, golden).map_err(|e| e.to_string())?;
    let Some(first) = shards.first() else {
        return Err("no shard reports to merge".into());
    };
    let (first_file, first) = (first.file.clone(), first.report.clone());
    let parts: Vec<ShardPart> = shards
        .iter()
        .map(|s| {
            s.report.shard.clone().ok_or_else(|| {
                format!(
                    "{}: not a shard report (it has no `shard` field; run with --shard K/N)",
                    s.file
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let n = parts[0].shard.n;
    for (s, part) in shards.iter().zip(&parts) {
        let r = &s.report;
        let same = [
            (
                "config_digest",
                fmt(&first.config_digest),
                fmt(&r.config_digest),
            ),
            ("seed", first.seed.to_string(), r.seed.to_string()),
            ("contract", first.contract.clone(), r.contract.clone()),
            ("flakestorm", version(&first), version(r)),
            ("shard N", n.to_string(), part.shard.n.to_string()),
            (
                "shard.units_digest",
                parts[0].units_digest.clone(),
                part.units_digest.clone(),
            ),
        ];
        for (field, a, b) in same {
            if a != b {
                return Err(format!(
                    "{} is not a shard of the same run as {first_file}: `{field}` is {b} there, {a} in {first_file}",
                    s.file
                ));
            }
        }
    }
    if first.config_digest != ctx.config_digest {
        return Err(format!(
            "the shards were run with config {}, but the config given is {}: merge with the config they ran",
            fmt(&first.config_digest),
            fmt(&ctx.config_digest)
        ));
    }
    if parts[0].units_digest != units_digest(&plan.prompts) {
        return Err(format!(
            "the shards' case set ({}) is not this config's ({}): merge with the config they ran",
            parts[0].units_digest,
            units_digest(&plan.prompts)
        ));
    }
    let mut seen_k: Vec<(u32, &str)> = vec![];
    let mut units: HashSet<&str> = HashSet::new();
    for (s, part) in shards.iter().zip(&parts) {
        if let Some((_, other)) = seen_k.iter().find(|(k, _)| *k == part.shard.k) {
            return Err(format!(
                "shard {} is given twice: {other} and {}",
                part.shard, s.file
            ));
        }
        seen_k.push((part.shard.k, &s.file));
        for u in &part.units {
            if !units.insert(u) {
                return Err(format!("{}: the case {u:?} is in two shards", s.file));
            }
        }
    }
    let missing: Vec<u32> = (1..=n)
        .filter(|k| !seen_k.iter().any(|(s, _)| s == k))
        .collect();
    if !missing.is_empty() && !allow_partial {
        let list: Vec<String> = missing.iter().map(|k| format!("{k}/{n}")).collect();
        return Err(format!(
            "the run is incomplete: shard(s) {} missing (--allow-partial merges what is there, as not tested)",
            list.join(", ")
        ));
    }
    let ran = units.len();
    let mut both: Vec<(ShardFile, ShardPart)> = shards.into_iter().zip(parts).collect();
    both.sort_by_key(|(_, p)| p.shard.k);
    let (shards, parts): (Vec<ShardFile>, Vec<ShardPart>) = both.into_iter().unzip();
    let outcomes = outcomes(ctx, &plan, &shards, &parts)?;
    let seen = seen_of(&parts);
    let mut report = judge_matrix(ctx, &plan, outcomes, &seen).await;
    let mut warnings: Vec<String> = vec![];
    for w in shards
        .iter()
        .flat_map(|s| &s.report.warnings)
        .chain(&report.warnings)
    {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    report.warnings = warnings;
    report.run = run_info(&shards);
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|k| format!("{k}/{n}")).collect();
        let held = plan.prompts.len() - ran;
        report.judgement = Judgement {
            verdict: RunVerdict::NotTested,
            reasons: vec![format!(
                "INCOMPLETE: shard(s) {} missing ({held} of {} prompts not run); merged with --allow-partial",
                list.join(", "),
                plan.prompts.len()
            )],
        };
        report.score.passed = false;
    }
    Ok(report)
}

fn fmt(d: &Option<String>) -> String {
    d.clone().unwrap_or_else(|| "none".into())
}

fn version(r: &ContractReport) -> String {
    r.run
        .as_ref()
        .map_or_else(|| "unknown".into(), |i| i.flakestorm.clone())
}

/// The matrix's outcomes again: per scenario run, the shards' cases in prompt and trial
/// order, their exchanges and strays, and the rules' counters summed.
fn outcomes(
    ctx: &RunContext,
    plan: &Plan<'_>,
    shards: &[ShardFile],
    parts: &[ShardPart],
) -> Result<Vec<ScenarioOutcome>, String> {
    let runs = plan.runs();
    let offsets = offsets(shards, parts);
    let mut out = vec![];
    for run in &runs {
        let mut cases: Vec<CaseResult> = vec![];
        let mut strays: Vec<Arc<Exchange>> = vec![];
        let mut stats: Vec<RuleStats> = {
            let installed = ctx.engine.install_compiled(run.chaos, None);
            installed.rules().stats()
        };
        for ((s, part), off) in shards.iter().zip(parts).zip(&offsets) {
            let raw = part
                .raw
                .scenarios
                .iter()
                .find(|r| r.name == run.name)
                .ok_or_else(|| format!("{}: no `shard.raw` for scenario `{}`", s.file, run.name))?;
            let mine: Vec<&CaseResult> = s
                .report
                .cases
                .iter()
                .filter(|c| c.scenario == run.name)
                .collect();
            if mine.len() != raw.windows.len() {
                return Err(format!(
                    "{}: scenario `{}` has {} cases but {} windows in `shard.raw`",
                    s.file,
                    run.name,
                    mine.len(),
                    raw.windows.len()
                ));
            }
            for (c, w) in mine.into_iter().zip(&raw.windows) {
                cases.push(renumbered(c, *w, *off));
            }
            strays.extend(raw.strays.iter().map(|e| moved(e, *off)));
            let counted = s.report.coverage.iter().find(|c| c.scenario == run.name);
            for rule in counted.iter().flat_map(|c| &c.rules) {
                if let Some(mine) = stats.iter_mut().find(|r| r.rule == rule.stats.rule) {
                    mine.absorb(&rule.stats);
                }
            }
        }
        let at = |c: &CaseResult| plan.prompts.iter().position(|p| *p == c.prompt);
        cases.sort_by_key(|c| (at(c), c.trial));
        let exchanges = cases
            .iter()
            .flat_map(|c| c.traffic.iter().flatten().cloned())
            .chain(strays)
            .collect();
        // A scenario no case ran has no installs to count.
        if cases.is_empty() {
            stats.clear();
        }
        out.push(ScenarioOutcome {
            cases,
            stats,
            exchanges,
        });
    }
    Ok(out)
}

/// Each shard's exchange ids move past the ones before it: shards number from 1 each.
fn offsets(shards: &[ShardFile], parts: &[ShardPart]) -> Vec<u64> {
    let mut next = 0;
    let mut out = vec![];
    for (s, part) in shards.iter().zip(parts) {
        out.push(next);
        let ids = s
            .report
            .cases
            .iter()
            .flat_map(|c| c.traffic.iter().flatten().map(|e| e.id))
            .chain(part.raw.scenarios.iter().flat_map(|r| {
                r.strays
                    .iter()
                    .map(|e| e.id)
                    .chain(r.windows.iter().map(|w| w.1))
            }));
        next += ids.max().unwrap_or(0) + 1;
    }
    out
}

fn moved(e: &Arc<Exchange>, off: u64) -> Arc<Exchange> {
    let mut e = Exchange::clone(e);
    e.id += off;
    Arc::new(e)
}

/// A shard's case as the whole run would hold it before judging: its window and exchange
/// ids moved by `off`, its checks (the shard's judgement) dropped.
fn renumbered(c: &CaseResult, window: (u64, u64), off: u64) -> CaseResult {
    let mut c = c.clone();
    c.window = (window.0 + off, window.1 + off);
    c.traffic = c.traffic.map(|t| t.iter().map(|e| moved(e, off)).collect());
    for id in &mut c.after_answer {
        *id += off;
    }
    c.checks.clear();
    c
}

/// What the journals saw, over all shards; `response_path` is wrong only when every
/// shard that read answers found it missing in all of them.
fn seen_of(parts: &[ShardPart]) -> Seen {
    let reading: Vec<&Raw> = parts
        .iter()
        .map(|p| &p.raw)
        .filter(|r| r.answers > 0)
        .collect();
    let all_missing = !reading.is_empty() && reading.iter().all(|r| r.response_path.is_some());
    Seen {
        exchanges: parts.iter().map(|p| p.raw.exchanges).sum(),
        agent_exchanges: parts.iter().map(|p| p.raw.agent_exchanges).sum(),
        response_path: all_missing
            .then(|| reading[0].response_path.clone())
            .flatten(),
    }
}

/// The merged run's span: from the first shard's start to the last one's end.
fn run_info(shards: &[ShardFile]) -> Option<RunInfo> {
    let infos: Vec<&RunInfo> = shards
        .iter()
        .filter_map(|s| s.report.run.as_ref())
        .collect();
    let first = infos.first()?;
    let start = infos.iter().map(|i| i.started_at_ms).min()?;
    let end = infos
        .iter()
        .map(|i| i.started_at_ms as f64 + i.duration_ms)
        .fold(0.0, f64::max);
    Some(RunInfo {
        flakestorm: first.flakestorm.clone(),
        started_at_ms: start,
        duration_ms: end - start as f64,
        agent: first.agent.clone(),
    })
}

/// Merges the shard reports `shards` of a run made with `loaded`: the context a whole run
/// would judge in, without an agent or a proxy (embeddings, if configured, are asked
/// again, as a whole run would).
pub async fn merge_reports(
    loaded: &crate::config::Loaded,
    min_score: f64,
    shards: Vec<(String, super::Report)>,
    allow_partial: bool,
) -> Result<super::Report, String> {
    let config = &loaded.config;
    let Some(contract) = &config.contract else {
        return Err(
            "the config has no `contract:` section: only contract runs merge so far".into(),
        );
    };
    let mut files = vec![];
    for (file, report) in shards {
        match report {
            super::Report::Contract(report) => files.push(ShardFile { file, report }),
            super::Report::Chaos(_)
            | super::Report::Mutation(_)
            | super::Report::Replay(_)
            | super::Report::Ci(_) => {
                return Err(format!(
                    "{file}: not a contract report; only contract runs are sharded so far"
                ));
            }
        }
    }
    let seed = files.first().map_or(0, |f| f.report.seed);
    let Some(spec) = &config.agent else {
        return Err("the config has no `agent:` section".into());
    };
    let agent = crate::agent::Agent::new(&spec.at_port(0), config.advanced.retries)
        .map_err(|e| format!("agent: {e}"))?;
    let parts = super::Parts {
        engine: crate::chaos::Engine::new(seed),
        seed,
        journal: crate::journal::Journal::new(1, crate::journal::Redactor::new(&[], &[])),
        agent,
        config_digest: loaded.digest.clone(),
        min_score,
        embedder: super::Embedder::for_config(config).await?,
    };
    let ctx = RunContext::of(config, parts);
    let golden = &config.golden_prompts;
    let report = merge_contract(&ctx, contract, golden, files, allow_partial).await?;
    Ok(super::Report::Contract(report))
}
