//! The contract matrix as a heatmap: a row per invariant, a cell per scenario, each linked
//! to its detail (failed and not-tested cells) or to its scenario's cases; a cell whose
//! cases have outcome classes shows their distribution (a thin stacked bar, and in words
//! on hover).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{Link, cell_anchor, reason, text, verdict_look};
use crate::checks::Verdict;
use crate::checks::spec::OutcomeClass;
use crate::report::outcomes::{self, VERDICTS};
use crate::report::view::Section;
use crate::run::CellResult;

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
    /// Its cases' outcome classes as a stacked bar: the verdict classes' shares.
    outcomes: Vec<Seg>,
}

#[derive(Serialize)]
struct Seg {
    class: &'static str,
    pct: u32,
}

/// A cell's outcome classes: words for its title, segments for its bar.
fn distribution(counts: &BTreeMap<OutcomeClass, usize>) -> (String, Vec<Seg>) {
    if counts.is_empty() {
        return (String::new(), vec![]);
    }
    let segs = VERDICTS
        .iter()
        .zip(outcomes::shares(counts))
        .filter(|(_, pct)| *pct > 0)
        .map(|(c, pct)| Seg {
            class: c.as_str(),
            pct,
        })
        .collect();
    (format!("; outcomes: {}", outcomes::counted(counts)), segs)
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
                badge: None,
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
                            Some(c) => cell(s, c, group_of(sc)),
                            None => HeatCell {
                                class: "none",
                                mark: "",
                                href: group_of(sc),
                                title: "no cell".into(),
                                trials: None,
                                flaky: false,
                                outcomes: vec![],
                            },
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

/// A cell of the matrix: linked to its detail when it failed or was not tested, else to
/// its scenario's cases (`group`).
fn cell(s: &Section<'_>, c: &CellResult, group: String) -> HeatCell {
    let (class, mark, word) = verdict_look(&c.verdict);
    let href = match c.verdict {
        Verdict::Fail(_) | Verdict::NotTested(_) => cell_anchor(s, c),
        Verdict::Pass(_) | Verdict::NotApplicable(_) => group,
    };
    let t = c.consistency.as_ref();
    let figures = t.map_or_else(String::new, |t| {
        format!(
            "; {}{}",
            crate::run::trials_figures(t, s.trials),
            if t.flaky { " (flaky)" } else { "" }
        )
    });
    let (classes, outcomes) = distribution(&c.outcomes);
    HeatCell {
        class,
        mark,
        href,
        title: format!(
            "{word} ({}): {}{figures}{classes}",
            c.severity,
            text::line(reason(&c.verdict), 300)
        ),
        trials: t.map(|t| format!("{}/{}", t.passed, t.trials)),
        flaky: t.is_some_and(|t| t.flaky),
        outcomes,
    }
}
