//! "What the chaos did", per scenario run: its cases, exchanges and a line per chaos rule,
//! and what its LLM calls spent (tokens and cost, its delta against the no-chaos
//! baseline); and the run's spend in one line.

use serde::Serialize;

use super::super::text;
use super::super::view::Section;
use crate::cost::ScenarioUsage;
use crate::run::Coverage;

#[derive(Serialize)]
pub(super) struct CoverageCtx {
    scenario: String,
    cases: usize,
    judged: usize,
    exchanges: usize,
    rules: Vec<String>,
    not_tested: Option<String>,
    /// Its LLM tokens and cost, and its delta against the no-chaos baseline.
    usage: String,
}

/// Every scenario run of the section.
pub(super) fn of(s: &Section<'_>) -> Vec<CoverageCtx> {
    let usage = |i: usize| {
        let u = s.usage?.scenarios.get(i)?;
        // Coverage and usage list the same scenario runs in the same order.
        (s.coverage.get(i)?.scenario == u.scenario).then_some(u)
    };
    s.coverage
        .iter()
        .enumerate()
        .map(|(i, c)| coverage(c, usage(i)))
        .collect()
}

/// The run's LLM tokens and cost in one line (contract runs).
pub(super) fn run_usage(s: &Section<'_>) -> Option<String> {
    s.usage
        .map(|u| text::line(&crate::cost::line(&u.spent), 400))
}

/// A scenario's usage in one line, with its delta against the baseline.
fn usage_line(u: Option<&ScenarioUsage>) -> String {
    let Some(u) = u else { return String::new() };
    let mut line = crate::cost::line(&u.spent);
    if let Some(d) = &u.vs_baseline {
        let signed = |n: Option<i64>| n.map_or("unknown".into(), |n| format!("{n:+}"));
        let tokens = [signed(d.input_tokens), signed(d.output_tokens)];
        line.push_str(&format!(
            "; vs `{}`: {} in, {} out",
            d.baseline, tokens[0], tokens[1]
        ));
    }
    text::line(&line, 400)
}

/// A scenario's coverage as the page shows it: counts, a line per chaos rule, its spend.
fn coverage(c: &Coverage, usage: Option<&ScenarioUsage>) -> CoverageCtx {
    CoverageCtx {
        usage: usage_line(usage),
        scenario: text::line(&c.scenario, 100),
        cases: c.cases,
        judged: c.judged,
        exchanges: c.exchanges,
        rules: c
            .rules
            .iter()
            .map(|r| {
                let why = r
                    .why_not
                    .as_deref()
                    .map(|w| format!(": {}", text::line(w, 200)))
                    .unwrap_or_default();
                format!(
                    "{} ({}) fired {} of {} matched, applied {}{why}",
                    text::line(&r.stats.rule, 60),
                    r.stats.mode,
                    r.stats.fired,
                    r.stats.matched,
                    r.applied
                )
            })
            .collect(),
        not_tested: c.not_tested.as_deref().map(|n| text::line(n, 300)),
    }
}
