//! The resilience profile (docs/reports.md): what the agent did with the faults that
//! reached it, as the share of each of its five outcome classes per scenario (from the
//! scenario's coverage) and per fault family (from the `fault` evidence of each case, a
//! case counted once in every family it met), drawn as stacked bars of plain HTML. The
//! cases no fault reached and the undecided ones are counted apart, so shares add up.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::checks::spec::OutcomeClass;
use crate::report::outcomes::{self, APART, Family, VERDICTS};
use crate::report::text;
use crate::report::view::Section;

#[derive(Debug, Serialize)]
pub(super) struct Profile {
    /// The five verdict classes, worst first: the columns.
    pub(super) classes: Vec<Head>,
    pub(super) scenarios: Vec<Row>,
    pub(super) families: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub(super) struct Head {
    class: &'static str,
    word: &'static str,
}

#[derive(Debug, Serialize)]
pub(super) struct Row {
    /// A scenario's name, or a fault family's.
    pub name: String,
    /// A family's row: the scenarios whose cases met it.
    pub scenarios: Vec<String>,
    /// Cases with one of the five verdict classes.
    pub judged: usize,
    /// One per verdict class, worst first.
    pub shares: Vec<Share>,
    pub not_exercised: usize,
    pub undecided: usize,
}

#[derive(Debug, Serialize)]
pub(super) struct Share {
    pub class: &'static str,
    pub word: &'static str,
    pub count: usize,
    /// Whole percents of `judged`; a row's add up to 100.
    pub pct: u32,
}

fn row(name: String, scenarios: Vec<String>, counts: &BTreeMap<OutcomeClass, usize>) -> Row {
    let pct = outcomes::shares(counts);
    let n = |c: OutcomeClass| counts.get(&c).copied().unwrap_or(0);
    Row {
        name,
        scenarios,
        judged: VERDICTS.iter().map(|c| n(*c)).sum(),
        shares: VERDICTS
            .iter()
            .zip(pct)
            .map(|(c, pct)| Share {
                class: c.as_str(),
                word: outcomes::word(*c),
                count: n(*c),
                pct,
            })
            .collect(),
        not_exercised: n(APART[0]),
        undecided: n(APART[1]),
    }
}

/// The section's profile; None when no case of it has an outcome class.
pub(super) fn of(s: &Section<'_>) -> Option<Profile> {
    let scenarios: Vec<Row> = s
        .coverage
        .iter()
        .filter(|c| !c.outcomes.is_empty())
        .map(|c| row(text::line(&c.scenario, 60), vec![], &c.outcomes))
        .collect();
    if scenarios.is_empty() {
        return None;
    }
    let mut by_family: BTreeMap<Family, (Vec<String>, BTreeMap<OutcomeClass, usize>)> =
        BTreeMap::new();
    for cv in &s.cases {
        let Some(o) = &cv.case.outcome else { continue };
        for f in outcomes::families(cv.case, o) {
            let (names, counts) = by_family.entry(f).or_default();
            let name = text::line(&cv.case.scenario, 60);
            if !names.contains(&name) {
                names.push(name);
            }
            *counts.entry(o.class).or_default() += 1;
        }
    }
    Some(Profile {
        classes: VERDICTS
            .iter()
            .map(|c| Head {
                class: c.as_str(),
                word: outcomes::word(*c),
            })
            .collect(),
        scenarios,
        families: by_family
            .into_iter()
            .map(|(f, (names, counts))| row(f.label().to_string(), names, &counts))
            .collect(),
    })
}
