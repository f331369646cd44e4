//! Scheduling a run's cases over its scenarios (design.md §6). With an agent pool each
//! case runs on a free instance and owns its lane; under `header` attribution each case
//! sends its own trace id; either way cases of all scenarios share one set of slots. Under
//! `exclusive` attribution one scenario runs at a time: its cases one at a time on the
//! main listener's lane when it has chaos, else at most `concurrency` at once under its
//! (empty) global rules, not told apart. Cases told apart get their scenario's rules under
//! their own trace id. Either way a scenario may plant `no_exfiltration` canaries, and each scenario
//! comes back with what its chaos did: its rules' counters and the exchanges recorded
//! while it ran (`coverage`).

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::cases::{CaseResult, run_case};
use super::tie::{Tie, trace_id};
use super::{Provisional, RunContext};
use crate::agent::{Lease, Pool};
use crate::chaos::spec::CompiledChaos;
use crate::chaos::{Canary, RuleStats, mix, stream, sum_stats};
use crate::config::Attribution;
use crate::exchange::Exchange;

/// Why a case cannot be judged when its agent dropped the `traceparent`.
pub(super) const UNTRACED: &str = "the agent's calls carried no traceparent, so this \
     scenario's chaos never reached them (attribution: header)";

/// One scenario to run every prompt under.
#[derive(Clone, Copy)]
pub(super) struct ScenarioRun<'a> {
    pub name: &'a str,
    pub chaos: &'a CompiledChaos,
    /// Plant canaries in tool responses (a `no_exfiltration` check applies).
    pub canary: bool,
    /// Read each case's outcome trace when it ends (`outcome::trace`): the run classifies
    /// what its agent did with faults.
    pub trace: bool,
    /// Tell its cases apart even without chaos (one at a time on the main lane under
    /// exclusive attribution): a baseline pass whose cases' tool responses must be known.
    pub attributed: bool,
}

/// A scenario's cases and what its chaos did.
#[derive(Debug, Default, Clone)]
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
    Arc::new(Canary::new(mix(
        ctx.scoring.seed ^ stream("no_exfiltration")
    )))
}

use super::late::{Cell, Done, Rules};

/// How the cases of a run are told apart (design.md §6), from the run's context.
#[derive(Clone)]
enum Ties {
    /// Each case on a pool instance, owning its lane.
    Pool(Arc<Pool>),
    /// Each case under its trace id, which the agent propagates (`header`).
    Header,
    /// One case at a time, owning the main listener's lane (`exclusive`).
    MainLane,
    /// Cases in flight together under their scenario's global rules, not told apart
    /// (`exclusive`, a scenario without chaos and no traffic checks).
    Shared,
}

impl Ties {
    /// How a case with trace id `trace` (none when cases are not told apart), on `lease`
    /// in a pool, is tied to its exchanges.
    fn tie<'a>(
        &self,
        ctx: &'a RunContext,
        trace: Option<&'a str>,
        lease: Option<&'a Lease>,
    ) -> Tie<'a> {
        match (self, trace) {
            (Ties::Header, Some(t)) => Tie::Header(t),
            (Ties::Pool(_) | Ties::MainLane, Some(t)) => Tie::Lane {
                trace: t,
                lane: lease.map_or(ctx.journal.main_lane(), |l| l.lane()),
                instance: lease,
            },
            (Ties::Header | Ties::Pool(_) | Ties::MainLane | Ties::Shared, _) => Tie::None,
        }
    }
}

/// Runs every prompt under every scenario; results grouped by scenario, in prompt order.
/// `so_far` tells the progress display how each case stands as it ends. Every case that
/// can be told apart gets its scenario's rules under its own trace id, drawing from its own
/// stream (the run's seed, scenario, prompt and position): the same seed gives the same
/// faults on the same cases whatever the order, concurrency or pool size.
pub(super) async fn run_matrix(
    ctx: &RunContext,
    scenarios: &[ScenarioRun<'_>],
    prompts: &[String],
    units: Option<&[String]>,
    so_far: &Provisional,
) -> Vec<ScenarioOutcome> {
    let trials = ctx.scoring.trials.indices();
    // Under `--shard`, the prompts of the shard's units (a prompt is its own unit unless
    // `units` says), each at its place in the whole run (its trace id and so its chaos are
    // the whole run's).
    let unit = |p: usize| units.and_then(|u| u.get(p)).unwrap_or(&prompts[p]);
    let mine: Vec<usize> = (0..prompts.len())
        .filter(|&p| ctx.shard.is_none_or(|s| s.holds(unit(p))))
        .collect();
    if let Some(p) = &ctx.progress {
        (p.planned)(scenarios.len() * mine.len() * trials.len());
    }
    let all = match (&ctx.pool, ctx.scoring.attribution) {
        (Some(pool), _) => Some(Ties::Pool(pool.clone())),
        (None, Attribution::Header) => Some(Ties::Header),
        (None, Attribution::Exclusive) => None,
    };
    if let Some(ties) = all {
        // Calls that lost their case meet no rules at all, not the config's `chaos:`.
        let _none = ctx.engine.install_compiled(&CompiledChaos::default(), None);
        let cells: Vec<Cell> = (0..scenarios.len())
            .flat_map(|s| mine.iter().map(move |&p| (s, p)))
            .flat_map(|(s, p)| trials.iter().map(move |&t| (s, p, t)))
            .collect();
        let start = ctx.journal.peek_next_id();
        let mut out = pool(ctx, scenarios, prompts, &cells, ties, so_far).await;
        add_strays(ctx, &mut out, start);
        return out;
    }
    let mut out = vec![];
    for s in scenarios {
        let cells: Vec<Cell> = mine
            .iter()
            .flat_map(|&p| trials.iter().map(move |&t| (0, p, t)))
            .collect();
        let one = [*s];
        // Chaos decides per case, so cases under chaos run one at a time on the main lane.
        if !s.chaos.is_empty() || ctx.concurrency <= 1 || s.attributed {
            let _none = ctx.engine.install_compiled(&CompiledChaos::default(), None);
            let start = ctx.journal.peek_next_id();
            let mut done = pool(ctx, &one, prompts, &cells, Ties::MainLane, so_far).await;
            add_strays(ctx, &mut done, start);
            out.push(done.pop().unwrap_or_default());
            continue;
        }
        let canary = s.canary.then(|| canary(ctx));
        let active = ctx.engine.install_compiled(s.chaos, canary);
        let start = ctx.journal.peek_next_id();
        let mut done = pool(ctx, &one, prompts, &cells, Ties::Shared, so_far).await;
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

/// Runs the `cells` (scenario, prompt), as many at a time as `ties` allows. Cases that can
/// be told apart install their scenario's rules for their own trace id while they run.
/// Cases reach the agent in `cells`' order (the config's scenario, prompt and trial order):
/// each one's slot and instance are taken here, one after the other, before it is spawned,
/// so at concurrency 1 a stateful agent sees the same history in every run, and the run's
/// last case is the config's last.
async fn pool(
    ctx: &RunContext,
    specs: &[ScenarioRun<'_>],
    prompts: &[String],
    cells: &[Cell],
    ties: Ties,
    so_far: &Provisional,
) -> Vec<ScenarioOutcome> {
    let width = match &ties {
        Ties::Pool(p) => p.bound().min(ctx.concurrency.max(1)),
        Ties::MainLane => 1,
        Ties::Header | Ties::Shared => ctx.concurrency.max(1),
    };
    let limit = Arc::new(Semaphore::new(width));
    let mut tasks = tokio::task::JoinSet::new();
    for &cell in cells {
        let permit = limit.clone().acquire_owned().await.ok();
        let lease = match &ties {
            Ties::Pool(pool) => Some(pool.lease().await),
            Ties::Header | Ties::MainLane | Ties::Shared => None,
        };
        let case = one(ctx, specs[cell.0], prompts, cell, &ties, so_far);
        tasks.spawn(case.run(permit, lease));
    }
    let mut done = tasks.join_all().await;
    if let Ties::Pool(pool) = &ties {
        super::late::gather(ctx, pool, &mut done).await;
    }
    grouped(done, specs.len())
}

/// One case of `pool`, ready to run once its slot and instance are taken.
struct One {
    ctx: RunContext,
    name: String,
    chaos: CompiledChaos,
    canary: bool,
    traced_case: bool,
    prompt: String,
    cell: Cell,
    ties: Ties,
    so_far: Provisional,
}

fn one(
    ctx: &RunContext,
    spec: ScenarioRun<'_>,
    prompts: &[String],
    cell: Cell,
    ties: &Ties,
    so_far: &Provisional,
) -> One {
    One {
        ctx: ctx.clone(),
        name: spec.name.to_string(),
        chaos: spec.chaos.clone(),
        canary: spec.canary,
        traced_case: spec.trace,
        prompt: prompts[cell.1].clone(),
        cell,
        ties: ties.clone(),
        so_far: so_far.clone(),
    }
}

impl One {
    /// Runs the case with its `permit` (its place among the cases in flight) and `lease`.
    async fn run(
        self,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        lease: Option<Lease>,
    ) -> Done {
        let One {
            ctx,
            name,
            chaos,
            prompt,
            ties,
            ..
        } = &self;
        let (_, p, t) = self.cell;
        let traced = !matches!(ties, Ties::Shared);
        let trace = traced.then(|| trace_id(ctx, name, prompt, p, t));
        // Shared with the case's tail on a pool instance: its late calls meet its rules.
        let rules = trace.as_ref().map(|t| {
            let canary = self.canary.then(|| canary(ctx));
            Arc::new(ctx.engine.install_for_trace(t, chaos, canary))
        });
        let keep = rules.clone().map(|r| Box::new(r) as Box<dyn Send + Sync>);
        if let Some(progress) = &ctx.progress {
            (progress.started)(name, prompt);
        }
        let tie = ties.tie(ctx, trace.as_deref(), lease.as_ref());
        // Header and pool cases give their slot back at the answer, while they settle:
        // their trace id or instance keeps their exchanges apart. The main lane is one.
        let (slot, _held) = match ties {
            Ties::Header | Ties::Pool(_) => (permit, None),
            Ties::MainLane | Ties::Shared => (None, permit),
        };
        let mut case = run_case(ctx, name, prompt, tie, slot, self.traced_case, keep).await;
        drop(lease);
        case.trial = (ctx.scoring.trials.n > 1).then_some(t + 1);
        if matches!(ties, Ties::Header) && !chaos.is_empty() && case.traffic.is_none() {
            case.not_judged.get_or_insert_with(|| UNTRACED.to_string());
        }
        // A pool case's rules may still fire on its late calls: read once they are gathered.
        let rules = match (rules, ties) {
            (Some(r), Ties::Pool(_)) => Rules::Live(r),
            (r, _) => Rules::Read(r.map(|r| r.rules().stats()).unwrap_or_default()),
        };
        if let Some(progress) = &ctx.progress {
            (progress.case)(&case, &(self.so_far)(&case));
        }
        (self.cell, case, rules)
    }
}

/// The ended cases of `n` scenarios, each scenario's in prompt and trial order whatever
/// finished first, with its exchanges and its rules' counters summed.
fn grouped(mut done: Vec<Done>, n: usize) -> Vec<ScenarioOutcome> {
    done.sort_by_key(|(cell, _, _)| *cell);
    let mut out: Vec<ScenarioOutcome> = (0..n).map(|_| Default::default()).collect();
    let mut stats: Vec<Vec<Vec<RuleStats>>> = vec![vec![]; n];
    for ((s, _, _), case, rules) in done {
        out[s]
            .exchanges
            .extend(case.traffic.iter().flatten().cloned());
        out[s].cases.push(case);
        stats[s].push(rules.stats());
    }
    for (o, s) in out.iter_mut().zip(stats) {
        o.stats = sum_stats(&s);
    }
    out
}

/// Adds to `out` the exchanges recorded since id `start` that belong to no case (one that
/// began after its case settled, a call of something else on the main listener), so the
/// coverage counts them outside every case: each to the scenario of a case whose window
/// holds it, else to the first.
fn add_strays(ctx: &RunContext, out: &mut [ScenarioOutcome], start: u64) {
    let end = ctx.journal.peek_next_id().saturating_sub(1);
    let inside: std::collections::HashSet<u64> = out
        .iter()
        .flat_map(|o| o.exchanges.iter().map(|e| e.id))
        .collect();
    for e in ctx.journal.slice(start, end) {
        if inside.contains(&e.id) {
            continue;
        }
        let held = |o: &ScenarioOutcome| {
            o.cases
                .iter()
                .any(|c| (c.window.0..=c.window.1).contains(&e.id))
        };
        let s = out.iter().position(held).unwrap_or(0);
        if let Some(o) = out.get_mut(s) {
            o.exchanges.push(e);
        }
    }
}
