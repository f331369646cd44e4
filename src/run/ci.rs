//! `ci`: the phases this build can run (mutation, contract, chaos, replay), once each, combined into one
//! score: the `scoring` weights of the phases that ran, renormalised to sum to 1. Phases
//! that did not run say why. The verdict is the worst of the phases' (error, then fail,
//! then not tested) and the overall score must reach the pass mark.

use serde::{Deserialize, Serialize};

use super::verdict::{Judgement, RunVerdict};
use super::{ChaosReport, ContractReport, MutationReport, ReplayReport, RunKind};
use super::{RunContext, RunError, run_chaos, run_contract, run_mutation, run_replay};
use crate::config::Config;
use crate::config::ScoringSpec;

pub const SCHEMA: &str = "flakestorm.ci/2";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    #[serde(deserialize_with = "super::saved::phase")]
    pub name: RunKind,
    /// 0–100 when the phase ran.
    pub score: Option<f64>,
    /// Why it did not run.
    pub skipped: Option<String>,
    pub weight: f64,
    /// The phase's own verdict, when it ran.
    pub verdict: Option<RunVerdict>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CiReport {
    #[serde(deserialize_with = "schema")]
    pub schema: super::saved::Fixed,
    /// When, how long and by which flakestorm (the top-level report only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::RunInfo>,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    pub phases: Vec<Phase>,
    /// Weighted mean over the phases that ran.
    pub overall: f64,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub min_score: f64,
    /// The verdict is `pass`.
    pub passed: bool,
    pub mutation: Option<MutationReport>,
    pub contract: Option<ContractReport>,
    pub chaos: Option<ChaosReport>,
    /// The replay phase (reports written before it ran one have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayReport>,
    /// Under `--shard`: which part of the run this is (its contract and chaos phases say
    /// what a merge needs; its mutation and replay phases run whole on shard 1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::Shard>,
}

/// Combines phase results. `skipped` lists phases that could not run, with the reason.
pub fn combine(
    scoring: &ScoringSpec,
    mutation: Option<MutationReport>,
    contract: Option<ContractReport>,
    chaos: Option<ChaosReport>,
    replay: Option<ReplayReport>,
    skipped: &[(RunKind, String)],
    min_score: f64,
) -> CiReport {
    let ran = [
        (
            RunKind::Mutation,
            mutation.as_ref().map(|m| (m.score, &m.judgement)),
            scoring.mutation,
        ),
        (
            RunKind::Contract,
            contract.as_ref().map(|c| (c.score.value, &c.judgement)),
            scoring.contract,
        ),
        (
            RunKind::Chaos,
            chaos.as_ref().map(|c| (c.score, &c.judgement)),
            scoring.chaos,
        ),
        (
            RunKind::Replay,
            replay.as_ref().map(|r| (r.score, &r.judgement)),
            scoring.replay,
        ),
    ];
    let (phases, judgements) = phase_rows(ran, skipped);
    // A phase that was not tested has a score that measures nothing about the agent (0
    // when nothing was judged): it stays out of the mean, and says so in the verdict.
    let (sum, weights) = phases
        .iter()
        .filter(|p| p.verdict != Some(RunVerdict::NotTested))
        .filter_map(|p| p.score.map(|s| (s * p.weight, p.weight)))
        .fold((0.0, 0.0), |(a, b), (s, w)| (a + s, b + w));
    let overall = if weights > 0.0 { sum / weights } else { 0.0 };
    let scored = weights > 0.0;
    let judgement = overall_verdict(&judgements, scored.then_some(overall), min_score);
    // The phases ran on one config: theirs is the run's.
    let config_digest = [
        contract.as_ref().map(|c| &c.config_digest),
        chaos.as_ref().map(|c| &c.config_digest),
        mutation.as_ref().map(|m| &m.config_digest),
        replay.as_ref().map(|r| &r.config_digest),
    ]
    .into_iter()
    .flatten()
    .find_map(Clone::clone);
    CiReport {
        schema: SCHEMA,
        run: None,
        config_digest,
        phases,
        overall,
        passed: judgement.verdict.passed(),
        judgement,
        min_score,
        mutation,
        contract,
        chaos,
        replay,
        shard: None,
    }
}

/// A phase's name, its score and verdict when it ran, and its weight.
type Ran<'a> = (RunKind, Option<(f64, &'a Judgement)>, f64);

/// Each phase's row (its score and verdict when it ran, else why not) and the verdicts of
/// those that ran.
fn phase_rows(
    ran: [Ran<'_>; 4],
    skipped: &[(RunKind, String)],
) -> (Vec<Phase>, Vec<(RunKind, Judgement)>) {
    let mut phases = vec![];
    let mut judgements = vec![];
    for (name, result, weight) in ran {
        let score = result.map(|(s, _)| s);
        if let Some((_, j)) = result {
            judgements.push((name, j.clone()));
        }
        let why = skipped
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| w.clone());
        phases.push(Phase {
            name,
            score,
            skipped: if score.is_none() { why } else { None },
            weight,
            verdict: result.map(|(_, j)| j.verdict),
        });
    }
    (phases, judgements)
}

/// `ci`: the mutation, contract, chaos and replay phases that can run, once each, combined.
pub(super) async fn run(
    ctx: &RunContext,
    config: &Config,
    skipped: &[(RunKind, String)],
) -> Result<CiReport, RunError> {
    // Under `--shard`, mutation and replay run whole, on shard 1 alone (docs/scale.md).
    let elsewhere = ctx.shard.filter(|s| s.k != 1).map(|s| {
        let why = format!("runs whole on shard 1/{} (this is {s})", s.n);
        [(RunKind::Mutation, why.clone()), (RunKind::Replay, why)]
    });
    let skipped: Vec<(RunKind, String)> = skipped
        .iter()
        .cloned()
        .chain(elsewhere.into_iter().flatten())
        .collect();
    let skipped = skipped.as_slice();
    let whole = RunContext {
        shard: None,
        ..ctx.clone()
    };
    let runs = |phase: RunKind| !skipped.iter().any(|(s, _)| *s == phase);
    let golden = &config.golden_prompts;
    let mutation = match runs(RunKind::Mutation) {
        true => {
            ctx.phase(RunKind::Mutation);
            Some(run_mutation(&whole, None, config).await?)
        }
        false => None,
    };
    let contract = match (&config.contract, runs(RunKind::Contract)) {
        (Some(c), true) => {
            ctx.phase(RunKind::Contract);
            Some(run_contract(ctx, c, golden).await?)
        }
        (Some(_), false) | (None, _) => None,
    };
    let chaos = match runs(RunKind::Chaos) {
        true => {
            ctx.phase(RunKind::Chaos);
            let run = run_chaos(ctx, "chaos", &config.chaos, golden, &config.invariants);
            Some(run.await?)
        }
        false => None,
    };
    let replay = match runs(RunKind::Replay) {
        true => {
            ctx.phase(RunKind::Replay);
            Some(run_replay(&whole, config, &config.replays.sessions).await)
        }
        false => None,
    };
    let mut report = combine(
        &config.scoring,
        mutation,
        contract,
        chaos,
        replay,
        skipped,
        ctx.scoring.min_score,
    );
    report.shard = ctx.shard;
    Ok(report)
}

/// The `ci` phases `config` cannot run, and why.
pub(super) fn ci_skips(config: &Config) -> Vec<(RunKind, String)> {
    let mut skipped = vec![];
    if config.replays.sessions.is_empty() {
        skipped.push((RunKind::Replay, "no `replays.sessions`".to_string()));
    }
    if config.invariants.is_empty() {
        skipped.push((RunKind::Mutation, "needs `invariants:`".into()));
    }
    if config.contract.is_none() {
        skipped.push((RunKind::Contract, "no `contract:` section".into()));
    }
    if config.chaos.is_empty() || config.invariants.is_empty() {
        skipped.push((
            RunKind::Chaos,
            "needs a `chaos:` section and `invariants:`".into(),
        ));
    }
    skipped
}

/// The worst phase verdict (error, fail, not tested), with every phase's reasons; a fail
/// too when the overall score (of the tested phases, if any) is below the pass mark.
fn overall_verdict(
    phases: &[(RunKind, Judgement)],
    overall: Option<f64>,
    min_score: f64,
) -> Judgement {
    if phases.is_empty() {
        return Judgement {
            verdict: RunVerdict::NotTested,
            reasons: vec!["no phase ran".into()],
        };
    }
    let mut reasons: Vec<String> = phases
        .iter()
        .flat_map(|(name, j)| j.reasons.iter().map(move |r| format!("{name} phase: {r}")))
        .collect();
    let has = |v: RunVerdict| phases.iter().any(|(_, j)| j.verdict == v);
    let low = overall.filter(|o| *o < min_score);
    if let Some(overall) = low {
        reasons.push(format!(
            "overall score {overall:.1} is below the pass mark {min_score}"
        ));
    }
    let low = low.is_some();
    let verdict = if has(RunVerdict::Error) {
        RunVerdict::Error
    } else if has(RunVerdict::Fail) || low {
        RunVerdict::Fail
    } else if has(RunVerdict::NotTested) {
        RunVerdict::NotTested
    } else {
        RunVerdict::Pass
    };
    Judgement { verdict, reasons }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_renormalise_over_the_phases_that_ran() {
        let chaos = ChaosReport {
            schema: super::super::chaos::SCHEMA,
            run: None,
            config_digest: None,
            chaos: "chaos".into(),
            seed: 1,
            cases: vec![],
            prompts: vec![],
            score: 50.0,
            judgement: Judgement {
                verdict: RunVerdict::Pass,
                reasons: vec![],
            },
            min_score: 40.0,
            coverage: vec![],
            agent_calls: 0,
            trials: vec![],
            consistency: None,
            warnings: vec![],
            baseline: vec![],
            shard: None,
            usage: None,
        };
        let skipped = [
            (RunKind::Mutation, "needs the mutation engine".to_string()),
            (RunKind::Contract, "no contract".to_string()),
        ];
        let r = combine(
            &ScoringSpec::default(),
            None,
            None,
            Some(chaos.clone()),
            None,
            &skipped,
            40.0,
        );
        assert_eq!(r.overall, 50.0, "only chaos ran: its weight becomes 1");
        assert!(r.passed);
        let r = combine(
            &ScoringSpec::default(),
            None,
            None,
            Some(chaos),
            None,
            &skipped,
            60.0,
        );
        assert_eq!(r.judgement.verdict, RunVerdict::Fail, "below the pass mark");
        let mutation = r
            .phases
            .iter()
            .find(|p| p.name == RunKind::Mutation)
            .unwrap();
        assert_eq!(
            mutation.skipped.as_deref(),
            Some("needs the mutation engine")
        );
        let r = combine(
            &ScoringSpec::default(),
            None,
            None,
            None,
            None,
            &skipped,
            0.0,
        );
        assert!(!r.passed, "nothing ran: not a pass");
        assert_eq!(r.judgement.verdict, RunVerdict::NotTested);
    }

    /// A phase that judged nothing scores 0, which says nothing about the agent: the run is
    /// not tested (exit 2), not failed for a low overall score.
    #[test]
    fn an_untested_phase_is_not_a_low_score() {
        let untested = ChaosReport {
            schema: super::super::chaos::SCHEMA,
            run: None,
            config_digest: None,
            chaos: "chaos".into(),
            seed: 1,
            cases: vec![],
            prompts: vec![],
            score: 0.0,
            judgement: Judgement {
                verdict: RunVerdict::NotTested,
                reasons: vec!["no request crossed the proxy during the run".into()],
            },
            min_score: 70.0,
            coverage: vec![],
            agent_calls: 0,
            trials: vec![],
            consistency: None,
            warnings: vec![],
            baseline: vec![],
            shard: None,
            usage: None,
        };
        let r = combine(
            &ScoringSpec::default(),
            None,
            None,
            Some(untested),
            None,
            &[],
            70.0,
        );
        assert_eq!(
            r.judgement.verdict,
            RunVerdict::NotTested,
            "{:?}",
            r.judgement
        );
        assert!(
            !r.judgement.reasons.iter().any(|w| w.contains("pass mark")),
            "{:?}",
            r.judgement.reasons
        );
    }
}
