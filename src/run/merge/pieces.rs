//! What merging needs of any shard report (`Piece`), and the steps every kind shares:
//! `check` (one run, each shard once, all there), `outcomes` (the matrix again, exchange
//! ids renumbered), `seen` (the journals' counts summed), the merged run's span, warnings
//! and INCOMPLETE verdict.

use std::collections::HashSet;
use std::sync::Arc;

use crate::chaos::RuleStats;
use crate::exchange::Exchange;
use crate::run::RunInfo;
use crate::run::cases::CaseResult;
use crate::run::coverage::Coverage;
use crate::run::matrix::{ScenarioOutcome, ScenarioRun};
use crate::run::shard::{Raw, ShardPart, units_digest};
use crate::run::verdict::{Judgement, RunVerdict, Seen};

/// One shard's report, as merging reads it.
pub struct Piece {
    pub file: String,
    pub config_digest: Option<String>,
    pub seed: u64,
    /// What else its shards must agree on: e.g. `("contract", name)`.
    pub label: (&'static str, String),
    pub run: Option<RunInfo>,
    pub part: ShardPart,
    pub cases: Vec<CaseResult>,
    pub coverage: Vec<Coverage>,
    pub warnings: Vec<String>,
}

/// The pieces of one run, by shard, and what is missing.
pub(super) struct Checked {
    pub pieces: Vec<Piece>,
    pub missing: Vec<u32>,
    pub n: u32,
    /// Units the pieces ran.
    pub ran: usize,
}

/// Every shard report as `pick` takes it (a kind's own report), or which file is of
/// another kind than the first (`kind`).
pub(super) fn all_of<T>(
    shards: Vec<(String, crate::run::Report)>,
    kind: &str,
    pick: fn(crate::run::Report) -> Option<T>,
) -> Result<Vec<(String, T)>, String> {
    let mut out = vec![];
    for (file, report) in shards {
        match pick(report) {
            Some(r) => out.push((file, r)),
            None => {
                return Err(format!(
                    "{file}: not a {kind} report, as the first shard is"
                ));
            }
        }
    }
    Ok(out)
}

/// The `shard` a report `file` has, or why it is not a shard report.
pub(super) fn part_of(file: &str, shard: Option<ShardPart>) -> Result<ShardPart, String> {
    shard.ok_or_else(|| not_a_shard(file))
}

pub(super) fn not_a_shard(file: &str) -> String {
    format!("{file}: not a shard report (it has no `shard` field; run with --shard K/N)")
}

fn fmt(d: &Option<String>) -> String {
    d.clone().unwrap_or_else(|| "none".into())
}

fn version(p: &Piece) -> String {
    p.run
        .as_ref()
        .map_or_else(|| "unknown".into(), |i| i.flakestorm.clone())
}

/// `p` is a shard of the same run as `first`: else which field differs, with both values.
fn same_run(first: &Piece, p: &Piece) -> Result<(), String> {
    let n = |p: &Piece| p.part.shard.n.to_string();
    let same = [
        (
            "config_digest",
            fmt(&first.config_digest),
            fmt(&p.config_digest),
        ),
        ("seed", first.seed.to_string(), p.seed.to_string()),
        (first.label.0, first.label.1.clone(), p.label.1.clone()),
        ("flakestorm", version(first), version(p)),
        ("shard N", n(first), n(p)),
        ("shard.trials", trials(first), trials(p)),
        (
            "shard.units_digest",
            first.part.units_digest.clone(),
            p.part.units_digest.clone(),
        ),
    ];
    match same.into_iter().find(|(_, a, b)| a != b) {
        Some((field, a, b)) => Err(format!(
            "{} is not a shard of the same run as {}: `{field}` is {b} there, {a} in {}",
            p.file, first.file, first.file
        )),
        None => Ok(()),
    }
}

/// A piece's trials per case, and the one it ran alone (`--trial`).
fn trials(p: &Piece) -> String {
    match p.part.trial {
        Some(t) => format!("trial {t} of {}", p.part.trials),
        None => p.part.trials.to_string(),
    }
}

/// Checks that `pieces` are shards of one run of `ctx`'s config whose units are `units`,
/// each given once; missing shards are an error unless `allow_partial`. The error names
/// the file, the field and both values.
pub(super) fn check(
    ctx: &crate::run::Scoring,
    units: &[String],
    mut pieces: Vec<Piece>,
    allow_partial: bool,
) -> Result<Checked, String> {
    let Some(first) = pieces.first() else {
        return Err("no shard reports to merge".into());
    };
    let n = first.part.shard.n;
    for p in &pieces {
        same_run(first, p)?;
    }
    if first.config_digest != ctx.config_digest {
        return Err(format!(
            "the shards were run with config {}, but the config given is {}: merge with the config they ran",
            fmt(&first.config_digest),
            fmt(&ctx.config_digest)
        ));
    }
    let digest = units_digest(units);
    if first.part.units_digest != digest {
        return Err(format!(
            "the shards' case set ({}) is not this config's ({digest}): merge with the config they ran",
            first.part.units_digest
        ));
    }
    let mut ks: Vec<(u32, &str)> = vec![];
    let mut ran: HashSet<&str> = HashSet::new();
    for p in &pieces {
        if let Some((_, other)) = ks.iter().find(|(k, _)| *k == p.part.shard.k) {
            return Err(format!(
                "shard {} is given twice: {other} and {}",
                p.part.shard, p.file
            ));
        }
        ks.push((p.part.shard.k, &p.file));
        for u in &p.part.units {
            if !ran.insert(u) {
                return Err(format!("{}: the case {u:?} is in two shards", p.file));
            }
        }
    }
    let missing: Vec<u32> = (1..=n)
        .filter(|k| !ks.iter().any(|(s, _)| s == k))
        .collect();
    if !missing.is_empty() && !allow_partial {
        return Err(format!(
            "the run is incomplete: shard(s) {} missing (--allow-partial merges what is there, as not tested)",
            listed(&missing, n)
        ));
    }
    let ran = ran.len();
    pieces.sort_by_key(|p| p.part.shard.k);
    Ok(Checked {
        pieces,
        missing,
        n,
        ran,
    })
}

fn listed(missing: &[u32], n: u32) -> String {
    let list: Vec<String> = missing.iter().map(|k| format!("{k}/{n}")).collect();
    list.join(", ")
}

impl Checked {
    /// The verdict of a run merged with shards missing (`--allow-partial`), of `total`
    /// units: never a pass.
    pub fn incomplete(&self, total: usize) -> Option<Judgement> {
        (!self.missing.is_empty()).then(|| Judgement {
            verdict: RunVerdict::NotTested,
            reasons: vec![format!(
                "INCOMPLETE: shard(s) {} missing ({} of {total} prompts not run); merged with --allow-partial",
                listed(&self.missing, self.n),
                total - self.ran
            )],
        })
    }

    /// The shards' warnings, then `own` (the merged judgement's), each once.
    pub fn warnings(&self, own: &[String]) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for w in self.pieces.iter().flat_map(|p| &p.warnings).chain(own) {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
    }

    /// The merged run's span: from the first shard's start to the last one's end.
    pub fn run_info(&self) -> Option<RunInfo> {
        let infos: Vec<&RunInfo> = self.pieces.iter().filter_map(|p| p.run.as_ref()).collect();
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
            trials: first.trials.clone(),
            merged_shards: None,
        })
    }

    /// What the journals saw, over all shards; `response_path` is wrong only when every
    /// shard that read answers found it missing in all of them.
    pub fn seen(&self) -> Seen {
        let raws: Vec<&Raw> = self.pieces.iter().map(|p| &p.part.raw).collect();
        let reading: Vec<&&Raw> = raws.iter().filter(|r| r.answers > 0).collect();
        let all_missing = !reading.is_empty() && reading.iter().all(|r| r.response_path.is_some());
        Seen {
            exchanges: raws.iter().map(|r| r.exchanges).sum(),
            agent_exchanges: raws.iter().map(|r| r.agent_exchanges).sum(),
            response_path: all_missing
                .then(|| reading[0].response_path.clone())
                .flatten(),
            answers: raws.iter().map(|r| r.answers).sum(),
        }
    }

    /// Whether some shard ran a scenario named `name`.
    pub fn has_scenario(&self, name: &str) -> bool {
        let raws = self.pieces.iter().flat_map(|p| &p.part.raw.scenarios);
        raws.clone().any(|r| r.name == name)
    }

    /// The matrix's outcomes again, one per scenario run of `runs`: the shards' cases in
    /// the order of `prompts` and trials, their exchanges and strays, and the rules'
    /// counters summed. A shard without the scenario named `optional` adds none of it.
    pub fn outcomes(
        &self,
        runs: &[ScenarioRun<'_>],
        prompts: &[String],
        optional: Option<&str>,
    ) -> Result<Vec<ScenarioOutcome>, String> {
        let offsets = self.offsets();
        let mut out = vec![];
        for run in runs {
            let mut cases: Vec<CaseResult> = vec![];
            let mut strays: Vec<Arc<Exchange>> = vec![];
            let mut stats: Vec<RuleStats> = crate::chaos::RuleSet::new(run.chaos).stats();
            for (p, off) in self.pieces.iter().zip(&offsets) {
                let raw = p.part.raw.scenarios.iter().find(|r| r.name == run.name);
                // A `(baseline)` pass for outcome classes runs only in the shards that
                // needed one.
                let raw = match raw {
                    None if optional == Some(run.name) => continue,
                    None => {
                        return Err(format!(
                            "{}: no `shard.raw` for scenario `{}`",
                            p.file, run.name
                        ));
                    }
                    Some(raw) => raw,
                };
                let mine: Vec<&CaseResult> =
                    p.cases.iter().filter(|c| c.scenario == run.name).collect();
                if mine.len() != raw.windows.len() {
                    return Err(format!(
                        "{}: scenario `{}` has {} cases but {} windows in `shard.raw`",
                        p.file,
                        run.name,
                        mine.len(),
                        raw.windows.len()
                    ));
                }
                for (c, w) in mine.into_iter().zip(&raw.windows) {
                    cases.push(renumbered(c, *w, *off));
                }
                strays.extend(raw.strays.iter().map(|e| moved(e, *off)));
                let counted = p.coverage.iter().find(|c| c.scenario == run.name);
                for rule in counted.iter().flat_map(|c| &c.rules) {
                    if let Some(mine) = stats.iter_mut().find(|r| r.rule == rule.stats.rule) {
                        mine.absorb(&rule.stats);
                    }
                }
            }
            // Stable, by prompt alone: a shard already has its cases in prompt then trial
            // order, and two prompts of the same text (two variants alike) keep theirs apart.
            let at = |c: &CaseResult| prompts.iter().position(|p| *p == c.prompt);
            cases.sort_by_key(at);
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
    fn offsets(&self) -> Vec<u64> {
        let mut next = 0;
        let mut out = vec![];
        for p in &self.pieces {
            out.push(next);
            let ids = p
                .cases
                .iter()
                .flat_map(|c| c.traffic.iter().flatten().map(|e| e.id))
                .chain(p.part.raw.scenarios.iter().flat_map(|r| {
                    r.strays
                        .iter()
                        .map(|e| e.id)
                        .chain(r.windows.iter().map(|w| w.1))
                }));
            next += ids.max().unwrap_or(0) + 1;
        }
        out
    }
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
    c.outcome = c.outcome.map(|o| o.moved(off));
    c.checks.clear();
    c
}
