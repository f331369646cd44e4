//! Judging a contract scenario's cases: every invariant whose `when` applies is checked on
//! the cases of its prompts (a cell), with no extra agent calls; `when`-excluded cells are
//! not applicable, never passed. Also owns the no-chaos baselines (`behavior_unchanged`)
//! and the stateful-agent warning. No I/O besides the embeddings measure.

use std::collections::HashMap;

use super::RunContext;
use super::cases::CaseResult;
use super::contract::CellResult;
use crate::checks::{CaseView, Invariant, Similarity, Verdict};
use crate::config::chaos::ChaosSpec;
use crate::config::{Attribution, Check, ContractSpec, Scenario, When};

/// Why a case cannot be judged when its agent dropped the `traceparent`.
const UNTRACED: &str = "the agent's calls carried no traceparent, so this scenario's chaos never \
                        reached them (attribution: header)";

/// The report warning for runs where that happened.
pub(super) const UNTRACED_WARNING: &str = "attribution: header, but some of the agent's calls carried no traceparent: \
     those cases met no chaos and their traffic is not attributed, so their checks under chaos \
     are not applicable; propagate W3C trace context in the agent or use attribution: exclusive";

/// What judging a scenario needs from the run.
pub(super) struct Judge<'a> {
    pub ctx: &'a RunContext,
    pub contract: &'a ContractSpec,
    pub invariants: &'a [Invariant],
    /// Each invariant's prompts, by index.
    pub prompts_of: &'a [Vec<String>],
}

impl Judge<'_> {
    /// Whether a `no_exfiltration` check applies under `chaos` (its canaries are planted).
    pub fn plants_canaries(&self, chaos: &ChaosSpec) -> bool {
        self.contract.invariants.iter().any(|i| {
            matches!(i.invariant.check, Check::NoExfiltration {}) && applies(i.when, chaos)
        })
    }

    /// The cells of one scenario. A no-chaos scenario's answers become baselines after
    /// they are judged, so they are never compared with themselves.
    pub async fn scenario(
        &self,
        scenario: &Scenario,
        results: &[CaseResult],
        baselines: &mut HashMap<String, String>,
        warnings: &mut Vec<String>,
    ) -> Vec<CellResult> {
        let (ctx, chaos) = (self.ctx, &scenario.chaos);
        if chaos.is_empty() && !ctx.agent.resets() {
            note_stateful(results, baselines, warnings);
        }
        // Under header attribution a case whose calls lost their trace id met no chaos.
        let untraced_unjudged = ctx.attribution == Attribution::Header && !chaos.is_empty();
        let applicable = self
            .contract
            .invariants
            .iter()
            .filter(|i| applies(i.when, chaos));
        let checks = applicable.map(|i| &i.invariant.check);
        let sim = super::embed::measure(ctx, checks, results, baselines, warnings).await;
        let mut cells = vec![];
        for (i, inv) in self.invariants.iter().enumerate() {
            let spec = &self.contract.invariants[i];
            let mine: Vec<&CaseResult> = results
                .iter()
                .filter(|c| self.prompts_of[i].contains(&c.prompt))
                .collect();
            let (verdict, judged) = if applies(spec.when, chaos) {
                cell(inv, &mine, baselines, &sim, untraced_unjudged)
            } else {
                let why = format!(
                    "when: {} does not hold under `{}`",
                    spec.when, scenario.name
                );
                (Verdict::NotApplicable(why), 0)
            };
            cells.push(CellResult {
                invariant: spec.id.clone(),
                scenario: scenario.name.clone(),
                severity: spec.severity,
                verdict,
                cases: judged,
            });
        }
        if chaos.is_empty() {
            record_baselines(results, baselines);
        }
        cells
    }
}

pub(super) fn record_baselines(cases: &[CaseResult], baselines: &mut HashMap<String, String>) {
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

/// A cell fails if any case fails, passes if any passes (the rest not applicable); with the
/// number of cases judged (passed or failed). With `untraced_unjudged`, a case whose
/// traffic lost its trace id is not judged.
fn cell(
    inv: &Invariant,
    cases: &[&CaseResult],
    baselines: &HashMap<String, String>,
    sim: &Similarity,
    untraced_unjudged: bool,
) -> (Verdict, usize) {
    let (mut passed, mut skipped, mut judged) = (None, None, 0);
    for c in cases {
        if untraced_unjudged && c.traffic.is_none() {
            skipped = skipped.or(Some(UNTRACED.to_string()));
            continue;
        }
        match inv.check(&view(c, baselines.get(&c.prompt).map(String::as_str), sim)) {
            Verdict::Fail(r) => return (Verdict::Fail(format!("{:?}: {r}", c.prompt)), judged + 1),
            Verdict::Pass(r) => passed = passed.or(Some(r)),
            Verdict::NotApplicable(r) => {
                skipped = skipped.or(Some(r));
                continue;
            }
        }
        judged += 1;
    }
    match passed {
        Some(r) if judged == 1 => (Verdict::Pass(r), 1),
        Some(_) => (Verdict::Pass(format!("{judged} cases passed")), judged),
        // Why the first case could not be judged says why the cell could not.
        None => (
            Verdict::NotApplicable(skipped.unwrap_or_else(|| "no case applied".into())),
            0,
        ),
    }
}
