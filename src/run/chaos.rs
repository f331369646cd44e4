//! Chaos-only runs: every golden prompt under one set of faults (the `chaos:` section or a
//! profile), checked with the top-level invariants. The score is the pass rate of the
//! prompts (design.md §7): a prompt passes when every invariant that applies passes.

use serde::Serialize;

use super::RunContext;
use super::cases::CaseResult;
use super::contract::RunError;
use super::judge::{UNTRACED_WARNING, view};
use super::matrix::{ScenarioRun, run_matrix};
use crate::checks::{Invariant, Verdict};
use crate::config::chaos::ChaosSpec;
use crate::config::{Attribution, Check, InvariantSpec};

pub const SCHEMA: &str = "flakestorm.chaos/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptVerdict {
    pub prompt: String,
    pub passed: bool,
    /// One verdict per invariant, in config order.
    pub checks: Vec<Verdict>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChaosReport {
    pub schema: &'static str,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    /// The profile name, or `chaos` for the config's own section.
    pub chaos: String,
    pub seed: u64,
    pub cases: Vec<CaseResult>,
    pub prompts: Vec<PromptVerdict>,
    /// Pass rate of the prompts, 0–100.
    pub score: f64,
    pub agent_calls: usize,
    /// E.g. the embeddings endpoint failed, or the agent dropped the trace id.
    pub warnings: Vec<String>,
}

pub async fn run_chaos(
    ctx: &RunContext,
    name: &str,
    chaos: &ChaosSpec,
    golden: &[String],
    invariants: &[InvariantSpec],
) -> Result<ChaosReport, RunError> {
    if golden.is_empty() {
        return Err(RunError::NoPrompts(name.to_string()));
    }
    let compiled: Vec<Invariant> = invariants
        .iter()
        .map(|i| Invariant::compile(i).map_err(RunError::Invariant))
        .collect::<Result<_, _>>()?;
    // Traffic checks need each exchange to belong to exactly one case (design.md §6).
    let ctx = &*ctx.for_traffic(invariants.iter().any(|i| i.check.is_traffic()));
    let run = ScenarioRun {
        name,
        chaos,
        canary: invariants
            .iter()
            .any(|i| matches!(i.check, Check::NoExfiltration {})),
    };
    let cases = run_matrix(ctx, &[run], golden)
        .await?
        .pop()
        .unwrap_or_default();
    let mut warnings = vec![];
    let checks = invariants.iter().map(|i| &i.check);
    let sim = super::embed::measure(ctx, checks, &cases, &Default::default(), &mut warnings).await;
    // Under header attribution a case whose calls lost their trace id met no chaos: it is
    // not judged, and it does not pass.
    let untraced = |c: &CaseResult| ctx.attribution == Attribution::Header && c.traffic.is_none();
    let prompts: Vec<PromptVerdict> = cases
        .iter()
        .map(|c| {
            let checks: Vec<Verdict> = if untraced(c) {
                vec![Verdict::NotApplicable(UNTRACED_WARNING.into()); compiled.len()]
            } else {
                compiled
                    .iter()
                    .map(|inv| inv.check(&view(c, None, &sim)))
                    .collect()
            };
            let passed = !untraced(c) && !checks.iter().any(|v| matches!(v, Verdict::Fail(_)));
            PromptVerdict {
                prompt: c.prompt.clone(),
                passed,
                checks,
            }
        })
        .collect();
    if cases.iter().any(untraced) {
        warnings.push(UNTRACED_WARNING.to_string());
    }
    let passed = prompts.iter().filter(|p| p.passed).count();
    Ok(ChaosReport {
        schema: SCHEMA,
        config_digest: ctx.config_digest.clone(),
        chaos: name.to_string(),
        seed: ctx.engine.seed(),
        agent_calls: cases.len(),
        score: passed as f64 * 100.0 / prompts.len() as f64,
        cases,
        prompts,
        warnings,
    })
}
