//! Late calls on a pool (issue #50): an instance's exchanges are its last case's until its
//! next case starts, also after that case settled. Once a run's cases have ended, this
//! gathers the calls each case's tail caught into the case (its `after_answer`, with their
//! delays), measures how late after-answer calls came, and says when one came close to
//! the next case (within 20 % of the time its instance was reused) or later than
//! `settle_ms` on a pool without spare instances, where a later one would have been
//! counted in the wrong case: naming the exchange, the case it was counted in and the
//! `settle_ms` that would have caught it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use super::RunContext;
use super::cases::{CaseResult, after_answer};
use crate::agent::Pool;
use crate::chaos::{RuleStats, TraceGuard};
use crate::cost::{CaseUsage, Pricing};
use crate::exchange::Exchange;
use crate::journal::Settled;

/// A case to run: (scenario, prompt, trial), indices (the trial 0-based).
pub(super) type Cell = (usize, usize, u32);

/// A case that ended, with its rules.
pub(super) type Done = (Cell, CaseResult, Rules);

/// A case's rules, whose counters its scenario's coverage sums.
pub(super) enum Rules {
    /// Read as the case ended: nothing of it can fire later.
    Read(Vec<RuleStats>),
    /// Still installed for a case that left a tail on a pool instance: read once the run
    /// gathered its late calls, so a fault fired on one is counted as fired.
    Live(Arc<TraceGuard>),
}

impl Rules {
    /// The counters now.
    pub(super) fn stats(&self) -> Vec<RuleStats> {
        match self {
            Rules::Read(stats) => stats.clone(),
            Rules::Live(guard) => guard.rules().stats(),
        }
    }
}

/// Gathers the late calls of `done`'s cases (see the module), once the run's last case has
/// waited its window (the run pays no more than that: its end is its last answer plus one
/// window). The tails settle together, so the run waits for the slowest, not for their
/// sum; a case whose tail still had calls in flight at the bound is not judged, as a case
/// whose own settle ended so (`settle::unfinished`): its traffic is incomplete.
pub(super) async fn gather(ctx: &RunContext, pool: &Pool, done: &mut [Done]) {
    let bound = ctx.settle_max.max(ctx.settle);
    let tails = pool.end_tails();
    let ends = join_all(tails.iter().map(|t| t.watch.settle(Duration::ZERO, bound))).await;
    let ended: HashMap<Arc<str>, Settled> =
        tails.iter().map(|t| t.trace.clone()).zip(ends).collect();
    drop(tails);
    let mut late = late_by_trace(ctx, done);
    for (_, case, rules) in done.iter_mut() {
        join_late(ctx, case, &mut late);
        let settled = case.trace_id.as_ref().and_then(|t| ended.get(t));
        if let Some(why) = settled.and_then(|s| super::settle::unfinished(*s, ctx)) {
            case.not_judged.get_or_insert(why);
        }
        *rules = Rules::Read(rules.stats());
    }
    let cases: Vec<&CaseResult> = done.iter().map(|(_, c, _)| c).collect();
    // Every settle ended because nothing more could come (the process (tree) exited, the
    // agent said so): an instance used again at once met no late call of its last case.
    let spare = !pool.clocked() || (pool.has_spares() && !pool.waited());
    for note in say(&cases, ctx.settle, spare)
        .into_iter()
        .chain(pool.spares_verdict())
    {
        pool.note(note);
    }
}

/// The exchanges recorded after the earliest of `done`'s cases ended, by trace id: one
/// pass over the journal for the whole run, not one per case.
fn late_by_trace(ctx: &RunContext, done: &[Done]) -> HashMap<Arc<str>, Vec<Arc<Exchange>>> {
    let traced = done.iter().filter(|(_, c, _)| c.trace_id.is_some());
    let Some(from) = traced.map(|(_, c, _)| c.window.1 + 1).min() else {
        return HashMap::new();
    };
    let mut by_trace: HashMap<Arc<str>, Vec<Arc<Exchange>>> = HashMap::new();
    for e in ctx.journal.slice(from, u64::MAX) {
        if let Some(t) = &e.trace_id {
            by_trace.entry(Arc::from(t.as_str())).or_default().push(e);
        }
    }
    by_trace
}

/// Adds to `case` the exchanges its tail caught after it ended (taken from `late`).
fn join_late(
    ctx: &RunContext,
    case: &mut CaseResult,
    late: &mut HashMap<Arc<str>, Vec<Arc<Exchange>>>,
) {
    let Some(mine) = case.trace_id.as_ref().and_then(|t| late.remove(t)) else {
        return;
    };
    let after = case.window.1;
    let mine = mine.into_iter().filter(|e| e.id > after).collect();
    if add_late(case, mine, &ctx.scoring.pricing) && case.trace.is_some() {
        case.retrace(ctx);
    }
}

/// Adds `late` to `case`'s traffic, after-answer calls, faults and usage (`max_tokens` and
/// `max_cost` judge all it spent, as `max_llm_calls` counts all its calls); whether any was
/// new. One recorded as the case ended may be in its traffic already.
fn add_late(case: &mut CaseResult, mut late: Vec<Arc<Exchange>>, pricing: &Pricing) -> bool {
    let Some(traffic) = &mut case.traffic else {
        return false;
    };
    late.retain(|e| !traffic.iter().any(|t| t.id == e.id));
    if late.is_empty() {
        return false;
    }
    let (ids, delays) = after_answer(&late, case.times.1);
    case.after_answer.extend(ids);
    case.after_answer_ms.extend(delays);
    case.faults.extend(
        late.iter()
            .flat_map(|e| e.fault.iter().cloned().chain(e.attacks.iter().cloned())),
    );
    if case.not_judged.is_none() {
        case.not_judged = super::environment::problem(&late);
    }
    traffic.extend(late);
    case.usage = Some(CaseUsage::of(traffic, pricing));
    true
}

/// A late call: the exchange, its case, how long after the answer it began.
struct Late<'a> {
    exchange: &'a Exchange,
    case: &'a CaseResult,
    delay: u64,
}

/// What the run says of its late calls: how late they came (the latest, per instance and
/// overall), a warning for each one that came close to its instance's reuse, and on a pool
/// without an idle spare (`spares` false: none, or a case had to wait for one) what a call
/// later than `settle` became (`unseen`).
fn say(cases: &[&CaseResult], settle: Duration, spares: bool) -> Vec<String> {
    let reused = reuse_gaps(cases);
    let lates: Vec<Late> = cases.iter().flat_map(|c| lates_of(c)).collect();
    let Some(latest) = lates.iter().max_by_key(|l| l.delay) else {
        return unseen(&lates, &reused, settle, spares)
            .into_iter()
            .collect();
    };
    let mut per_instance: BTreeMap<usize, u64> = BTreeMap::new();
    for l in &lates {
        let slot = per_instance
            .entry(l.case.instance.unwrap_or(0))
            .or_default();
        *slot = (*slot).max(l.delay);
    }
    let each: Vec<String> = per_instance
        .iter()
        .map(|(i, ms)| format!("instance {i}: {ms} ms"))
        .collect();
    let mut out = vec![format!(
        "calls after the answer: the latest began {} ms after its case's answer ({}; \
         settle_ms: {})",
        latest.delay,
        each.join(", "),
        settle.as_millis()
    )];
    for l in &lates {
        let gap = reused
            .get(&(l.case.trace_id.clone(), l.case.times))
            .copied();
        if let Some(g) = gap.filter(|&g| 5 * l.delay >= 4 * g) {
            out.push(format!(
                "{} came {} ms after {} answered, within 20 % of when its instance was used \
                 again ({g} ms): a little later and it would have been counted in the next \
                 case; settle_ms: {} would catch it",
                exchange(l.exchange),
                l.delay,
                case_name(l.case),
                catching(l.delay)
            ));
        }
    }
    out.extend(unseen(&lates, &reused, settle, spares));
    out
}

/// On a pool without an idle spare (`spares` false), once an instance was used again: the
/// warning that a call later than `settle` after an answer went to the instance's next case,
/// where nothing tells it from that case's own calls. Said whether or not the run saw such a
/// call, since it cannot see one it counted in the next case; naming the latest it saw.
fn unseen(
    lates: &[Late],
    reused: &BTreeMap<CaseKey, u64>,
    settle: Duration,
    spares: bool,
) -> Option<String> {
    let settle_ms = settle.as_millis() as u64;
    if spares || settle_ms == 0 || reused.is_empty() {
        return None;
    }
    let seen = match lates.iter().max_by_key(|l| l.delay) {
        Some(l) if l.delay > settle_ms => {
            let at_risk = reused.values().filter(|&&g| g <= l.delay).count();
            format!(
                "{} came {} ms after {} answered, later than settle_ms ({settle_ms}): {at_risk} \
                 cases ran on an instance used again sooner than that after its previous \
                 case's answer, so a call this late of the case before may be counted in \
                 theirs; settle_ms: {} would catch it",
                exchange(l.exchange),
                l.delay,
                case_name(l.case),
                catching(l.delay)
            )
        }
        Some(l) => format!(
            "the latest call after an answer the run saw was {} of {}, {} ms after it",
            exchange(l.exchange),
            case_name(l.case),
            l.delay
        ),
        None => "the run saw no call made after an answer".to_string(),
    };
    Some(format!(
        "the pool had no idle spare instance: each instance took its next case as soon as its \
         last case had been quiet for settle_ms ({settle_ms}), so a call the agent made later \
         than that after answering was counted in that next case, and nothing tells it from \
         that case's own calls; {seen}; set agent.instances above advanced.concurrency \
         (spares) to keep late calls with their case"
    ))
}

/// `case`'s after-answer exchanges with their delays.
fn lates_of<'a>(case: &'a CaseResult) -> Vec<Late<'a>> {
    let traffic = case.traffic.as_deref().unwrap_or_default();
    case.after_answer
        .iter()
        .zip(&case.after_answer_ms)
        .filter_map(|(id, &delay)| {
            let exchange = traffic.iter().find(|e| e.id == *id)?;
            Some(Late {
                exchange,
                case,
                delay,
            })
        })
        .collect()
}

/// What tells a case apart in `reuse_gaps`: its trace id and its times.
type CaseKey = (Option<Arc<str>>, (u64, u64));

/// For each case whose instance ran another case after it: how long after its answer that
/// next case started (keyed by trace id and times, which tell a case apart).
fn reuse_gaps(cases: &[&CaseResult]) -> BTreeMap<CaseKey, u64> {
    let mut by_instance: BTreeMap<usize, Vec<&CaseResult>> = BTreeMap::new();
    for c in cases {
        if let Some(i) = c.instance {
            by_instance.entry(i).or_default().push(c);
        }
    }
    let mut gaps = BTreeMap::new();
    for list in by_instance.values_mut() {
        list.sort_by_key(|c| c.times.0);
        for pair in list.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            gaps.insert(
                (a.trace_id.clone(), a.times),
                b.times.0.saturating_sub(a.times.1),
            );
        }
    }
    gaps
}

/// The exchange in words: its id, method and URL.
fn exchange(e: &Exchange) -> String {
    format!("exchange {} ({} {})", e.id, e.request.method, e.request.url)
}

/// The case in words: its scenario and prompt.
fn case_name(c: &CaseResult) -> String {
    format!(
        "case `{}` / `{}`",
        c.scenario,
        crate::text::cut(&c.prompt, 60)
    )
}

/// The `settle_ms` that would have caught a call `delay` ms after the answer: the next
/// 100 ms above it.
fn catching(delay: u64) -> u64 {
    (delay / 100 + 1) * 100
}

#[cfg(test)]
#[path = "late_tests.rs"]
mod tests;
