//! Contract runs: for each scenario of the matrix (no-chaos ones first, so their answers
//! are the `behavior_unchanged` baselines), install its chaos, invoke the agent once per
//! prompt, and check every invariant whose `when` applies on those answers: no extra agent
//! calls per invariant. Cells aggregate a scenario's cases; `when`-excluded cells are "not
//! applicable", never passed.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::Semaphore;

use super::RunContext;
use super::cases::{CaseResult, run_case};
use super::score::{Score, contract_score};
use crate::checks::{CaseView, Invariant, Similarity, Verdict};
use crate::config::chaos::ChaosSpec;
use crate::config::{Attribution, Check, ContractSpec, Scenario, Severity, When};

/// Version of the report's JSON shape (docs/report-schema.md).
pub const SCHEMA: &str = "flakestorm.contract/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellResult {
    pub invariant: String,
    pub scenario: String,
    pub severity: Severity,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Cases the cell judged.
    pub cases: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractReport {
    pub schema: &'static str,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    pub contract: String,
    pub seed: u64,
    pub scenarios: Vec<String>,
    pub cases: Vec<CaseResult>,
    pub cells: Vec<CellResult>,
    pub score: Score,
    /// Times the agent was invoked (scenarios × prompts, plus baselines).
    pub agent_calls: usize,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("contract.invariants: {0}")]
    Invariant(String),
    #[error("contract `{0}` has invariants but no prompts: add golden_prompts or probes")]
    NoPrompts(String),
    #[error("chaos rules of scenario `{scenario}`: {message}")]
    Scenario { scenario: String, message: String },
}

/// Runs `contract` with `golden` prompts against the agent in `ctx`.
pub async fn run_contract(
    ctx: &RunContext,
    contract: &ContractSpec,
    golden: &[String],
) -> Result<ContractReport, RunError> {
    let invariants: Vec<Invariant> = contract
        .invariants
        .iter()
        .map(|i| {
            Invariant::compile(&i.invariant)
                .map_err(|e| RunError::Invariant(format!("{}: {e}", i.id)))
        })
        .collect::<Result<_, _>>()?;
    let prompts_of = |i: usize| -> Vec<String> {
        let probes = &contract.invariants[i].probes;
        if probes.is_empty() {
            golden.to_vec()
        } else {
            probes.clone()
        }
    };
    let mut prompts: Vec<String> = vec![];
    for i in 0..invariants.len() {
        for p in prompts_of(i) {
            if !prompts.contains(&p) {
                prompts.push(p);
            }
        }
    }
    if prompts.is_empty() && !invariants.is_empty() {
        return Err(RunError::NoPrompts(contract.name.clone()));
    }
    let mut scenarios: Vec<Scenario> = contract.chaos_matrix.clone();
    if scenarios.is_empty() {
        scenarios.push(Scenario {
            name: "no-chaos".into(),
            chaos: ChaosSpec::default(),
        });
    }
    // Stable sort: no-chaos scenarios first, the rest in the order written.
    scenarios.sort_by_key(|s| !s.chaos.is_empty());
    let needs_baseline = contract.invariants.iter().any(|i| matches!(&i.invariant.check, Check::BehaviorUnchanged { baseline, .. } if baseline == "auto"));
    // Traffic checks need each exchange to belong to exactly one case (design.md §6).
    let ctx = &*ctx.for_traffic(
        contract
            .invariants
            .iter()
            .any(|i| i.invariant.check.is_traffic()),
    );
    let mut cases: Vec<CaseResult> = vec![];
    let mut baselines: HashMap<String, String> = HashMap::new();
    let mut warnings = vec![];
    if needs_baseline && !scenarios[0].chaos.is_empty() {
        let base = run_scenario(ctx, "(baseline)", &ChaosSpec::default(), &prompts).await?;
        record_baselines(&base, &mut baselines);
        cases.extend(base);
    }
    let mut cells = vec![];
    for scenario in &scenarios {
        let results = run_scenario(ctx, &scenario.name, &scenario.chaos, &prompts).await?;
        if scenario.chaos.is_empty() {
            note_stateful(&results, &baselines, &mut warnings);
            record_baselines(&results, &mut baselines);
        }
        let applicable = contract
            .invariants
            .iter()
            .filter(|i| applies(i.when, &scenario.chaos));
        let checks = applicable.map(|i| &i.invariant.check);
        let sim = super::embed::measure(ctx, checks, &results, &baselines, &mut warnings).await;
        for (i, inv) in invariants.iter().enumerate() {
            let spec = &contract.invariants[i];
            let mine: Vec<&CaseResult> = results
                .iter()
                .filter(|c| prompts_of(i).contains(&c.prompt))
                .collect();
            let verdict = if applies(spec.when, &scenario.chaos) {
                cell(inv, &mine, &baselines, &sim)
            } else {
                Verdict::NotApplicable(format!(
                    "when: {:?} does not hold under `{}`",
                    spec.when, scenario.name
                ))
            };
            let judged = if matches!(verdict, Verdict::NotApplicable(_)) {
                0
            } else {
                mine.len()
            };
            cells.push(CellResult {
                invariant: spec.id.clone(),
                scenario: scenario.name.clone(),
                severity: spec.severity,
                verdict,
                cases: judged,
            });
        }
        cases.extend(results);
    }
    if ctx.attribution == Attribution::Header && cases.iter().any(|c| c.traffic.is_none()) {
        warnings.push(
            "attribution: header, but some of the agent's calls carried no traceparent: those \
             cases' traffic and faults are not attributed (traffic invariants on them are not \
             applicable); propagate W3C trace context in the agent or use attribution: exclusive"
                .into(),
        );
    }
    let scored: Vec<(Severity, Option<bool>)> = cells
        .iter()
        .map(|c| {
            (
                c.severity,
                (!matches!(c.verdict, Verdict::NotApplicable(_))).then(|| c.verdict.passed()),
            )
        })
        .collect();
    Ok(ContractReport {
        schema: SCHEMA,
        config_digest: ctx.config_digest.clone(),
        contract: contract.name.clone(),
        seed: ctx.engine.seed(),
        scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
        agent_calls: cases.len(),
        cases,
        cells,
        score: contract_score(&scored),
        warnings,
    })
}

/// All prompts under one scenario, at most `ctx.concurrency` at a time. Each case gets the
/// exchanges it made (and the faults they met) when they can be told apart: with one case
/// in flight (its journal window), or by its trace id under `attribution: header`.
pub(super) async fn run_scenario(
    ctx: &RunContext,
    name: &str,
    chaos: &ChaosSpec,
    prompts: &[String],
) -> Result<Vec<CaseResult>, RunError> {
    let _active = ctx
        .engine
        .install(chaos)
        .map_err(|message| RunError::Scenario {
            scenario: name.to_string(),
            message,
        })?;
    let window = ctx.attributes_cases();
    let limit = Arc::new(Semaphore::new(ctx.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let (ctx, name, prompt, limit) =
            (ctx.clone(), name.to_string(), prompt.clone(), limit.clone());
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let case = run_case(&ctx, &name, &prompt, window).await;
            if let Some(report) = &ctx.on_case {
                report(&case);
            }
            (i, case)
        });
    }
    let mut out: Vec<(usize, CaseResult)> = tasks.join_all().await;
    // Reports list cases in prompt order whatever finished first.
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

fn record_baselines(cases: &[CaseResult], baselines: &mut HashMap<String, String>) {
    for c in cases {
        if let Some(a) = &c.answer {
            baselines
                .entry(c.prompt.clone())
                .or_insert_with(|| a.clone());
        }
    }
}

/// The same prompt answered differently without chaos suggests state carried between cases.
fn note_stateful(
    cases: &[CaseResult],
    baselines: &HashMap<String, String>,
    warnings: &mut Vec<String>,
) {
    let differs = cases
        .iter()
        .any(|c| matches!((&c.answer, baselines.get(&c.prompt)), (Some(a), Some(b)) if a != b));
    if differs {
        warnings.push("the agent answered the same prompt differently without chaos; if it keeps state between \
                       cases, set agent.reset_endpoint"
            .into());
    }
}

fn applies(when: When, chaos: &ChaosSpec) -> bool {
    let tool = !chaos.tool_faults.is_empty();
    let llm = !chaos.llm_faults.is_empty();
    let any = !chaos.is_empty();
    match when {
        When::Always => true,
        When::ToolFaultsActive => tool,
        When::LlmFaultsActive => llm,
        When::AnyChaosActive => any,
        When::NoChaos => !any,
    }
}

/// What the checks see of a case.
pub(super) fn view<'a>(
    c: &'a CaseResult,
    baseline: Option<&'a str>,
    similarity: &'a Similarity,
) -> CaseView<'a> {
    CaseView {
        prompt: &c.prompt,
        answer: c
            .answer
            .as_deref()
            .ok_or(c.error.as_deref().unwrap_or("no answer")),
        latency: std::time::Duration::from_secs_f64(c.latency_ms / 1000.0),
        baseline,
        traffic: c.traffic.as_deref(),
        similarity,
    }
}

/// A cell fails if any case fails, passes if any passes (the rest not applicable).
fn cell(
    inv: &Invariant,
    cases: &[&CaseResult],
    baselines: &HashMap<String, String>,
    sim: &Similarity,
) -> Verdict {
    let (mut passed, mut skipped) = (None, None);
    for c in cases {
        match inv.check(&view(c, baselines.get(&c.prompt).map(String::as_str), sim)) {
            Verdict::Fail(r) => return Verdict::Fail(format!("{:?}: {r}", c.prompt)),
            Verdict::Pass(r) => passed = passed.or(Some(r)),
            Verdict::NotApplicable(r) => skipped = skipped.or(Some(r)),
        }
    }
    match passed {
        Some(r) if cases.len() == 1 => Verdict::Pass(r),
        Some(_) => Verdict::Pass(format!("{} cases passed", cases.len())),
        // Why the first case could not be judged says why the cell could not.
        None => Verdict::NotApplicable(skipped.unwrap_or_else(|| "no case applied".into())),
    }
}
