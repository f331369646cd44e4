//! A mutation run's report (`MutationReport`), and how it is made from what the run made
//! and judged: its variants (the plan), the judged text variants (`PromptRun`) and the wire
//! cases, paired in plan order, scored by type weight and decided. A whole mutation run and
//! the merge of its shards both end in `assemble`.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::Scoring;
use super::cases::CaseResult;
use super::coverage::Coverage;
use super::sent::PromptRun;
use super::shard::ShardPart;
use super::verdict::{Evidence, Judgement, RunVerdict, Seen, decide};
use super::wire_cases::WireCase;
use crate::checks::Verdict;
use crate::config::MutationsSpec;
use crate::mutate::kind::{Family, MutationType};
use crate::mutate::model::ModelVariants;
use crate::mutate::{Dropped, Plan, Variant};

pub const SCHEMA: &str = "flakestorm.mutation/1";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

/// One variant sent, and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutantVerdict {
    #[serde(flatten)]
    pub variant: Variant,
    /// The golden prompt it was made from.
    pub original: String,
    pub weight: f64,
    /// The `model:` LLM wrote it (a model type, or a `with_model` rewrite).
    pub by_model: bool,
    /// Every check passed. False for a variant that was not judged.
    pub passed: bool,
    pub judged: bool,
    /// One per invariant, in config order.
    pub checks: Vec<Verdict>,
    /// Its trial (1-based) when each variant runs several times (`advanced.trials`): then
    /// `mutants` has one entry per trial, next to each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
}

/// A type's share of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeScore {
    #[serde(rename = "type")]
    pub kind: MutationType,
    pub weight: f64,
    /// Variants (not trials): one is judged when a trial of it was, passed when every
    /// judged trial of it passed.
    pub sent: usize,
    pub judged: usize,
    pub passed: usize,
    /// Generated variants not sent, by reason.
    pub dropped: BTreeMap<Dropped, usize>,
}

/// The scenario text variants run under without `--chaos`.
pub(super) const SCENARIO: &str = "mutations";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutationReport {
    #[serde(deserialize_with = "schema")]
    pub schema: super::saved::Fixed,
    /// When, how long and by which flakestorm (the top-level report only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::RunInfo>,
    pub config_digest: Option<String>,
    /// The chaos the variants ran under (`run --chaos`), or null.
    pub chaos: Option<String>,
    pub seed: u64,
    /// One per variant, in the order sent; `prompt` is the exact text sent.
    pub cases: Vec<CaseResult>,
    pub mutants: Vec<MutantVerdict>,
    pub types: Vec<TypeScore>,
    /// Requested types that made no variant, with the reason.
    pub skipped: BTreeMap<MutationType, String>,
    /// Variants left out by `mutations.max_per_run`.
    pub over_cap: usize,
    /// Weighted pass rate of the judged variants, 0–100 (0 when none was judged); with
    /// trials each variant earns its consistency figure (`scoring.consistency`).
    pub score: f64,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub min_score: f64,
    pub coverage: Vec<Coverage>,
    /// With `advanced.trials` above 1: each variant's consistency over its trials
    /// (`scenario`: its type; `prompt`: its text, or `type #index` for a wire variant).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<super::CaseTrials>,
    /// With `advanced.trials` above 1: the run's consistency, the mean of each variant's
    /// figures (as a contract cell's is of its prompts').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<super::Consistency>,
    pub warnings: Vec<String>,
    /// Under `--shard`: which part of the run this is (its golden prompts), and what a
    /// merge needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPart>,
    /// Tokens and cost of the agent's LLM calls while the text variants ran (wire-level
    /// cases have no traffic of their own): the run's, its scenario's, per fault rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::cost::RunUsage>>,
}

impl MutationReport {
    /// Each case with its mutant: cases hold the text variants in plan order, then the
    /// wire-level ones in plan order (the run sends them so); `mutants` are in plan order.
    pub fn cases_with_mutants(&self) -> impl Iterator<Item = (&CaseResult, &MutantVerdict)> {
        let wire = |m: &&MutantVerdict| m.variant.kind.family() == Family::Wire;
        let texts = self.mutants.iter().filter(move |m| !wire(m));
        self.cases
            .iter()
            .zip(texts.chain(self.mutants.iter().filter(wire)))
    }
}

/// What a mutation run made: its spec, plan, the model's variants and golden prompts.
pub(super) struct Made<'a> {
    pub spec: &'a MutationsSpec,
    pub plan: &'a Plan,
    pub written: &'a ModelVariants,
    pub golden: &'a [String],
}

/// The wire cases run, by variant (`key`): one per trial, in trial order.
pub(super) type Wired = HashMap<(MutationType, usize, u32), Vec<WireCase>>;

pub(super) fn is_wire(v: &Variant) -> bool {
    v.kind.family() == Family::Wire
}

/// A variant's identity: its type, golden prompt and index.
pub(super) fn key(v: &Variant) -> (MutationType, usize, u32) {
    (v.kind, v.prompt_index, v.index)
}

/// The text variants in plan order, and the golden prompt each was made from (its shard
/// unit).
pub(super) fn texts_of(plan: &Plan, golden: &[String]) -> (Vec<String>, Vec<String>) {
    plan.variants
        .iter()
        .filter(|v| !is_wire(v))
        .map(|v| (v.text.clone(), golden[v.prompt_index].clone()))
        .unzip()
}

/// The report of the `held` variants of `made`: each paired with its verdict (the text
/// ones from `run`, in order; the wire ones from `wire`), scored and decided.
pub(super) fn assemble(
    ctx: &Scoring,
    seen: &Seen,
    chaos: Option<&str>,
    made: &Made,
    run: Option<PromptRun>,
    wire: Wired,
    held: &dyn Fn(&Variant) -> bool,
) -> MutationReport {
    let (spec, plan) = (made.spec, made.plan);
    let mut report = empty(ctx, chaos, plan);
    if plan.variants.is_empty() {
        report.judgement.reasons.push(format!(
            "no mutated input was made, so the agent was not tested{}",
            plan.skipped
                .values()
                .map(|why| format!("; {why}"))
                .collect::<String>()
        ));
        report.types = type_scores(spec, plan, &[]);
        return report;
    }
    let mut run = run;
    // A wrong `agent.response_path` judged nothing of the agent: its variants are `?`.
    if let (Some(run), Some(why)) = (run.as_mut(), &seen.response_path) {
        super::unread::prompts_not_judged(why, run);
    }
    let (mutants, wire_done) = paired(ctx, made, run.as_ref(), wire, held);
    let variants = per_variant(&mutants);
    report.score = super::consistency::credited_score(
        variants.iter().map(|(m, c)| (m.weight, c.clone())),
        ctx.trials.scoring,
        ctx.trials.k,
    );
    if ctx.trials.n > 1 {
        report.trials = variants.iter().map(|(m, c)| trials_of(m, c)).collect();
        report.consistency = super::chaos::mean_of(&report.trials);
    }
    let judged_any = mutants.iter().any(|m| m.judged);
    report.judgement = match &run {
        Some(r) => r.decide(ctx, seen, report.score, judged_any),
        None => wire_only(ctx, report.score, judged_any),
    };
    report.types = type_scores(spec, plan, &mutants);
    report.mutants = mutants;
    if let Some(run) = run {
        let name = chaos.unwrap_or(SCENARIO);
        let all: Vec<&CaseResult> = run.cases.iter().collect();
        let window = (name, chaos.is_some(), run.spent.clone());
        let usage = super::usage::one_scenario(&ctx.pricing, window, None, &all);
        report.usage = Some(Box::new(usage));
        report.cases = run.cases;
        report.coverage = run.coverage;
        report.warnings = run.warnings;
    }
    // Sent after the text variants: the order sent.
    report.cases.extend(wire_done);
    if !plan.skipped.is_empty() {
        report
            .warnings
            .extend(plan.skipped.values().map(|why| format!("skipped: {why}")));
    }
    report
        .warnings
        .extend(made.written.from_templates.values().cloned());
    report
}

/// A report with nothing judged yet.
fn empty(ctx: &Scoring, chaos: Option<&str>, plan: &Plan) -> MutationReport {
    MutationReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        chaos: chaos.map(str::to_string),
        seed: ctx.seed,
        cases: vec![],
        mutants: vec![],
        types: vec![],
        skipped: plan.skipped.clone(),
        over_cap: plan.over_cap,
        score: 0.0,
        judgement: Judgement {
            verdict: RunVerdict::NotTested,
            reasons: vec![],
        },
        min_score: ctx.min_score,
        coverage: vec![],
        trials: vec![],
        consistency: None,
        warnings: vec![],
        shard: None,
        usage: None,
    }
}

/// Each held variant's trials with their verdicts, in plan order (text ones from `run`'s
/// judged prompts, in order; wire ones from `wire`), and the wire cases in that order.
fn paired(
    ctx: &Scoring,
    made: &Made,
    run: Option<&PromptRun>,
    mut wire: Wired,
    held: &dyn Fn(&Variant) -> bool,
) -> (Vec<MutantVerdict>, Vec<CaseResult>) {
    let mut judged_texts = run.iter().flat_map(|r| r.prompts.iter());
    let trials = ctx.trials.indices();
    let several = ctx.trials.n > 1;
    let mut mutants = Vec::with_capacity(made.plan.variants.len() * trials.len());
    let mut wire_done = vec![];
    'variants: for v in made.plan.variants.iter().filter(|v| held(v)) {
        let original = &made.golden[v.prompt_index];
        let mut cases = wire.remove(&key(v)).unwrap_or_default().into_iter();
        for &t in &trials {
            let (variant, passed, judged, checks) = if is_wire(v) {
                let Some(case) = cases.next() else {
                    continue 'variants;
                };
                wire_done.push(case.case);
                let variant = Variant {
                    text: case.sent,
                    ..v.clone()
                };
                let judged = !matches!(case.verdict, Verdict::NotTested(_));
                (variant, case.verdict.passed(), judged, vec![case.verdict])
            } else {
                // None left (a merge missing a shard): the wire variants still pair.
                let Some(p) = judged_texts.next() else {
                    continue 'variants;
                };
                (v.clone(), p.passed, p.judged, p.checks.clone())
            };
            let written = made.written.get(v.kind, original, v.index);
            mutants.push(MutantVerdict {
                by_model: written.as_ref() == Some(&variant.text),
                variant,
                original: original.clone(),
                weight: made.spec.weight(v.kind),
                passed,
                judged,
                checks,
                trial: several.then_some(t + 1),
            });
        }
    }
    (mutants, wire_done)
}

/// The verdict of a run of wire cases only: they reach the agent's endpoint directly, so
/// no traffic has to cross the proxy for them, and they read no answer at `response_path`.
fn wire_only(ctx: &Scoring, score: f64, judged_anything: bool) -> Judgement {
    decide(&Evidence {
        cases: &[],
        coverage: &[],
        exchanges: 0,
        agent_exchanges: 0,
        declares_traffic: false,
        bypass: String::new(),
        netns: false,
        score,
        min_score: ctx.min_score,
        failed_critical: vec![],
        judged_anything,
        response_path: None,
    })
}

/// Each variant's first trial and its consistency over its judged trials, in order (a
/// variant's trials are next to each other in `mutants`).
fn per_variant(mutants: &[MutantVerdict]) -> Vec<(&MutantVerdict, super::Consistency)> {
    let mut out: Vec<(&MutantVerdict, u32, u32)> = vec![];
    for m in mutants {
        let same = out.last().is_some_and(|(first, _, _)| {
            key(&first.variant) == key(&m.variant) && m.trial > first.trial
        });
        if !same {
            out.push((m, 0, 0));
        }
        if let Some((_, n, ok)) = out.last_mut().filter(|_| m.judged) {
            *n += 1;
            *ok += u32::from(m.passed);
        }
    }
    out.into_iter()
        .map(|(m, n, ok)| (m, super::Consistency::of(n, ok)))
        .collect()
}

/// A variant's trials as the report lists them.
fn trials_of(m: &MutantVerdict, c: &super::Consistency) -> super::CaseTrials {
    let prompt = match is_wire(&m.variant) {
        true => format!("{} #{}", m.variant.kind, m.variant.index),
        false => m.variant.text.clone(),
    };
    super::CaseTrials {
        scenario: m.variant.kind.to_string(),
        prompt,
        consistency: c.clone(),
    }
}

pub(super) fn type_scores(
    spec: &MutationsSpec,
    plan: &crate::mutate::Plan,
    mutants: &[MutantVerdict],
) -> Vec<TypeScore> {
    let variants = per_variant(mutants);
    spec.types
        .iter()
        .map(|&kind| {
            let of: Vec<&super::Consistency> = variants
                .iter()
                .filter(|(m, _)| m.variant.kind == kind)
                .map(|(_, c)| c)
                .collect();
            TypeScore {
                kind,
                weight: spec.weight(kind),
                sent: of.len(),
                judged: of.iter().filter(|c| c.trials > 0).count(),
                passed: of
                    .iter()
                    .filter(|c| c.trials > 0 && c.passed == c.trials)
                    .count(),
                dropped: plan.dropped.get(&kind).cloned().unwrap_or_default(),
            }
        })
        .collect()
}
