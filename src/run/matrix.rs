//! Scheduling a run's cases over its scenarios (design.md §6). Under `exclusive`
//! attribution one scenario's rules are installed globally at a time and its cases run at
//! most `concurrency` at once. Under `header` attribution every case gets its scenario's
//! rules under its own trace id, so cases of all scenarios share one pool of `concurrency`
//! slots. Either way a scenario may plant `no_exfiltration` canaries.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::RunContext;
use super::cases::{CaseResult, run_case, trace_id};
use super::contract::RunError;
use crate::chaos::{Canary, RuleSet, mix, stream};
use crate::config::Attribution;
use crate::config::chaos::ChaosSpec;

/// One scenario to run every prompt under.
pub(super) struct ScenarioRun<'a> {
    pub name: &'a str,
    pub chaos: &'a ChaosSpec,
    /// Plant canaries in tool responses (a `no_exfiltration` check applies).
    pub canary: bool,
}

/// Fresh canaries for a scenario or a case. The salt is the run's alone, so a source plants
/// the same token in every scenario and no-chaos answers stay comparable with the others.
fn canary(ctx: &RunContext) -> Arc<Canary> {
    Arc::new(Canary::new(mix(
        ctx.engine.seed() ^ stream("no_exfiltration")
    )))
}

/// Runs every prompt under every scenario; results grouped by scenario, in prompt order.
pub(super) async fn run_matrix(
    ctx: &RunContext,
    scenarios: &[ScenarioRun<'_>],
    prompts: &[String],
) -> Result<Vec<Vec<CaseResult>>, RunError> {
    for s in scenarios {
        RuleSet::compile(s.chaos).map_err(|message| RunError::Scenario {
            scenario: s.name.to_string(),
            message,
        })?;
    }
    if ctx.attribution == Attribution::Header {
        // Calls that lost their trace id meet no rules at all, not the config's `chaos:`.
        let _none = ctx
            .engine
            .install(&ChaosSpec::default(), None)
            .map_err(|message| RunError::Scenario {
                scenario: "(no scenario)".into(),
                message,
            })?;
        return Ok(per_trace(ctx, scenarios, prompts).await);
    }
    let mut out = vec![];
    for s in scenarios {
        let canary = s.canary.then(|| canary(ctx));
        let _active =
            ctx.engine
                .install(s.chaos, canary)
                .map_err(|message| RunError::Scenario {
                    scenario: s.name.to_string(),
                    message,
                })?;
        let cells: Vec<(usize, usize)> = (0..prompts.len()).map(|p| (0, p)).collect();
        let mut results = pool(ctx, &[(s.name, s.chaos, false)], prompts, &cells, false).await;
        out.push(results.pop().unwrap_or_default());
    }
    Ok(out)
}

/// `attribution: header`: all cases of all scenarios in one pool, each under its trace id.
async fn per_trace(
    ctx: &RunContext,
    scenarios: &[ScenarioRun<'_>],
    prompts: &[String],
) -> Vec<Vec<CaseResult>> {
    let specs: Vec<(&str, &ChaosSpec, bool)> = scenarios
        .iter()
        .map(|s| (s.name, s.chaos, s.canary))
        .collect();
    let cells: Vec<(usize, usize)> = (0..scenarios.len())
        .flat_map(|s| (0..prompts.len()).map(move |p| (s, p)))
        .collect();
    pool(ctx, &specs, prompts, &cells, true).await
}

/// Runs the `cells` (scenario, prompt) at most `ctx.concurrency` at a time. With `traced`,
/// each case installs its scenario's rules for its own trace id while it runs.
async fn pool(
    ctx: &RunContext,
    specs: &[(&str, &ChaosSpec, bool)],
    prompts: &[String],
    cells: &[(usize, usize)],
    traced: bool,
) -> Vec<Vec<CaseResult>> {
    let window = ctx.attributes_cases();
    let limit = Arc::new(Semaphore::new(ctx.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for &(s, p) in cells {
        let (name, chaos, canary) = specs[s];
        let (ctx, name, chaos, prompt, limit) = (
            ctx.clone(),
            name.to_string(),
            chaos.clone(),
            prompts[p].clone(),
            limit.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let trace = traced.then(|| trace_id(&ctx, &name, &prompt, p));
            // Compiled before any case ran, so installing cannot fail here.
            let _rules = trace.as_ref().and_then(|t| {
                let canary = canary.then(|| self::canary(&ctx));
                ctx.engine.install_for_trace(t, &chaos, canary).ok()
            });
            let case = run_case(&ctx, &name, &prompt, window, trace).await;
            if let Some(report) = &ctx.on_case {
                report(&case);
            }
            (s, p, case)
        });
    }
    let mut done: Vec<(usize, usize, CaseResult)> = tasks.join_all().await;
    // Reports list cases in scenario and prompt order whatever finished first.
    done.sort_by_key(|(s, p, _)| (*s, *p));
    let mut out: Vec<Vec<CaseResult>> = (0..specs.len()).map(|_| vec![]).collect();
    for (s, _, case) in done {
        out[s].push(case);
    }
    out
}
