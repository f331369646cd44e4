//! The contract matrix as a heatmap: a row per invariant, a cell per scenario, each linked
//! to its detail (failed and not-tested cells) or to its scenario's cases.

use std::collections::HashMap;

use serde::Serialize;

use super::{Link, cell_anchor, reason, text, verdict_look};
use crate::checks::Verdict;
use crate::report::view::Section;

#[derive(Serialize)]
pub(super) struct Heatmap {
    scenarios: Vec<Link>,
    rows: Vec<HeatRow>,
}

#[derive(Serialize)]
struct HeatRow {
    invariant: String,
    severity: String,
    cells: Vec<HeatCell>,
}

#[derive(Serialize)]
struct HeatCell {
    class: &'static str,
    mark: &'static str,
    href: String,
    title: String,
    /// With trials: "passed/trials", and whether they disagreed.
    trials: Option<String>,
    flaky: bool,
}

pub(super) fn heatmap(s: &Section<'_>, groups: &HashMap<&str, String>) -> Heatmap {
    let group_of = |scenario: &str| {
        groups
            .get(scenario)
            .map_or_else(|| format!("{}-cases", s.phase), |a| a.clone())
    };
    Heatmap {
        scenarios: s
            .scenarios
            .iter()
            .map(|sc| Link {
                label: text::line(sc, 40),
                href: group_of(sc),
            })
            .collect(),
        rows: s
            .invariants
            .iter()
            .map(|inv| {
                let severity = s
                    .cells
                    .iter()
                    .find(|c| c.invariant == *inv)
                    .map_or_else(String::new, |c| c.severity.to_string());
                HeatRow {
                    invariant: text::line(inv, 60),
                    severity,
                    cells: s
                        .scenarios
                        .iter()
                        .map(|sc| match s.cell(inv, sc) {
                            Some(c) => {
                                let (class, mark, word) = verdict_look(&c.verdict);
                                let href = match c.verdict {
                                    Verdict::Fail(_) | Verdict::NotTested(_) => cell_anchor(s, c),
                                    Verdict::Pass(_) | Verdict::NotApplicable(_) => group_of(sc),
                                };
                                let t = c.consistency.as_ref();
                                let figures = t.map_or_else(String::new, |t| {
                                    format!(
                                        "; {} of {} trials passed, pass^1 {:.2}, pass^{} {:.2}{}",
                                        t.passed,
                                        t.trials,
                                        t.pass_hat(1).unwrap_or(0.0),
                                        t.pass_hat_k.len(),
                                        t.pass_hat_k.last().copied().unwrap_or(0.0),
                                        if t.flaky { " (flaky)" } else { "" }
                                    )
                                });
                                HeatCell {
                                    class,
                                    mark,
                                    href,
                                    title: format!(
                                        "{word} ({}): {}{figures}",
                                        c.severity,
                                        text::line(reason(&c.verdict), 300)
                                    ),
                                    trials: t.map(|t| format!("{}/{}", t.passed, t.trials)),
                                    flaky: t.is_some_and(|t| t.flaky),
                                }
                            }
                            None => HeatCell {
                                class: "none",
                                mark: "",
                                href: group_of(sc),
                                title: "no cell".into(),
                                trials: None,
                                flaky: false,
                            },
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}
