//! Scheduling a run's cases over its scenarios (design.md §6). Under `exclusive`
//! attribution one scenario's rules are installed globally at a time and its cases run at
//! most `concurrency` at once. Under `header` attribution every case gets its scenario's
//! rules under its own trace id, so cases of all scenarios share one pool of `concurrency`
//! slots. Either way a scenario may plant `no_exfiltration` canaries, and each scenario
//! comes back with what its chaos did: its rules' counters and the exchanges recorded
//! while it ran (`coverage`).

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::cases::{CaseResult, run_case, trace_id};
use super::{Provisional, RunContext};
use crate::chaos::{Canary, RuleStats, mix, stream, sum_stats};
use crate::config::Attribution;
use crate::config::chaos::CompiledChaos;
use crate::exchange::Exchange;

/// Why a case cannot be judged when its agent dropped the `traceparent`.
pub(super) const UNTRACED: &str = "the agent's calls carried no traceparent, so this \
     scenario's chaos never reached them (attribution: header)";

/// One scenario to run every prompt under.
pub(super) struct ScenarioRun<'a> {
    pub name: &'a str,
    pub chaos: &'a CompiledChaos,
    /// Plant canaries in tool responses (a `no_exfiltration` check applies).
    pub canary: bool,
}

/// A scenario's cases and what its chaos did.
#[derive(Debug, Default)]
pub(super) struct ScenarioOutcome {
    /// In prompt order.
    pub cases: Vec<CaseResult>,
    /// Its rules' counters (summed over its cases' installs under header attribution).
    pub stats: Vec<RuleStats>,
    /// The exchanges recorded while it ran: its window, or its cases' traced exchanges.
    pub exchanges: Vec<Arc<Exchange>>,
}

/// Fresh canaries for a scenario or a case. The salt is the run's alone, so a source plants
/// the same token in every scenario and no-chaos answers stay comparable with the others.
fn canary(ctx: &RunContext) -> Arc<Canary> {
    Arc::new(Canary::new(mix(ctx.seed ^ stream("no_exfiltration"))))
}

/// Runs every prompt under every scenario; results grouped by scenario, in prompt order.
/// `so_far` tells the progress display how each case stands as it ends.
pub(super) async fn run_matrix(
    ctx: &RunContext,
    scenarios: &[ScenarioRun<'_>],
    prompts: &[String],
    so_far: &Provisional,
) -> Vec<ScenarioOutcome> {
    if let Some(p) = &ctx.progress {
        (p.planned)(scenarios.len() * prompts.len());
    }
    if ctx.attribution == Attribution::Header {
        // Calls that lost their trace id meet no rules at all, not the config's `chaos:`.
        let _none = ctx.engine.install_compiled(&CompiledChaos::default(), None);
        return per_trace(ctx, scenarios, prompts, so_far).await;
    }
    let mut out = vec![];
    for s in scenarios {
        let canary = s.canary.then(|| canary(ctx));
        let active = ctx.engine.install_compiled(s.chaos, canary);
        let start = ctx.journal.peek_next_id();
        let cells: Vec<(usize, usize)> = (0..prompts.len()).map(|p| (0, p)).collect();
        let one = [(s.name, s.chaos, false)];
        let mut done = pool(ctx, &one, prompts, &cells, false, so_far).await;
        let end = ctx.journal.peek_next_id().saturating_sub(1);
        let stats = active.rules().stats();
        drop(active);
        out.push(ScenarioOutcome {
            cases: done.pop().map(|d| d.cases).unwrap_or_default(),
            stats,
            exchanges: ctx.journal.slice(start, end),
        });
    }
    out
}

/// `attribution: header`: all cases of all scenarios in one pool, each under its trace id.
async fn per_trace(
    ctx: &RunContext,
    scenarios: &[ScenarioRun<'_>],
    prompts: &[String],
    so_far: &Provisional,
) -> Vec<ScenarioOutcome> {
    let specs: Vec<(&str, &CompiledChaos, bool)> = scenarios
        .iter()
        .map(|s| (s.name, s.chaos, s.canary))
        .collect();
    let cells: Vec<(usize, usize)> = (0..scenarios.len())
        .flat_map(|s| (0..prompts.len()).map(move |p| (s, p)))
        .collect();
    pool(ctx, &specs, prompts, &cells, true, so_far).await
}

/// Runs the `cells` (scenario, prompt) at most `ctx.concurrency` at a time. With `traced`,
/// each case installs its scenario's rules for its own trace id while it runs.
async fn pool(
    ctx: &RunContext,
    specs: &[(&str, &CompiledChaos, bool)],
    prompts: &[String],
    cells: &[(usize, usize)],
    traced: bool,
    so_far: &Provisional,
) -> Vec<ScenarioOutcome> {
    let window = ctx.attributes_cases();
    let limit = Arc::new(Semaphore::new(ctx.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for &(s, p) in cells {
        let (name, chaos, canary) = specs[s];
        let (ctx, name, chaos, prompt, limit, so_far) = (
            ctx.clone(),
            name.to_string(),
            chaos.clone(),
            prompts[p].clone(),
            limit.clone(),
            so_far.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let trace = traced.then(|| trace_id(&ctx, &name, &prompt, p));
            let rules = trace.as_ref().map(|t| {
                let canary = canary.then(|| self::canary(&ctx));
                ctx.engine.install_for_trace(t, &chaos, canary)
            });
            if let Some(progress) = &ctx.progress {
                (progress.started)(&name, &prompt);
            }
            let mut case = run_case(&ctx, &name, &prompt, window, trace).await;
            if traced && !chaos.is_empty() && case.traffic.is_none() {
                case.not_judged.get_or_insert_with(|| UNTRACED.to_string());
            }
            let stats = rules.map(|r| r.rules().stats()).unwrap_or_default();
            if let Some(progress) = &ctx.progress {
                (progress.case)(&case, &so_far(&case));
            }
            (s, p, case, stats)
        });
    }
    let mut done: Vec<(usize, usize, CaseResult, Vec<RuleStats>)> = tasks.join_all().await;
    // Reports list cases in scenario and prompt order whatever finished first.
    done.sort_by_key(|(s, p, _, _)| (*s, *p));
    let mut out: Vec<ScenarioOutcome> = (0..specs.len()).map(|_| Default::default()).collect();
    let mut stats: Vec<Vec<Vec<RuleStats>>> = vec![vec![]; specs.len()];
    for (s, _, case, case_stats) in done {
        out[s]
            .exchanges
            .extend(case.traffic.iter().flatten().cloned());
        out[s].cases.push(case);
        stats[s].push(case_stats);
    }
    for (o, s) in out.iter_mut().zip(stats) {
        o.stats = sum_stats(&s);
    }
    out
}
