//! Chaos-only runs: every golden prompt under one set of faults (the `chaos:` section or a
//! profile), checked with the top-level invariants. The score is the pass rate of the
//! prompts that could be judged (design.md §7): a prompt passes when every invariant that
//! applies passes; a prompt whose case met an environment error, whose run's chaos never
//! reached the agent, or one of whose checks could not be tested (and none failed), is not
//! judged.

use serde::{Deserialize, Serialize};

use super::RunContext;
use super::RunError;
use super::cases::CaseResult;
use super::coverage::{self, Coverage};
use super::matrix::ScenarioOutcome;
use super::sent::{PromptRun, PromptVerdict, compile, scenario, send_prompts, so_far};
use super::shard::{Raw, ShardPart, raw_scenarios};
use super::verdict::{Judgement, Seen};
use crate::chaos::spec::CompiledChaos;
use crate::checks::spec::InvariantSpec;

pub const SCHEMA: &str = "flakestorm.chaos/2";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChaosReport {
    #[serde(deserialize_with = "schema")]
    pub schema: super::saved::Fixed,
    /// When, how long and by which flakestorm (the top-level report only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::RunInfo>,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    /// The profile name, or `chaos` for the config's own section.
    pub chaos: String,
    pub seed: u64,
    pub cases: Vec<CaseResult>,
    pub prompts: Vec<PromptVerdict>,
    /// Pass rate of the judged prompts, 0–100 (0 when none was judged).
    pub score: f64,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub min_score: f64,
    pub coverage: Vec<Coverage>,
    pub agent_calls: usize,
    /// With `advanced.trials` above 1: each prompt's consistency over its trials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<super::CaseTrials>,
    /// With `advanced.trials` above 1: the run's consistency, the mean of each prompt's
    /// figures (as a contract cell's is of its prompts').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<super::Consistency>,
    /// E.g. the embeddings endpoint failed, or the agent dropped the trace id.
    pub warnings: Vec<String>,
    /// Under `--shard`: which part of the run this is, and what a merge needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPart>,
    /// The `(baseline)` pass flakestorm ran without chaos to classify what the agent did
    /// with faults (docs/outcomes.md): the prompts whose cases met one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<CaseResult>,
    /// Tokens and cost of the agent's LLM calls: the run's, per scenario (the chaos, and
    /// the `(baseline)` pass), per fault rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::cost::RunUsage>>,
}

pub async fn run_chaos(
    ctx: &RunContext,
    name: &str,
    chaos: &CompiledChaos,
    golden: &[String],
    invariants: &[InvariantSpec],
) -> Result<ChaosReport, RunError> {
    if golden.is_empty() {
        return Err(RunError::NoPrompts(name.to_string()));
    }
    // Outcome classes read each case's bodies when it ends; a chaos run has no no-chaos
    // case to compare with, so it classifies (and adds a baseline pass) only when an
    // `outcome` invariant asks.
    let classes = super::classes::classifies(chaos, invariants);
    let _bodies = classes.then(|| ctx.journal.keep_bodies_while());
    let mut sent = send_prompts(ctx, name, chaos, golden, None, invariants).await?;
    let extra = match classes {
        true => {
            let run = scenario(name, chaos, invariants);
            let so_far = so_far(ctx, &std::sync::Arc::new(compile(invariants)?));
            super::classes::classify_one(ctx, run, &mut sent.outcome, golden, &so_far).await
        }
        false => None,
    };
    let part = ctx.shard.map(|s| {
        let seen = sent.seen(ctx);
        let mine = golden.iter().filter(|p| s.holds(p)).cloned().collect();
        let mut names = vec![name];
        let mut outcomes = vec![sent.outcome.clone()];
        if let Some((o, _)) = &extra {
            names.push(super::classes::BASELINE);
            outcomes.push(o.clone());
        }
        let raw = Raw {
            scenarios: raw_scenarios(&names, &outcomes),
            ..Raw::of(&seen)
        };
        ShardPart::new(s, &ctx.scoring.trials, golden, mine, raw)
    });
    let run = sent.judged(&ctx.scoring, name, invariants).await;
    let seen = run.seen(ctx);
    let mut report = chaos_report(&ctx.scoring, name, run, &seen);
    if let Some((o, why)) = extra {
        add_baseline(&ctx.scoring, &mut report, o);
        report.warnings.push(why);
    }
    report.shard = part;
    Ok(report)
}

/// The mean of units' figures (a chaos run's prompts, a mutation run's variants).
pub(super) fn mean_of(units: &[super::CaseTrials]) -> Option<super::Consistency> {
    let all: Vec<super::Consistency> = units.iter().map(|t| t.consistency.clone()).collect();
    super::Consistency::mean(&all)
}

/// The `(baseline)` pass's cases and coverage in a chaos run's report.
pub(super) fn add_baseline(
    ctx: &crate::run::Scoring,
    report: &mut ChaosReport,
    o: ScenarioOutcome,
) {
    let before = coverage::Before::after(&report.coverage, ctx.resets);
    let name = super::classes::BASELINE;
    let base = super::usage::Window::of(name, false, &o.exchanges, &ctx.pricing);
    let covered = coverage::of(name, &o.cases, &o.exchanges, o.stats, &ctx.declared, before);
    report.coverage.push(covered);
    report.agent_calls += super::cases::agent_calls(&o.cases);
    report.baseline = o.cases;
    let main = report.usage.as_ref().and_then(|u| u.scenarios.first());
    if let Some(main) = main {
        let main = (main.scenario.as_str(), true, main.spent.clone());
        let all: Vec<&CaseResult> = report.cases.iter().chain(&report.baseline).collect();
        let usage = super::usage::one_scenario(&ctx.pricing, main, Some(base), &all);
        report.usage = Some(Box::new(usage));
    }
}

/// A chaos run's report from its judged prompts (`seen`: what the journal and the agent
/// saw meanwhile): the score is their pass rate.
pub(super) fn chaos_report(
    ctx: &crate::run::Scoring,
    name: &str,
    mut run: PromptRun,
    seen: &Seen,
) -> ChaosReport {
    // A wrong `agent.response_path` judged nothing of the agent: its prompts are `?`.
    if let Some(why) = &seen.response_path {
        super::unread::prompts_not_judged(why, &mut run);
    }
    let judged = run.prompts.iter().filter(|p| p.judged).count();
    let passed = run.prompts.iter().filter(|p| p.passed).count();
    let trials = match ctx.trials.n > 1 {
        true => super::consistency::grouped(
            run.prompts
                .iter()
                .filter(|p| p.judged)
                .map(|p| (name, p.prompt.as_str(), p.passed)),
        ),
        false => vec![],
    };
    // With trials each prompt earns its consistency figure (`scoring.consistency`).
    let score = match (judged, trials.is_empty()) {
        (0, _) => 0.0,
        (n, true) => passed as f64 * 100.0 / n as f64,
        (_, false) => super::consistency::credited_score(
            trials.iter().map(|t| (1.0, t.consistency.clone())),
            ctx.trials.scoring,
            ctx.trials.k,
        ),
    };
    let judgement = run.decide(ctx, seen, score, judged > 0);
    let all: Vec<&CaseResult> = run.cases.iter().collect();
    let usage =
        super::usage::one_scenario(&ctx.pricing, (name, true, run.spent.clone()), None, &all);
    ChaosReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        chaos: name.to_string(),
        seed: ctx.seed,
        agent_calls: super::cases::agent_calls(&run.cases),
        score,
        judgement,
        min_score: ctx.min_score,
        coverage: run.coverage,
        cases: run.cases,
        prompts: run.prompts,
        consistency: mean_of(&trials),
        trials,
        warnings: run.warnings,
        shard: None,
        baseline: vec![],
        usage: Some(Box::new(usage)),
    }
}
