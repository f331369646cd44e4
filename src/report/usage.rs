//! Tokens and cost in the human and CI formats (docs/observability.md): a run's figures
//! per scenario as a Markdown table, and as JUnit properties of the run's suite and of each
//! case. Unknown figures are written `unknown`, never 0.

use std::fmt::Write;

use crate::cost::{RunUsage, Tally, money};

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "unknown".into(), |n| n.to_string())
}

fn cost(t: &Tally) -> String {
    t.cost.map_or_else(
        || format!("unknown ({})", t.currency),
        |c| format!("{} {}", money(c), t.currency),
    )
}

/// JUnit properties of a tally.
pub fn properties(t: &Tally) -> Vec<(&'static str, String)> {
    let mut p = vec![
        ("llm_calls", t.llm_calls.to_string()),
        ("input_tokens", count(t.input_tokens)),
        ("output_tokens", count(t.output_tokens)),
        (
            "cost",
            t.cost.map_or_else(|| "unknown".into(), |c| c.to_string()),
        ),
        ("currency", t.currency.clone()),
    ];
    if let Some(n) = &t.cost_note {
        p.push(("cost_note", n.clone()));
    }
    p
}

/// "Tokens and cost": one row per scenario, then the run's, with what faults spent and
/// each scenario's delta against its no-chaos baseline.
pub fn markdown(out: &mut String, u: &RunUsage) {
    out.push_str("**Tokens and cost**\n\n| scenario | LLM calls | input | output | cost | because of faults | vs baseline |\n|---|---:|---:|---:|---:|---|---|\n");
    let faults = |spends: &[crate::cost::RuleSpend]| {
        let each: Vec<String> = spends
            .iter()
            .map(|s| format!("`{}`: {} tokens", s.rule, count(s.spent.tokens())))
            .collect();
        each.join(", ")
    };
    for s in &u.scenarios {
        let delta = s.vs_baseline.as_ref().map_or(String::new(), |d| {
            let signed = |n: Option<i64>| n.map_or_else(|| "unknown".into(), |n| format!("{n:+}"));
            format!(
                "{} in, {} out vs `{}`",
                signed(d.input_tokens),
                signed(d.output_tokens),
                d.baseline
            )
        });
        let t = &s.spent;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {delta} |",
            super::markdown_cell(&s.scenario),
            t.llm_calls,
            count(t.input_tokens),
            count(t.output_tokens),
            cost(t),
            faults(&s.because_of_faults),
        );
    }
    let t = &u.spent;
    let _ = writeln!(
        out,
        "| **run** | {} | {} | {} | {} | {} | |",
        t.llm_calls,
        count(t.input_tokens),
        count(t.output_tokens),
        cost(t),
        faults(&u.because_of_faults),
    );
    if let Some(n) = &t.cost_note {
        let _ = writeln!(out, "\n{}", super::markdown_cell(n));
    }
    if let Some(d) = &u.pricing.as_of {
        let _ = writeln!(out, "\n<sub>prices of {d} ({})</sub>", u.pricing.currency);
    }
    out.push('\n');
}
