//! A run's tokens and cost for its report (issue #49): per scenario (every LLM answer in
//! its journal window, attributed to a case or not), what fault rules' retries and
//! fallbacks spent (summed from its cases), and each scenario with chaos against the
//! no-chaos baseline of the same prompts: its cases' figures minus their prompts' mean
//! baseline figures, over the cases both sides fully reported and priced.

use std::collections::HashMap;

use super::cases::CaseResult;
use super::classes::BASELINE;
use crate::cost::{Delta, Pricing, PricingInfo, RunUsage, ScenarioUsage, Tally, sum_spends};

/// A scenario's LLM usage over its whole window.
pub(super) struct Window {
    pub name: String,
    pub chaos: bool,
    pub spent: Tally,
}

impl Window {
    /// `name`'s window: every LLM answer among its `exchanges`, priced.
    pub fn of(
        name: &str,
        chaos: bool,
        exchanges: &[std::sync::Arc<crate::exchange::Exchange>],
        pricing: &Pricing,
    ) -> Window {
        Window {
            name: name.to_string(),
            chaos,
            spent: Tally::of(exchanges, pricing),
        }
    }
}

/// The windows of a contract run's scenario outcomes, in their order: a `(baseline)` pass
/// first when `baseline`, then `scenarios`, then the `(baseline)` pass added for outcome
/// classes, if any.
pub(super) fn windows(
    baseline: bool,
    scenarios: &[crate::config::Scenario],
    outcomes: &[super::matrix::ScenarioOutcome],
    pricing: &Pricing,
) -> Vec<Window> {
    let mut names = baseline.then_some((BASELINE, false)).into_iter();
    let mut named = scenarios
        .iter()
        .map(|s| (s.name.as_str(), !s.chaos.is_empty()));
    outcomes
        .iter()
        .map(|o| {
            let (name, chaos) = names
                .next()
                .or_else(|| named.next())
                .unwrap_or((BASELINE, false));
            Window::of(name, chaos, &o.exchanges, pricing)
        })
        .collect()
}

/// A chaos or mutation run's `usage`: its one scenario, over `spent` (its window), and the
/// `(baseline)` pass's window when one ran.
pub(super) fn one_scenario(
    pricing: &Pricing,
    (name, chaos, spent): (&str, bool, Tally),
    baseline: Option<Window>,
    cases: &[&CaseResult],
) -> RunUsage {
    let main = Window {
        name: name.to_string(),
        chaos,
        spent,
    };
    let windows = std::iter::once(main).chain(baseline).collect();
    run_usage(pricing, windows, cases)
}

/// The report's `usage`: `windows` in report order, `cases` every case of the run.
pub(super) fn run_usage(
    pricing: &Pricing,
    windows: Vec<Window>,
    cases: &[&CaseResult],
) -> RunUsage {
    let base = windows
        .iter()
        .find(|w| !w.chaos && w.name != BASELINE)
        .or_else(|| windows.iter().find(|w| w.name == BASELINE))
        .map(|w| w.name.clone());
    let mut total = Tally::empty(&pricing.currency);
    let mut scenarios = vec![];
    for w in windows {
        total.add(&w.spent);
        let spends = cases
            .iter()
            .filter(|c| c.scenario == w.name)
            .filter_map(|c| c.usage.as_ref())
            .flat_map(|u| &u.because_of_faults);
        let vs_baseline = base
            .as_deref()
            .filter(|_| w.chaos)
            .map(|b| delta(b, &w.name, cases));
        scenarios.push(ScenarioUsage {
            because_of_faults: sum_spends(spends),
            scenario: w.name,
            spent: w.spent,
            vs_baseline,
        });
    }
    RunUsage {
        spent: total,
        because_of_faults: sum_spends(scenarios.iter().flat_map(|s| &s.because_of_faults)),
        pricing: PricingInfo::of(pricing),
        scenarios,
    }
}

/// A case's figures when its usage is whole: every answer reported and priced.
fn whole(c: &CaseResult) -> Option<[f64; 3]> {
    let t = &c.usage.as_ref()?.spent;
    let (i, o, cost) = (t.input_tokens?, t.output_tokens?, t.cost?);
    t.complete().then_some([i as f64, o as f64, cost])
}

/// `scenario`'s cases minus their prompts' mean figures under `baseline`.
fn delta(baseline: &str, scenario: &str, cases: &[&CaseResult]) -> Delta {
    let mut means: HashMap<&str, ([f64; 3], f64)> = HashMap::new();
    for c in cases.iter().filter(|c| c.scenario == baseline) {
        if let Some(f) = whole(c) {
            let (sum, n) = means.entry(c.prompt.as_str()).or_insert(([0.0; 3], 0.0));
            for k in 0..3 {
                sum[k] += f[k];
            }
            *n += 1.0;
        }
    }
    let (mut d, mut compared, mut left) = ([0.0f64; 3], 0u32, 0u32);
    for c in cases.iter().filter(|c| c.scenario == scenario) {
        match (whole(c), means.get(c.prompt.as_str())) {
            (Some(f), Some((sum, n))) => {
                for k in 0..3 {
                    d[k] += f[k] - sum[k] / n;
                }
                compared += 1;
            }
            _ => left += 1,
        }
    }
    let known = compared > 0;
    Delta {
        baseline: baseline.to_string(),
        cases: compared,
        input_tokens: known.then(|| d[0].round() as i64),
        output_tokens: known.then(|| d[1].round() as i64),
        cost: known.then_some(d[2]),
        note: (left > 0).then(|| {
            format!(
                "{left} case(s) left out: their usage, or their prompt's baseline usage, was not \
                 attributed, reported or priced in full"
            )
        }),
    }
}
