//! Mutation runs (`run`, `run --chaos`, `ci`'s mutation phase): the planned variants of
//! every golden prompt sent to the agent, each checked with the top-level invariants, under
//! no chaos or under the given chaos. The robustness score is the pass rate of the judged
//! variants weighted by type (`mutations.weights`). Types this build cannot make are
//! skipped and named; a run that made no variant tested nothing and says so.

use super::RunContext;
use super::RunError;
use super::mutation_report::{Made, Wired, assemble, is_wire, key, texts_of};
pub use super::mutation_report::{MutantVerdict, MutationReport, SCHEMA, TypeScore};
use super::sent::send_prompts;
use super::shard::{Raw, ShardPart, raw_scenarios};
use super::wire_cases::{self, run_wire_case};
use crate::chaos::spec::CompiledChaos;
use crate::config::{Config, MutationsSpec};
use crate::mutate::kind::{Family, MutationType};
use crate::mutate::model::{self, ModelClient, ModelVariants};
use crate::mutate::{Dropped, Variant, plan, text, unsupported};

/// The variants of `golden` under `seed`: the rule-based ones, and those `model` wrote.
pub fn plan_mutations(
    spec: &MutationsSpec,
    golden: &[String],
    seed: u64,
    model: &ModelVariants,
) -> crate::mutate::Plan {
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
/// top-level `invariants`); `chaos` is `(name, rules)` for `run --chaos`. Under `--shard`,
/// the variants of the shard's golden prompts only, each at its place in the whole run.
/// With `advanced.trials`, every variant is sent that many times, each trial a case.
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
    let seed = ctx.scoring.seed;
    let client = match &config.model {
        Some(m) => Some(ModelClient::new(m).map_err(|e| RunError::Model(e.to_string()))?),
        None => None,
    };
    let fixed = config.advanced.seed.is_some();
    let written =
        model::generate(client.as_ref(), spec, golden, seed, fixed, ctx.concurrency).await;
    let plan = plan_mutations(spec, golden, seed, &written);
    let empty = CompiledChaos::default();
    let (name, rules) = chaos.unwrap_or((super::mutation_report::SCENARIO, &empty));
    let made = Made {
        spec,
        plan: &plan,
        written: &written,
        golden,
    };
    let held = |v: &Variant| ctx.shard.is_none_or(|s| s.holds(&golden[v.prompt_index]));
    if let Some(p) = &ctx.progress {
        let wire = plan.variants.iter().filter(|v| is_wire(v) && held(v));
        (p.planned)(wire.count() * ctx.scoring.trials.indices().len());
    }
    let (texts, units) = texts_of(&plan, golden);
    let sent = match plan.variants.iter().any(|v| !is_wire(v) && held(v)) {
        true => Some(send_prompts(ctx, name, rules, &texts, Some(&units), invariants).await?),
        false => None,
    };
    let scenarios = sent
        .as_ref()
        .map(|s| raw_scenarios(&[name], std::slice::from_ref(&s.outcome)));
    let run = match sent {
        Some(s) => Some(s.judged(&ctx.scoring, name, invariants).await),
        None => None,
    };
    let wire = send_wire(ctx, &plan, golden, &held).await;
    // Counted after the wire cases, as the run's verdict counts them.
    let seen = run.as_ref().map(|r| r.seen(ctx)).unwrap_or_default();
    let part = ctx.shard.map(|s| {
        let raw = Raw {
            scenarios: scenarios.clone().unwrap_or_default(),
            ..Raw::of(&seen)
        };
        let mine = golden.iter().filter(|p| s.holds(p)).cloned().collect();
        ShardPart::new(s, &ctx.scoring.trials, golden, mine, raw)
    });
    let at = chaos.map(|(n, _)| n);
    let mut report = assemble(&ctx.scoring, &seen, at, &made, run, wire, &held);
    report.shard = part;
    Ok(report)
}

/// Sends the `held` wire-level variants of `plan`, one case at a time, each trial the same
/// attack again (a variant is made from the run's seed).
async fn send_wire(
    ctx: &RunContext,
    plan: &crate::mutate::Plan,
    golden: &[String],
    held: &(dyn Fn(&Variant) -> bool + Sync),
) -> Wired {
    let mut wire = Wired::new();
    // Wire cases attack the endpoint, not the agent's dependencies: the calls their normal
    // requests make meet no chaos (else the config's `chaos:` rules, drawn in arrival order).
    let _none = ctx.engine.install_compiled(&CompiledChaos::default(), None);
    for v in plan.variants.iter().filter(|v| is_wire(v) && held(v)) {
        if let Some(p) = &ctx.progress {
            (p.started)(wire_cases::SCENARIO, &format!("{} #{}", v.kind, v.index));
        }
        for t in ctx.scoring.trials.indices() {
            let prompt = &golden[v.prompt_index];
            let mut case = run_wire_case(ctx, ctx.scoring.seed, v.kind, prompt, v.index).await;
            case.case.trial = (ctx.scoring.trials.n > 1).then_some(t + 1);
            if let Some(p) = &ctx.progress {
                let judged = super::Judged {
                    so_far: wire_cases::so_far(&case.verdict),
                    checks: super::CaseChecks::Invariants(vec![case.verdict.clone()]),
                };
                (p.case)(&case.case, &judged);
            }
            wire.entry(key(v)).or_default().push(case);
        }
    }
    wire
}
