//! Contract runs: for each scenario of the matrix (no-chaos ones first, so their answers
//! are the `behavior_unchanged` baselines), install its chaos, invoke the agent once per
//! prompt, and check every invariant whose `when` applies on those answers: no extra agent
//! calls per invariant. Cells aggregate a scenario's cases; `when`-excluded cells are "not
//! applicable", never passed.

use serde::Serialize;
use std::collections::HashMap;

use super::RunContext;
use super::cases::CaseResult;
use super::matrix::{ScenarioRun, run_matrix};
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
    // An invariant's prompts: its probes, else a refusal_check's dangerous prompts (what it
    // judges), else the golden prompts.
    let prompts_of = |i: usize| -> Vec<String> {
        let spec = &contract.invariants[i];
        match &spec.invariant.check {
            _ if !spec.probes.is_empty() => spec.probes.clone(),
            Check::RefusalCheck { dangerous_prompts } => dangerous_prompts.clone(),
            _ => golden.to_vec(),
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
    let canary = |chaos: &ChaosSpec| {
        contract.invariants.iter().any(|i| {
            matches!(i.invariant.check, Check::NoExfiltration {}) && applies(i.when, chaos)
        })
    };
    let no_chaos = ChaosSpec::default();
    let baseline = needs_baseline && !scenarios[0].chaos.is_empty();
    let runs: Vec<ScenarioRun> = baseline
        .then_some(("(baseline)", &no_chaos))
        .into_iter()
        .chain(scenarios.iter().map(|s| (s.name.as_str(), &s.chaos)))
        .map(|(name, chaos)| ScenarioRun {
            name,
            chaos,
            canary: canary(chaos),
        })
        .collect();
    let mut results = run_matrix(ctx, &runs, &prompts).await?.into_iter();
    let mut cases: Vec<CaseResult> = vec![];
    let mut baselines: HashMap<String, String> = HashMap::new();
    let mut warnings = vec![];
    if baseline {
        let base = results.next().unwrap_or_default();
        record_baselines(&base, &mut baselines);
        cases.extend(base);
    }
    let mut cells = vec![];
    for (scenario, results) in scenarios.iter().zip(results) {
        if scenario.chaos.is_empty() && !ctx.agent.resets() {
            note_stateful(&results, &baselines, &mut warnings);
        }
        // Under header attribution a case whose calls lost their trace id met no chaos.
        let untraced_unjudged =
            ctx.attribution == Attribution::Header && !scenario.chaos.is_empty();
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
                cell(inv, &mine, &baselines, &sim, untraced_unjudged)
            } else {
                Verdict::NotApplicable(format!(
                    "when: {} does not hold under `{}`",
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
        // Recorded after judging: a no-chaos answer is not compared with itself.
        if scenario.chaos.is_empty() {
            record_baselines(&results, &mut baselines);
        }
        cases.extend(results);
    }
    if ctx.attribution == Attribution::Header && cases.iter().any(|c| c.traffic.is_none()) {
        warnings.push(UNTRACED_WARNING.into());
    }
    if !cells.is_empty()
        && cells
            .iter()
            .all(|c| matches!(c.verdict, Verdict::NotApplicable(_)))
    {
        warnings.push(
            "no cell could be judged (every cell is not applicable, see their reasons): the \
             contract does not pass"
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

/// Why a case cannot be judged when its agent dropped the `traceparent`.
const UNTRACED: &str = "the agent's calls carried no traceparent, so this scenario's chaos never \
                        reached them (attribution: header)";

/// The report warning for runs where that happened.
pub(super) const UNTRACED_WARNING: &str = "attribution: header, but some of the agent's calls carried no traceparent: \
     those cases met no chaos and their traffic is not attributed, so their checks under chaos \
     are not applicable; propagate W3C trace context in the agent or use attribution: exclusive";

/// A cell fails if any case fails, passes if any passes (the rest not applicable). With
/// `untraced_unjudged`, a case whose traffic lost its trace id is not judged.
fn cell(
    inv: &Invariant,
    cases: &[&CaseResult],
    baselines: &HashMap<String, String>,
    sim: &Similarity,
    untraced_unjudged: bool,
) -> Verdict {
    let (mut passed, mut skipped) = (None, None);
    for c in cases {
        if untraced_unjudged && c.traffic.is_none() {
            skipped = skipped.or(Some(UNTRACED.to_string()));
            continue;
        }
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
