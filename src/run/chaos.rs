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
use super::judge::{UNTRACED_WARNING, view};
use super::matrix::{ScenarioOutcome, ScenarioRun, run_matrix};
use super::shard::{Raw, ShardPart, raw_scenarios};
use super::verdict::{Evidence, Judgement, Seen, decide};
use crate::chaos::spec::CompiledChaos;
use crate::checks::spec::{Check, InvariantSpec};
use crate::checks::{Invariant, Similarity, Verdict};
use crate::config::{Attribution, When};

pub const SCHEMA: &str = "flakestorm.chaos/2";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptVerdict {
    pub prompt: String,
    /// Every check that applies passed. False for a prompt that was not judged.
    pub passed: bool,
    /// Judged: not an environment error, the chaos reached the agent, and every check
    /// could be tested (a traffic check cannot when nothing crossed the proxy), unless one
    /// failed.
    pub judged: bool,
    /// One verdict per invariant, in config order.
    pub checks: Vec<Verdict>,
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
    /// E.g. the embeddings endpoint failed, or the agent dropped the trace id.
    pub warnings: Vec<String>,
    /// Under `--shard`: which part of the run this is, and what a merge needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPart>,
    /// The `(baseline)` pass flakestorm ran without chaos to classify what the agent did
    /// with faults (docs/outcomes.md): the prompts whose cases met one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<CaseResult>,
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
        ShardPart::new(s, &ctx.trials, golden, mine, raw)
    });
    let run = sent.judged(ctx, name, invariants).await;
    let mut report = chaos_report(ctx, name, run);
    if let Some((o, why)) = extra {
        add_baseline(ctx, &mut report, o);
        report.warnings.push(why);
    }
    report.shard = part;
    Ok(report)
}

/// The `(baseline)` pass's cases and coverage in a chaos run's report.
pub(super) fn add_baseline(ctx: &RunContext, report: &mut ChaosReport, o: ScenarioOutcome) {
    let before = coverage::Before::after(&report.coverage, ctx.agent.resets());
    let name = super::classes::BASELINE;
    let covered = coverage::of(name, &o.cases, &o.exchanges, o.stats, &ctx.declared, before);
    report.coverage.push(covered);
    report.agent_calls += o.cases.len();
    report.baseline = o.cases;
}

/// A chaos run's report from its judged prompts: the score is their pass rate.
pub(super) fn chaos_report(ctx: &RunContext, name: &str, run: PromptRun) -> ChaosReport {
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
    let judgement = run.decide(ctx, score, judged > 0);
    ChaosReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        chaos: name.to_string(),
        seed: ctx.seed,
        agent_calls: run.cases.len(),
        score,
        judgement,
        min_score: ctx.min_score,
        coverage: run.coverage,
        cases: run.cases,
        prompts: run.prompts,
        trials,
        warnings: run.warnings,
        shard: None,
        baseline: vec![],
    }
}

/// Prompts sent under one chaos, each judged with `invariants`: what chaos and mutation
/// runs share (they score it differently).
pub(super) struct PromptRun {
    pub cases: Vec<CaseResult>,
    /// One per case, in order.
    pub prompts: Vec<PromptVerdict>,
    pub coverage: Vec<Coverage>,
    pub warnings: Vec<String>,
    since: Since,
}

/// Where a run's traffic counts come from: its journal since it began, or the shards a
/// merge made one run of.
enum Since {
    Journal(super::verdict::JournalMark, crate::agent::AnswersRead),
    Shards(Seen),
}

impl Since {
    fn seen(&self, ctx: &RunContext) -> Seen {
        match self {
            Since::Journal(mark, answers) => Seen::since(ctx, *mark, *answers),
            Since::Shards(seen) => seen.clone(),
        }
    }
}

impl PromptRun {
    /// What the journal and the agent saw from the first prompt sent until now.
    pub(super) fn seen(&self, ctx: &RunContext) -> Seen {
        self.since.seen(ctx)
    }

    /// The run's verdict for `score`.
    pub(super) fn decide(&self, ctx: &RunContext, score: f64, judged_anything: bool) -> Judgement {
        let seen = self.since.seen(ctx);
        decide(&Evidence {
            score,
            judged_anything,
            ..Evidence::of(ctx, &seen, &self.cases, &self.coverage)
        })
    }
}

/// One scenario's prompts, sent: its outcome, and where its traffic counts come from.
pub(super) struct Sent {
    pub outcome: ScenarioOutcome,
    since: Since,
}

fn compile(invariants: &[InvariantSpec]) -> Result<Vec<Invariant>, RunError> {
    invariants
        .iter()
        .map(|i| Invariant::compile(i).map_err(RunError::Invariant))
        .collect()
}

/// The scenario run of `prompts` under `chaos`: it plants canaries when a check looks
/// for them.
pub(super) fn scenario<'a>(
    name: &'a str,
    chaos: &'a CompiledChaos,
    invariants: &[InvariantSpec],
) -> ScenarioRun<'a> {
    ScenarioRun {
        name,
        chaos,
        canary: invariants
            .iter()
            .any(|i| matches!(i.check, Check::NoExfiltration {})),
        // Cases under chaos get outcome classes when an `outcome` invariant asks (a
        // mutation run's variants never do: they are not sent through `run_chaos`).
        trace: super::classes::classifies(chaos, invariants),
        attributed: false,
    }
}

/// Sends `prompts` under `chaos` (scenario `name`); under `--shard`, those whose unit
/// (`units`, by position; else the prompt itself) is the shard's.
pub(super) async fn send_prompts(
    ctx: &RunContext,
    name: &str,
    chaos: &CompiledChaos,
    prompts: &[String],
    units: Option<&[String]>,
    invariants: &[InvariantSpec],
) -> Result<Sent, RunError> {
    let compiled = compile(invariants)?;
    // Traffic checks need each exchange to belong to exactly one case (design.md §6).
    let ctx = &*ctx.for_traffic(compiled.iter().any(Invariant::is_traffic));
    let mark = super::verdict::JournalMark::now(&ctx.journal);
    let answers = ctx.agent.answers_read();
    let compiled = std::sync::Arc::new(compiled);
    let run = scenario(name, chaos, invariants);
    let outcome = run_matrix(ctx, &[run], prompts, units, &so_far(ctx, &compiled))
        .await
        .pop()
        .unwrap_or_default();
    Ok(Sent {
        outcome,
        since: Since::Journal(mark, answers),
    })
}

impl Sent {
    /// A merge's outcome, with its shards' counts.
    pub(super) fn merged(outcome: ScenarioOutcome, seen: Seen) -> Sent {
        Sent {
            outcome,
            since: Since::Shards(seen),
        }
    }

    /// What the journal and the agent saw while the prompts were sent.
    pub(super) fn seen(&self, ctx: &RunContext) -> Seen {
        self.since.seen(ctx)
    }

    /// Judges each case with `invariants`.
    pub(super) async fn judged(
        self,
        ctx: &RunContext,
        name: &str,
        invariants: &[InvariantSpec],
    ) -> PromptRun {
        let compiled = compile(invariants).unwrap_or_default();
        let outcome = self.outcome;
        // One scenario: nothing ran before it.
        let covered = coverage::of(
            name,
            &outcome.cases,
            &outcome.exchanges,
            outcome.stats,
            &ctx.declared,
            coverage::Before::default(),
        );
        let cases = outcome.cases;
        let mut warnings = vec![];
        let checks = invariants.iter().map(|i| &i.check);
        let sim =
            super::embed::measure(ctx, checks, &cases, &Default::default(), &mut warnings).await;
        let untested = covered.untested(When::Always);
        let silent = covered.silent.as_deref();
        let prompts: Vec<PromptVerdict> = cases
            .iter()
            .map(|c| {
                let unjudged = c.not_judged.clone().or_else(|| untested.clone());
                let checks: Vec<Verdict> = match &unjudged {
                    Some(why) => vec![Verdict::NotTested(why.clone()); compiled.len()],
                    None => compiled
                        .iter()
                        .map(|inv| inv.check(&view(c, None, &sim, silent)))
                        .collect(),
                };
                let failed = checks.iter().any(|v| matches!(v, Verdict::Fail(_)));
                // A check not tested leaves the prompt unjudged, unless another one failed.
                let untested = checks.iter().any(|v| matches!(v, Verdict::NotTested(_)));
                let judged = unjudged.is_none() && (failed || !untested);
                PromptVerdict {
                    prompt: c.prompt.clone(),
                    passed: judged && !failed,
                    judged,
                    checks,
                }
            })
            .collect();
        if ctx.attribution == Attribution::Header && cases.iter().any(|c| c.traffic.is_none()) {
            warnings.push(UNTRACED_WARNING.to_string());
        }
        PromptRun {
            cases,
            prompts,
            coverage: vec![covered],
            warnings,
            since: self.since,
        }
    }
}

/// Judges a case as it ends on its own answer: the checks as the run will make them, less
/// the chaos coverage and the embeddings, which are only known at the end.
fn so_far(ctx: &RunContext, invariants: &std::sync::Arc<Vec<Invariant>>) -> super::Provisional {
    let sim = match ctx.embedder {
        Some(_) => Similarity::Unavailable("measured when the run ends".into()),
        None => Similarity::Lexical,
    };
    let invariants = invariants.clone();
    std::sync::Arc::new(move |c: &CaseResult| {
        if let Some(why) = &c.not_judged {
            return super::Judged {
                so_far: super::SoFar::NotJudged,
                checks: super::CaseChecks::Invariants(vec![
                    Verdict::NotTested(why.clone());
                    invariants.len()
                ]),
            };
        }
        // The scenario's silence is known when it ends: its traffic checks are final then.
        let v = view(c, None, &sim, None);
        let checks: Vec<Verdict> = invariants.iter().map(|i| i.check(&v)).collect();
        let so_far = match checks.iter().any(|v| matches!(v, Verdict::Fail(_))) {
            true => super::SoFar::Failed,
            false => super::SoFar::Passed,
        };
        super::Judged {
            so_far,
            checks: super::CaseChecks::Invariants(checks),
        }
    })
}
