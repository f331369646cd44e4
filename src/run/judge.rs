//! Judging a contract scenario's cases: every invariant whose `when` applies is checked on
//! the cases of its prompts (a cell), with no extra agent calls; `when`-excluded cells are
//! not applicable, never passed; cells of a scenario whose chaos never reached the agent
//! are not tested; cases that could not be judged (environment errors) are skipped. Also
//! owns the no-chaos baselines (`behavior_unchanged`) and the stateful-agent warning. No
//! I/O besides the embeddings measure.

use std::collections::HashMap;

use super::CellResult;
use super::cases::{CaseCheck, CaseResult};
use super::consistency::Consistency;
use super::coverage::Coverage;
use crate::chaos::spec::ChaosSpec;
use crate::checks::spec::{Check, OutcomeClass};
use crate::checks::{CaseView, Invariant, Similarity, Verdict};
use crate::config::{ContractSpec, Scenario, When};

/// The report warning for runs where that happened.
pub(super) const UNTRACED_WARNING: &str = "attribution: header, but some of the agent's calls carried no traceparent: \
     those cases met no chaos and their traffic is not attributed, so their checks under chaos \
     are not applicable; propagate W3C trace context in the agent or use attribution: exclusive";

/// What judging a scenario needs from the run.
pub(super) struct Judge<'a> {
    pub ctx: &'a crate::run::Scoring,
    pub contract: &'a ContractSpec,
    pub invariants: &'a [Invariant],
    /// Each invariant's prompts, by index.
    pub prompts_of: &'a [Vec<String>],
}

/// Whether a `no_exfiltration` check of `contract` applies under `chaos` (its canaries are
/// planted).
pub(super) fn plants_canaries(contract: &ContractSpec, chaos: &ChaosSpec) -> bool {
    contract
        .invariants
        .iter()
        .any(|i| matches!(i.invariant.check, Check::NoExfiltration {}) && applies(i.when, chaos))
}

impl Judge<'_> {
    /// Why an `outcome` invariant tests nothing: no scenario it applies to (by its `when`)
    /// has a fault.
    fn faultless(&self, inv: &Invariant, when: When) -> Option<String> {
        let faulted = |s: &Scenario| !s.chaos.is_empty() && when.holds_under(&s.chaos);
        let none = !self.contract.chaos_matrix.iter().any(faulted);
        (inv.is_outcome() && none).then(|| {
            format!(
                "no scenario of the matrix that `when: {when}` takes has a fault: an \
                 `outcome` invariant judges what the agent did with one (docs/outcomes.md)"
            )
        })
    }

    /// The cells of one scenario. A no-chaos scenario's answers become baselines after
    /// they are judged, so they are never compared with themselves.
    pub async fn scenario(
        &self,
        scenario: &Scenario,
        results: &mut [CaseResult],
        coverage: &Coverage,
        baselines: &mut HashMap<String, String>,
        warnings: &mut Vec<String>,
    ) -> Vec<CellResult> {
        let (ctx, chaos) = (self.ctx, &scenario.chaos);
        if chaos.is_empty() && !ctx.resets {
            note_stateful(results, baselines, warnings);
        }
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
            let mine: Vec<usize> = (0..results.len())
                .filter(|&c| self.prompts_of[i].contains(&results[c].prompt))
                .collect();
            let untested = coverage
                .untested(spec.when)
                .filter(|_| !chaos.is_empty())
                .or_else(|| self.faultless(inv, spec.when));
            let mut consistency = None;
            let (verdict, judged) = match (applies(spec.when, chaos), untested) {
                (false, _) => {
                    let why = format!(
                        "when: {} does not hold under `{}`",
                        spec.when, scenario.name
                    );
                    (Verdict::NotApplicable(why), 0)
                }
                (true, Some(why)) => (Verdict::NotTested(why), 0),
                (true, None) => {
                    let cases: Vec<&CaseResult> = mine.iter().map(|&c| &results[c]).collect();
                    let seen = Seen {
                        baselines,
                        similarity: &sim,
                        silent: coverage.silent.as_deref(),
                    };
                    let (verdict, judged, each) = cell(inv, spec.when, &cases, &seen);
                    if ctx.trials.n > 1 {
                        consistency = trials_of(&cases, &each);
                    }
                    for (c, v) in mine.iter().zip(each) {
                        if let Some(verdict) = v {
                            let invariant = spec.id.clone();
                            results[*c].checks.push(CaseCheck { invariant, verdict });
                        }
                    }
                    (verdict, judged)
                }
            };
            let classes = mine.iter().filter_map(|&c| results[c].outcome.as_ref());
            cells.push(CellResult {
                invariant: spec.id.clone(),
                scenario: scenario.name.clone(),
                severity: spec.severity,
                verdict,
                cases: judged,
                consistency,
                outcomes: super::outcome::counts(classes),
            });
        }
        if chaos.is_empty() {
            record_baselines(results, baselines);
        }
        cells
    }
}

/// A cell's consistency over its cases' trials: per prompt, how many of its judged trials
/// passed the check; averaged over the prompts (`None` when no trial was judged).
fn trials_of(cases: &[&CaseResult], each: &[Option<Verdict>]) -> Option<Consistency> {
    let mut per_prompt: Vec<(&str, u32, u32)> = vec![];
    for (c, v) in cases.iter().zip(each) {
        let passed = match v {
            Some(Verdict::Pass(_)) => true,
            Some(Verdict::Fail(_)) => false,
            Some(Verdict::NotApplicable(_) | Verdict::NotTested(_)) | None => continue,
        };
        match per_prompt.iter_mut().find(|(p, _, _)| *p == c.prompt) {
            Some((_, n, ok)) => {
                *n += 1;
                *ok += u32::from(passed);
            }
            None => per_prompt.push((&c.prompt, 1, u32::from(passed))),
        }
    }
    let each: Vec<Consistency> = per_prompt
        .iter()
        .map(|(_, n, ok)| Consistency::of(*n, *ok))
        .collect();
    Consistency::mean(&each)
}

pub(super) fn record_baselines(cases: &[CaseResult], baselines: &mut HashMap<String, String>) {
    for c in cases.iter().filter(|c| c.not_judged.is_none()) {
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
    when.holds_under(chaos)
}

/// What the checks see of a case; `silent`: why nothing crossed the proxy in its
/// scenario, when nothing did.
pub(super) fn view<'a>(
    c: &'a CaseResult,
    baseline: Option<&'a str>,
    similarity: &'a Similarity,
    silent: Option<&'a str>,
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
        silent,
        similarity,
        outcome: c.outcome.as_ref().map(|o| crate::checks::OutcomeView {
            class: o.class,
            reason: &o.reason,
            bypassed: o.bypassed,
        }),
        usage: c.usage.as_ref().map(|u| &u.spent),
    }
}

/// What a scenario's cells are judged against besides their cases.
struct Seen<'a> {
    baselines: &'a HashMap<String, String>,
    similarity: &'a Similarity,
    /// Why nothing crossed the proxy while the scenario ran (`Coverage::silent`).
    silent: Option<&'a str>,
}

/// A cell fails if any case fails (saying how many of its prompts did), passes if any
/// passes (the rest not applicable); with the number of cases judged (passed or failed).
/// Cases that could not be judged, or whose check could not be tested, are skipped; so are
/// cases the faults its `when` names missed (`when::gate`), and an `outcome` check's cases
/// no fault reached: if none was judged, the cell is not tested. Also each case's own
/// verdict (None for a case that could not be judged).
fn cell(
    inv: &Invariant,
    when: When,
    cases: &[&CaseResult],
    seen: &Seen,
) -> (Verdict, usize, Vec<Option<Verdict>>) {
    let (mut passed, mut failed, mut skipped, mut unjudged) = (None, vec![], None, None);
    let mut missed: Option<String> = None;
    let (mut judged, mut each) = (0, Vec::with_capacity(cases.len()));
    for c in cases {
        if let Some(why) = &c.not_judged {
            unjudged = unjudged.or(Some(why.clone()));
            each.push(None);
            continue;
        }
        let gated = super::when::gate(when, c);
        let unexercised = inv.is_outcome()
            && c.outcome
                .as_ref()
                .is_some_and(|o| o.class == OutcomeClass::NotExercised);
        let miss = gated.is_some() || unexercised;
        let verdict = gated.unwrap_or_else(|| {
            let baseline = seen.baselines.get(&c.prompt).map(String::as_str);
            inv.check(&view(c, baseline, seen.similarity, seen.silent))
        });
        each.push(Some(verdict.clone()));
        match verdict {
            Verdict::Fail(r) => failed.push(format!("{:?}: {r}", c.prompt)),
            Verdict::Pass(r) => passed = passed.or(Some(r)),
            Verdict::NotApplicable(r) if miss => {
                missed = missed.or(Some(r));
                continue;
            }
            Verdict::NotApplicable(r) => {
                skipped = skipped.or(Some(r));
                continue;
            }
            Verdict::NotTested(r) => {
                unjudged = unjudged.or(Some(r));
                continue;
            }
        }
        judged += 1;
    }
    if let Some(first) = failed.first() {
        // With trials a prompt is judged more than once: count trials, not prompts.
        let mut prompts: Vec<&str> = cases.iter().map(|c| c.prompt.as_str()).collect();
        prompts.sort_unstable();
        prompts.dedup();
        let what = if prompts.len() < cases.len() {
            "trials"
        } else {
            "prompts"
        };
        let why = match failed.len() {
            1 if judged == 1 => first.clone(),
            n => format!("{n} of {judged} {what} failed; {first}"),
        };
        return (Verdict::Fail(why), judged, each);
    }
    let verdict = match (passed, unjudged, missed) {
        (Some(r), _, _) if judged == 1 => Verdict::Pass(r),
        (Some(_), _, _) => Verdict::Pass(format!("{judged} cases passed")),
        // A case that could not be judged (or tested) might have applied: not tested, with
        // the cause.
        (None, Some(why), _) => Verdict::NotTested(why),
        // The faults reached none of its cases: it tested nothing it is about.
        (None, None, Some(why)) => Verdict::NotTested(why),
        // Why the first case did not apply says why the cell does not.
        (None, None, None) => {
            Verdict::NotApplicable(skipped.unwrap_or_else(|| "no case applied".into()))
        }
    };
    (verdict, judged, each)
}
