//! Mutation runs (`run`, `run --chaos`, `ci`'s mutation phase): the planned variants of
//! every golden prompt sent to the agent, each checked with the top-level invariants, under
//! no chaos or under the given chaos. The robustness score is the pass rate of the judged
//! variants weighted by type (`mutations.weights`). Types this build cannot make are
//! skipped and named; a run that made no variant tested nothing and says so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RunContext;
use super::RunError;
use super::cases::CaseResult;
use super::chaos::judge_prompts;
use super::coverage::Coverage;
use super::verdict::{Evidence, Judgement, RunVerdict, decide};
use super::wire_cases::{self, run_wire_case};
use crate::checks::Verdict;
use crate::config::chaos::CompiledChaos;
use crate::config::{Config, Family, MutationType, MutationsSpec};
use crate::mutate::model::{self, ModelClient, ModelVariants};
use crate::mutate::{Dropped, Plan, Variant, plan, text, unsupported};

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
}

/// A type's share of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeScore {
    #[serde(rename = "type")]
    pub kind: MutationType,
    pub weight: f64,
    pub sent: usize,
    pub judged: usize,
    pub passed: usize,
    /// Generated variants not sent, by reason.
    pub dropped: BTreeMap<Dropped, usize>,
}

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
    /// Weighted pass rate of the judged variants, 0–100 (0 when none was judged).
    pub score: f64,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub min_score: f64,
    pub coverage: Vec<Coverage>,
    pub warnings: Vec<String>,
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

/// The variants of `golden` under `seed`: the rule-based ones, and those `model` wrote.
pub fn plan_mutations(
    spec: &MutationsSpec,
    golden: &[String],
    seed: u64,
    model: &ModelVariants,
) -> Plan {
    let opts = text::Options {
        noise_rate: spec.noise_rate,
        custom_templates: &spec.custom_templates,
    };
    // A wire variant is built when it is sent (it needs the agent's target, and can be
    // 10 MB): here it is a placeholder, unique per prompt and index.
    let generate = |k: MutationType, p: &str, i, d: &mut crate::mutate::Draw| match k.family() {
        Family::Model => model.get(k, p, i),
        // A `with_model` variant the model did not write is the template's.
        Family::Text if spec.model_writes(k) => model
            .get(k, p, i)
            .or_else(|| text::generate(k, p, i, d, &opts)),
        Family::Text => text::generate(k, p, i, d, &opts),
        Family::Wire => Some(format!("{k} #{i}")),
    };
    let skip = |k: MutationType| match model.skipped.get(&k) {
        Some(why) => why.clone(),
        None if model.failed.contains_key(&k) => format!(
            "{k}: the model wrote no usable variant ({} calls timed out or had no text)",
            model.failed[&k]
        ),
        None => unsupported(k),
    };
    let mut plan = plan(spec, golden, seed, generate, skip);
    for (kind, n) in &model.failed {
        *plan
            .dropped
            .entry(*kind)
            .or_default()
            .entry(Dropped::ModelFailed)
            .or_default() += n;
    }
    plan
}

/// Runs the mutation phase of `config` (its `golden_prompts`, `mutations`, `model` and
/// top-level `invariants`); `chaos` is `(name, rules)` for `run --chaos`.
pub async fn run_mutation(
    ctx: &RunContext,
    chaos: Option<(&str, &CompiledChaos)>,
    config: &Config,
) -> Result<MutationReport, RunError> {
    let (golden, spec, invariants) = (
        &config.golden_prompts,
        &config.mutations,
        &config.invariants,
    );
    if golden.is_empty() {
        return Err(RunError::NothingToMutate);
    }
    // Each variant runs once: a variant's verdict is one case's (the report pairs them one
    // to one), so trials apply to contract, chaos and replay runs only (docs/trials.md).
    let trials_asked = ctx.trials.n > 1 || ctx.trials.only.is_some();
    let once = super::Trials {
        n: 1,
        only: None,
        ..ctx.trials
    };
    let ctx = &RunContext {
        trials: once,
        ..ctx.clone()
    };
    let seed = ctx.seed;
    let client = match &config.model {
        Some(m) => Some(ModelClient::new(m).map_err(|e| RunError::Model(e.to_string()))?),
        None => None,
    };
    let fixed = config.advanced.seed.is_some();
    let written =
        model::generate(client.as_ref(), spec, golden, seed, fixed, ctx.concurrency).await;
    let plan = plan_mutations(spec, golden, seed, &written);
    let empty = CompiledChaos::default();
    let (name, rules) = chaos.unwrap_or(("mutations", &empty));
    let is_wire = |v: &&Variant| v.kind.family() == Family::Wire;
    let texts: Vec<String> = plan
        .variants
        .iter()
        .filter(|v| !is_wire(v))
        .map(|v| v.text.clone())
        .collect();
    let mut report = MutationReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        chaos: chaos.map(|(n, _)| n.to_string()),
        seed,
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
        warnings: vec![],
    };
    if plan.variants.is_empty() {
        report.judgement.reasons.push(format!(
            "no mutated input was made, so the agent was not tested{}",
            plan.skipped
                .values()
                .map(|why| format!("; {why}"))
                .collect::<String>()
        ));
        report.types = type_scores(spec, &plan, &[]);
        return Ok(report);
    }
    if let Some(p) = &ctx.progress {
        (p.planned)(plan.variants.len() - texts.len());
    }
    let run = match texts.is_empty() {
        true => None,
        false => Some(judge_prompts(ctx, name, rules, &texts, invariants).await?),
    };
    let mut judged_texts = run.iter().flat_map(|r| &r.prompts);
    let mut mutants = Vec::with_capacity(plan.variants.len());
    let mut wire_done = vec![];
    for v in &plan.variants {
        let original = golden[v.prompt_index].clone();
        let (variant, passed, judged, checks) = if is_wire(&v) {
            if let Some(p) = &ctx.progress {
                (p.started)(wire_cases::SCENARIO, &format!("{} #{}", v.kind, v.index));
            }
            let case = run_wire_case(ctx, seed, v.kind, &original, v.index).await;
            if let Some(p) = &ctx.progress {
                let judged = super::Judged {
                    so_far: wire_cases::so_far(&case.verdict),
                    checks: super::CaseChecks::Invariants(vec![case.verdict.clone()]),
                };
                (p.case)(&case.case, &judged);
            }
            wire_done.push(case.case);
            let variant = Variant {
                text: case.sent,
                ..v.clone()
            };
            let passed = case.verdict.passed();
            let judged = !matches!(case.verdict, Verdict::NotTested(_));
            (variant, passed, judged, vec![case.verdict])
        } else {
            let Some(p) = judged_texts.next() else {
                break;
            };
            (v.clone(), p.passed, p.judged, p.checks.clone())
        };
        let by_model = written.get(v.kind, &original, v.index).as_ref() == Some(&variant.text);
        mutants.push(MutantVerdict {
            variant,
            original,
            weight: spec.weight(v.kind),
            by_model,
            passed,
            judged,
            checks,
        });
    }
    let (mut total, mut passed) = (0.0, 0.0);
    for m in mutants.iter().filter(|m| m.judged) {
        total += m.weight;
        if m.passed {
            passed += m.weight;
        }
    }
    report.score = if total > 0.0 {
        passed * 100.0 / total
    } else {
        0.0
    };
    let judged_any = mutants.iter().any(|m| m.judged);
    report.judgement = match &run {
        Some(r) => r.decide(ctx, report.score, judged_any),
        // Only wire cases: they reach the agent's endpoint directly, so no traffic has to
        // cross the proxy for them.
        None => decide(&Evidence {
            cases: &[],
            coverage: &[],
            exchanges: 0,
            agent_exchanges: 0,
            declares_traffic: false,
            score: report.score,
            min_score: ctx.min_score,
            failed_critical: vec![],
            judged_anything: judged_any,
            // Wire cases read no answer at `response_path` of their own.
            response_path: None,
        }),
    };
    report.types = type_scores(spec, &plan, &mutants);
    report.mutants = mutants;
    if let Some(run) = run {
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
    report.warnings.extend(written.from_templates.into_values());
    if trials_asked {
        report.warnings.push(
            "advanced.trials: each mutated input ran once (trials apply to contract, chaos \
             and replay runs)"
                .into(),
        );
    }
    Ok(report)
}

fn type_scores(spec: &MutationsSpec, plan: &Plan, mutants: &[MutantVerdict]) -> Vec<TypeScore> {
    spec.types
        .iter()
        .map(|&kind| {
            let of: Vec<&MutantVerdict> =
                mutants.iter().filter(|m| m.variant.kind == kind).collect();
            TypeScore {
                kind,
                weight: spec.weight(kind),
                sent: of.len(),
                judged: of.iter().filter(|m| m.judged).count(),
                passed: of.iter().filter(|m| m.passed).count(),
                dropped: plan.dropped.get(&kind).cloned().unwrap_or_default(),
            }
        })
        .collect()
}
