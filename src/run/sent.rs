//! Prompts sent under one chaos and judged with the top-level invariants: what chaos and
//! mutation runs share (`send_prompts`, `Sent::judged`), and score differently. Its
//! traffic counts come from the journal since the first prompt, or, for a merge, from the
//! shards (`Since`).

use serde::{Deserialize, Serialize};

use super::RunContext;
use super::RunError;
use super::cases::CaseResult;
use super::coverage::{self, Coverage};
use super::judge::{UNTRACED_WARNING, view};
use super::matrix::{ScenarioOutcome, ScenarioRun, run_matrix};
use super::verdict::{Evidence, Judgement, Seen, decide};
use crate::chaos::spec::CompiledChaos;
use crate::checks::spec::{Check, InvariantSpec};
use crate::checks::{Invariant, Similarity, Verdict};
use crate::config::{Attribution, When};

/// One prompt's verdict under the chaos.
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

/// Prompts sent under one chaos, each judged with `invariants`: what chaos and mutation
/// runs share (they score it differently).
pub(super) struct PromptRun {
    pub cases: Vec<CaseResult>,
    /// One per case, in order.
    pub prompts: Vec<PromptVerdict>,
    pub coverage: Vec<Coverage>,
    pub warnings: Vec<String>,
    /// Every LLM answer of the scenario's journal window, attributed to a case or not.
    pub spent: crate::cost::Tally,
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
    /// The run's verdict for `score`, given what the journal and the agent `seen`.
    pub(super) fn decide(
        &self,
        ctx: &crate::run::Scoring,
        seen: &Seen,
        score: f64,
        judged_anything: bool,
    ) -> Judgement {
        decide(&Evidence {
            score,
            judged_anything,
            ..Evidence::of(ctx, seen, &self.cases, &self.coverage)
        })
    }
}

/// One scenario's prompts, sent: its outcome, and where its traffic counts come from.
pub(super) struct Sent {
    pub outcome: ScenarioOutcome,
    since: Since,
}

pub(super) fn compile(invariants: &[InvariantSpec]) -> Result<Vec<Invariant>, RunError> {
    invariants
        .iter()
        .map(|i| Invariant::compile(i).map_err(|e| RunError::Invariant(e.to_string())))
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
        ctx: &crate::run::Scoring,
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
        let spent = crate::cost::Tally::of(&outcome.exchanges, &ctx.pricing);
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
            spent,
            since: self.since,
        }
    }
}

/// Judges a case as it ends on its own answer: the checks as the run will make them, less
/// the chaos coverage and the embeddings, which are only known at the end.
pub(super) fn so_far(
    ctx: &RunContext,
    invariants: &std::sync::Arc<Vec<Invariant>>,
) -> super::Provisional {
    let sim = match ctx.scoring.embedder {
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
