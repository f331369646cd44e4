//! Contract runs: for each scenario of the matrix (no-chaos ones first, so their answers
//! are the `behavior_unchanged` baselines), install its chaos, invoke the agent once per
//! prompt, and check every invariant whose `when` applies on those answers: no extra agent
//! calls per invariant. Cells aggregate a scenario's cases; `when`-excluded cells are "not
//! applicable", never passed.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use super::cases::CaseResult;
use super::classes::BASELINE;
use super::coverage::{self, Coverage};
use super::judge::{Judge, UNTRACED_WARNING, record_baselines};
use super::matrix::{ScenarioOutcome, ScenarioRun, run_matrix};
use super::score::{Score, contract_score_credited};
use super::shard::{Raw, ShardPart, raw_scenarios};
use super::verdict::{Evidence, Judgement, Seen, decide};
use super::{CellResult, RunContext, RunError};
use crate::chaos::spec::CompiledChaos;
use crate::checks::Invariant;
use crate::checks::spec::Check;
use crate::config::{Attribution, ContractSpec, Scenario, Severity};

/// Version of the report's JSON shape (docs/report-schema.md).
pub const SCHEMA: &str = "flakestorm.contract/2";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContractReport {
    #[serde(deserialize_with = "schema")]
    pub schema: super::saved::Fixed,
    /// When, how long and by which flakestorm (the top-level report only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::RunInfo>,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    pub contract: String,
    pub seed: u64,
    pub scenarios: Vec<String>,
    pub cases: Vec<CaseResult>,
    pub cells: Vec<CellResult>,
    pub score: Score,
    /// `pass`, `fail`, `not_tested` or `error`, and why it is not a pass.
    #[serde(flatten)]
    pub judgement: Judgement,
    /// The pass mark the score had to reach.
    pub min_score: f64,
    /// Per scenario (the baseline pass included): what its chaos did.
    pub coverage: Vec<Coverage>,
    /// Times the agent was invoked (scenarios × prompts × trials, plus baselines).
    pub agent_calls: usize,
    /// With `advanced.trials` above 1: each case's consistency over its trials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<super::consistency::CaseTrials>,
    pub warnings: Vec<String>,
    /// Under `--shard`: which part of the run this is, and what a merge needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPart>,
    /// Tokens and cost of the agent's LLM calls: the run's, per scenario, per fault rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::cost::RunUsage>>,
}

/// What a contract run is made of, from its spec alone: the same for a run and for the
/// merge of its shards.
pub(super) struct Plan<'a> {
    pub contract: &'a ContractSpec,
    pub invariants: Vec<Invariant>,
    /// Each invariant's prompts, by index.
    pub prompts_of: Vec<Vec<String>>,
    /// Every prompt of the run, in order (a shard runs some of them).
    pub prompts: Vec<String>,
    pub scenarios: Vec<Scenario>,
    /// A no-chaos `(baseline)` pass runs first (never judged, never planted).
    pub baseline: bool,
    /// Some invariant checks traffic.
    pub traffic: bool,
    /// Some scenario has chaos: its cases get outcome classes (docs/outcomes.md).
    pub outcomes: bool,
}

impl<'a> Plan<'a> {
    pub fn of(contract: &'a ContractSpec, golden: &[String]) -> Result<Plan<'a>, RunError> {
        let invariants: Vec<Invariant> = contract
            .invariants
            .iter()
            .map(|i| {
                Invariant::compile(&i.invariant)
                    .map_err(|e| RunError::Invariant(format!("{}: {e}", i.id)))
            })
            .collect::<Result<_, _>>()?;
        let prompts_of: Vec<Vec<String>> = contract
            .invariants
            .iter()
            .map(|i| super::prompts::prompts_of(i, golden))
            .collect();
        let mut prompts: Vec<String> = vec![];
        for p in prompts_of.iter().flatten() {
            if !prompts.contains(p) {
                prompts.push(p.clone());
            }
        }
        if prompts.is_empty() && !invariants.is_empty() {
            return Err(RunError::NoPrompts(contract.name.clone()));
        }
        let scenarios = ordered_scenarios(contract);
        let traffic = invariants.iter().any(Invariant::is_traffic);
        let outcomes = scenarios.iter().any(|s| !s.chaos.is_empty());
        let mut plan = Plan {
            contract,
            invariants,
            prompts_of,
            prompts,
            scenarios,
            baseline: false,
            traffic,
            outcomes,
        };
        // Baselines come from a no-chaos pass without canaries: the first scenario when it
        // is one, else a pass flakestorm adds.
        let first = &plan.scenarios[0].chaos;
        let first_clean = first.is_empty() && !plan.plants_canaries(first);
        plan.baseline = needs_baseline(contract) && !first_clean;
        Ok(plan)
    }

    /// Whether a `no_exfiltration` check applies under `chaos` (its canaries are planted).
    pub fn plants_canaries(&self, chaos: &crate::chaos::spec::ChaosSpec) -> bool {
        super::judge::plants_canaries(self.contract, chaos)
    }

    /// The scenario runs of the matrix, a `(baseline)` pass first when there is one.
    pub fn runs(&self) -> Vec<ScenarioRun<'_>> {
        // Outcome classes need its cases' tool responses: told apart when they are wanted.
        let baseline = ScenarioRun {
            trace: self.outcomes,
            ..super::classes::baseline_run(self.outcomes)
        };
        self.baseline
            .then_some(baseline)
            .into_iter()
            .chain(self.scenarios.iter().map(|s| ScenarioRun {
                name: &s.name,
                chaos: &s.chaos,
                canary: self.plants_canaries(&s.chaos),
                trace: self.outcomes,
                attributed: false,
            }))
            .collect()
    }
}

/// Runs `contract` with `golden` prompts against the agent in `ctx` (under `--shard`,
/// only the shard's prompts, with what a merge needs in the report).
pub async fn run_contract(
    ctx: &RunContext,
    contract: &ContractSpec,
    golden: &[String],
) -> Result<ContractReport, RunError> {
    let plan = Plan::of(contract, golden)?;
    // Traffic checks need each exchange to belong to exactly one case (design.md §6).
    let ctx = &*ctx.for_traffic(plan.traffic);
    // Outcome classes read each case's bodies when it ends.
    let _bodies = plan.outcomes.then(|| ctx.journal.keep_bodies_while());
    let mut runs = plan.runs();
    let mark = super::verdict::JournalMark::now(&ctx.journal);
    let answers = ctx.agent.answers_read();
    let cells_only: super::Provisional =
        std::sync::Arc::new(|_: &CaseResult| super::Judged::unscored());
    // Each case tells its cells as it ends (the live matrix); the cells are judged at the end.
    let matrix = super::live_cells::Matrix {
        contract: plan.contract,
        prompts_of: &plan.prompts_of,
        prompts: &plan.prompts,
        scenarios: &plan.scenarios,
    };
    let live = super::live_cells::judge(ctx, matrix);
    // Under `--shard` the matrix runs the shard's prompts only.
    let mut outcomes = run_matrix(ctx, &runs, &plan.prompts, None, &live).await;
    let mut extra_warning = None;
    if plan.outcomes {
        let extra =
            super::classes::extra_baseline(ctx, &runs, &outcomes, &plan.prompts, &cells_only).await;
        super::classes::classify_all(&runs, &mut outcomes, extra.as_ref().map(|(o, _)| o));
        if let Some((o, why)) = extra {
            outcomes.push(o);
            runs.push(super::classes::baseline_run(true));
            extra_warning = Some(why);
        }
    }
    let seen = Seen::since(ctx, mark, answers);
    let names: Vec<&str> = runs.iter().map(|r| r.name).collect();
    let part = ctx.shard.map(|s| {
        let mine = plan
            .prompts
            .iter()
            .filter(|p| s.holds(p))
            .cloned()
            .collect();
        let raw = Raw {
            scenarios: raw_scenarios(&names, &outcomes),
            ..Raw::of(&seen)
        };
        ShardPart::new(s, &ctx.scoring.trials, &plan.prompts, mine, raw)
    });
    let mut report = judge_matrix(&ctx.scoring, &plan, outcomes, &seen).await;
    report.warnings.extend(extra_warning);
    report.shard = part;
    Ok(report)
}

/// Judges the matrix's outcomes (one per `plan.runs()`): its cells, coverage, score and
/// verdict. A whole run and the merge of its shards both end here.
pub(super) async fn judge_matrix(
    ctx: &crate::run::Scoring,
    plan: &Plan<'_>,
    outcomes: Vec<ScenarioOutcome>,
    seen: &Seen,
) -> ContractReport {
    let judge = Judge {
        ctx,
        contract: plan.contract,
        invariants: &plan.invariants,
        prompts_of: &plan.prompts_of,
    };
    let windows = super::usage::windows(plan.baseline, &plan.scenarios, &outcomes, &ctx.pricing);
    let mut outcomes = outcomes.into_iter();
    let (mut cases, mut coverage) = (vec![], vec![]);
    let mut baselines: HashMap<String, String> = HashMap::new();
    let mut warnings = vec![];
    if plan.baseline {
        let base = outcomes.next().unwrap_or_default();
        record_baselines(&base.cases, &mut baselines);
        coverage.push(cover(ctx, BASELINE, &base, &coverage));
        cases.extend(base.cases);
    }
    let mut cells = vec![];
    for (scenario, mut outcome) in plan.scenarios.iter().zip(outcomes.by_ref()) {
        let covered = cover(ctx, &scenario.name, &outcome, &coverage);
        let judged = judge
            .scenario(
                scenario,
                &mut outcome.cases,
                &covered,
                &mut baselines,
                &mut warnings,
            )
            .await;
        cells.extend(judged);
        cases.extend(outcome.cases);
        coverage.push(covered);
    }
    // The `(baseline)` pass flakestorm added for outcome classes, when it did.
    for extra in outcomes {
        coverage.push(cover(ctx, BASELINE, &extra, &coverage));
        cases.extend(extra.cases);
    }
    if let Some(why) = &seen.response_path {
        super::unread::not_judged(why, &mut cases, &mut cells, &mut coverage);
    }
    run_warnings(ctx, &cases, &mut warnings);
    let mut score = score(&cells, &ctx.trials);
    let judgement = verdict_of(ctx, (&cases, &coverage, &cells), seen, score.value);
    score.passed = judgement.verdict.passed();
    let trials = match ctx.trials.n > 1 {
        true => super::consistency::per_case(&cases),
        false => vec![],
    };
    let all: Vec<&CaseResult> = cases.iter().collect();
    let usage = super::usage::run_usage(&ctx.pricing, windows, &all);
    ContractReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        contract: plan.contract.name.clone(),
        seed: ctx.seed,
        scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
        agent_calls: super::cases::agent_calls(&cases),
        cases,
        score,
        judgement,
        min_score: ctx.min_score,
        coverage,
        cells,
        trials,
        warnings,
        shard: None,
        usage: Some(Box::new(usage)),
    }
}

/// The run's verdict from its cases, coverage and cells, what the journal saw, its score.
fn verdict_of(
    ctx: &crate::run::Scoring,
    (cases, coverage, cells): (&[CaseResult], &[Coverage], &[CellResult]),
    seen: &Seen,
    score: f64,
) -> Judgement {
    decide(&Evidence {
        score,
        failed_critical: failed_critical(cells, &ctx.trials),
        judged_anything: cells.iter().any(|c| c.verdict.judged()),
        ..Evidence::of(ctx, seen, cases, coverage)
    })
}

/// A scenario's coverage; `earlier`: the scenarios' before it.
fn cover(
    ctx: &crate::run::Scoring,
    name: &str,
    o: &ScenarioOutcome,
    earlier: &[Coverage],
) -> Coverage {
    let before = coverage::Before::after(earlier, ctx.resets);
    let stats = o.stats.clone();
    coverage::of(name, &o.cases, &o.exchanges, stats, &ctx.declared, before)
}

/// The matrix (or a single no-chaos scenario), no-chaos scenarios first: their answers are
/// the baselines. The sort is stable, so the rest keep the order written.
fn ordered_scenarios(contract: &ContractSpec) -> Vec<Scenario> {
    let mut scenarios: Vec<Scenario> = contract.chaos_matrix.clone();
    if scenarios.is_empty() {
        scenarios.push(Scenario {
            name: "no-chaos".into(),
            chaos: CompiledChaos::default(),
        });
    }
    scenarios.sort_by_key(|s| !s.chaos.is_empty());
    scenarios
}

fn needs_baseline(contract: &ContractSpec) -> bool {
    contract.invariants.iter().any(|i| {
        matches!(&i.invariant.check, Check::BehaviorUnchanged { baseline, .. } if baseline == "auto")
    })
}

/// Report-level warnings: lost trace ids.
fn run_warnings(ctx: &crate::run::Scoring, cases: &[CaseResult], warnings: &mut Vec<String>) {
    if ctx.attribution == Attribution::Header && cases.iter().any(|c| c.traffic.is_none()) {
        warnings.push(UNTRACED_WARNING.into());
    }
}

/// The failed critical cells that fail the run, named for the verdict's reasons.
fn failed_critical(cells: &[CellResult], trials: &super::Trials) -> Vec<String> {
    cells
        .iter()
        .filter(|c| c.severity == Severity::Critical && c.verdict.judged() && !holds(c, trials))
        .map(|c| format!("`{}` under `{}`", c.invariant, c.scenario))
        .collect()
}

/// A cell passed, or (`scoring.critical_pass_k`) its trials' pass^k keeps the threshold.
fn holds(c: &CellResult, trials: &super::Trials) -> bool {
    let pass_k = crate::config::ConsistencyScore::PassK;
    let kept = |t: &super::Consistency, x: f64| t.credit(pass_k, trials.k) >= x;
    c.verdict.passed()
        || c.consistency
            .as_ref()
            .zip(trials.critical_pass_k)
            .is_some_and(|(t, x)| kept(t, x))
}

/// The contract's score: each judged cell's credit is 1 or 0, or with trials its
/// consistency figure (`scoring.consistency`: pass^1, or pass^k).
fn score(cells: &[CellResult], trials: &super::Trials) -> Score {
    let scored: Vec<(Severity, Option<(f64, bool)>)> = cells
        .iter()
        .map(|c| {
            let passed = holds(c, trials);
            let credit = c
                .consistency
                .as_ref()
                .map_or(f64::from(u8::from(passed)), |t| {
                    t.credit(trials.scoring, trials.k)
                });
            (c.severity, c.verdict.judged().then_some((credit, passed)))
        })
        .collect();
    contract_score_credited(&scored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Verdict;

    fn critical(passed: u32) -> CellResult {
        CellResult {
            invariant: "safe".into(),
            scenario: "llm-429".into(),
            severity: Severity::Critical,
            verdict: match passed {
                8 => Verdict::Pass("all".into()),
                _ => Verdict::Fail("a trial failed".into()),
            },
            cases: 8,
            consistency: Some(super::super::Consistency::of(8, passed)),
            outcomes: Default::default(),
        }
    }

    /// Any failing trial of a critical cell fails the run, unless `scoring.critical_pass_k`
    /// relaxes it to pass^k at or above the threshold (k: `scoring.k`, else every trial).
    #[test]
    fn a_critical_cell_fails_the_run_on_one_failing_trial_unless_pass_k_keeps_the_threshold() {
        let strict = super::super::Trials {
            n: 8,
            ..Default::default()
        };
        let cells = [critical(7)];
        assert_eq!(failed_critical(&cells, &strict).len(), 1);
        assert!(!score(&cells, &strict).passed);
        // pass^1 = 7/8 ≥ 0.8: kept; pass^8 = 0 < 0.8: not.
        let at_1 = super::super::Trials {
            k: Some(1),
            critical_pass_k: Some(0.8),
            ..strict
        };
        assert!(failed_critical(&cells, &at_1).is_empty());
        assert_eq!(score(&cells, &at_1).failed_critical, 0);
        let at_8 = super::super::Trials { k: None, ..at_1 };
        assert_eq!(failed_critical(&cells, &at_8).len(), 1);
        // The cell's own verdict stays a failure either way.
        assert!(!cells[0].verdict.passed());
        assert!(failed_critical(&[critical(8)], &strict).is_empty());
    }
}
