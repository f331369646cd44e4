//! A run's outcome classes (docs/outcomes.md): every case of a scenario with chaos
//! classified (from the trace `case_trace` read when it ended) against its prompt's
//! no-chaos baseline, the first no-chaos scenario's case of that prompt. When a
//! prompt whose class needs one has none whose traffic is known (the matrix has no
//! no-chaos scenario, or its cases ran together under exclusive attribution and could not
//! be told apart), flakestorm runs a `(baseline)` pass of those prompts after the matrix,
//! one trial each, and says so.

use std::collections::{HashMap, HashSet};

use super::RunContext;
use super::cases::CaseResult;
use super::matrix::{ScenarioOutcome, ScenarioRun, run_matrix};
use super::outcome::{classify, needs_baseline};
use crate::chaos::spec::CompiledChaos;

/// The name of the no-chaos pass a run adds for its baselines.
pub(super) const BASELINE: &str = "(baseline)";

static NO_CHAOS: std::sync::LazyLock<CompiledChaos> =
    std::sync::LazyLock::new(CompiledChaos::default);

/// The `(baseline)` scenario run: no chaos, no canaries, cases told apart and traced.
pub(super) fn baseline_run(attributed: bool) -> ScenarioRun<'static> {
    ScenarioRun {
        name: BASELINE,
        chaos: &NO_CHAOS,
        canary: false,
        trace: true,
        attributed,
    }
}

/// The scenario whose cases are the baselines: the first without chaos (a canary planted
/// for `no_exfiltration` changes no fact a tool gives).
fn baseline_of(runs: &[ScenarioRun<'_>]) -> Option<usize> {
    runs.iter().position(|r| r.chaos.is_empty())
}

/// The prompts whose faulted cases' classes hang on a baseline (`needs_baseline`) that has
/// no known traffic, in `prompts` order. One pass over the cases, whatever their number.
fn wanting(
    runs: &[ScenarioRun<'_>],
    outcomes: &[ScenarioOutcome],
    prompts: &[String],
) -> Vec<String> {
    let base = baseline_of(runs).and_then(|i| outcomes.get(i));
    let known: HashSet<&str> = base
        .iter()
        .flat_map(|o| &o.cases)
        .filter(|c| c.trace.is_some())
        .map(|c| c.prompt.as_str())
        .collect();
    let faulted: HashSet<&str> = runs
        .iter()
        .zip(outcomes)
        .filter(|(r, _)| !r.chaos.is_empty())
        .flat_map(|(_, o)| &o.cases)
        .filter(|c| needs_baseline(c))
        .map(|c| c.prompt.as_str())
        .collect();
    let mut out: Vec<String> = vec![];
    let mut taken: HashSet<&str> = HashSet::new();
    for p in prompts {
        if faulted.contains(p.as_str()) && !known.contains(p.as_str()) && taken.insert(p) {
            out.push(p.clone());
        }
    }
    out
}

/// Runs the `(baseline)` pass for the prompts that need one (none: `None`), with the
/// warning that says why it ran.
pub(super) async fn extra_baseline(
    ctx: &RunContext,
    runs: &[ScenarioRun<'_>],
    outcomes: &[ScenarioOutcome],
    prompts: &[String],
    so_far: &super::Provisional,
) -> Option<(ScenarioOutcome, String)> {
    let need = wanting(runs, outcomes, prompts);
    if need.is_empty() {
        return None;
    }
    let why = match baseline_of(runs) {
        None => "the run has no no-chaos scenario to compare with".to_string(),
        Some(i) => format!(
            "the no-chaos scenario `{}` ran its cases together (attribution: exclusive, \
             advanced.concurrency {}), so their tool responses could not be told apart; with \
             advanced.concurrency: 1, attribution: header or an agent pool its own cases are \
             the baselines and this pass is not needed",
            runs[i].name, ctx.concurrency
        ),
    };
    let mut once = ctx.clone();
    once.scoring.trials.only = Some(1);
    let run = [baseline_run(true)];
    let outcome = run_matrix(&once, &run, &need, None, so_far).await.pop()?;
    let warning = format!(
        "flakestorm ran a {BASELINE} pass of {} prompt(s) without chaos, one at a time, to \
         classify what the agent did with faults: {why}",
        need.len()
    );
    Some((outcome, warning))
}

/// Whether a chaos run classifies its cases: it has chaos and an `outcome` invariant (it
/// has no no-chaos case to compare with: its baselines cost a pass of their own).
pub(super) fn classifies(
    chaos: &CompiledChaos,
    invariants: &[crate::checks::spec::InvariantSpec],
) -> bool {
    use crate::checks::spec::Check;
    !chaos.is_empty()
        && invariants
            .iter()
            .any(|i| matches!(i.check, Check::Outcome { .. }))
}

/// Classifies the cases of one scenario run alone (a chaos run's), after a `(baseline)`
/// pass of the prompts that need one: that pass and its warning, if it ran.
pub(super) async fn classify_one(
    ctx: &RunContext,
    run: ScenarioRun<'_>,
    outcome: &mut ScenarioOutcome,
    prompts: &[String],
    so_far: &super::Provisional,
) -> Option<(ScenarioOutcome, String)> {
    let runs = [run];
    let extra = extra_baseline(ctx, &runs, std::slice::from_ref(outcome), prompts, so_far).await;
    classify_all(
        &runs,
        std::slice::from_mut(outcome),
        extra.as_ref().map(|(o, _)| o),
    );
    extra
}

/// Gives every case of a scenario with chaos its outcome class, against the baseline case
/// of its prompt: from `extra` (the pass flakestorm added) first, else the first no-chaos
/// scenario's.
pub(super) fn classify_all(
    runs: &[ScenarioRun<'_>],
    outcomes: &mut [ScenarioOutcome],
    extra: Option<&ScenarioOutcome>,
) {
    let base: Vec<CaseResult> = baseline_of(runs)
        .and_then(|i| outcomes.get(i))
        .map(|o| o.cases.clone())
        .unwrap_or_default();
    let (extra, base) = (by_prompt(extra.map_or(&[], |o| &o.cases)), by_prompt(&base));
    for (run, outcome) in runs.iter().zip(outcomes.iter_mut()) {
        if run.chaos.is_empty() {
            continue;
        }
        for case in &mut outcome.cases {
            let p = case.prompt.as_str();
            let chosen = extra.get(p).or_else(|| base.get(p));
            let baseline = match chosen {
                None => Err("no no-chaos case of this prompt ran".to_string()),
                Some(b) => usable(b),
            };
            case.outcome = classify(
                case,
                true,
                baseline.as_ref().map_err(String::as_str).copied(),
            );
        }
    }
}

/// Each prompt's baseline case among `cases`: the first that can be compared with, else
/// the first (which says why it cannot).
fn by_prompt(cases: &[CaseResult]) -> HashMap<&str, &CaseResult> {
    let mut out: HashMap<&str, &CaseResult> = HashMap::new();
    let good = |c: &CaseResult| c.trace.is_some() && c.answer.is_some() && c.not_judged.is_none();
    for c in cases {
        let slot = out.entry(c.prompt.as_str()).or_insert(c);
        if !good(slot) && good(c) {
            *slot = c;
        }
    }
    out
}

/// A baseline case that can be compared with, or why not.
fn usable(b: &CaseResult) -> Result<&CaseResult, String> {
    if let Some(why) = &b.not_judged {
        return Err(format!("the no-chaos case was not judged: {why}"));
    }
    match b.trace.as_deref().map(|t| t.undecided.as_deref()) {
        None => return Err("the no-chaos case's traffic was not attributed to it".into()),
        Some(Some(why)) => return Err(format!("the no-chaos case's traffic: {why}")),
        Some(None) => {}
    }
    match &b.answer {
        Some(_) => Ok(b),
        None => Err(format!(
            "the no-chaos case got no answer: {}",
            b.error.as_deref().unwrap_or("no answer")
        )),
    }
}
