//! Trials as every report format lists them (docs/trials.md): a contract's cells, or a
//! chaos or mutation run's prompts or variants (each its run's `trials` entry), the flaky
//! ones first, and the line that says when the run's scoring hides a pass^k of 0. The
//! figures' words are the terminal's (`run::trials_figures`); the formats only lay them
//! out.

use super::view::Section;
use crate::run::{Consistency, RunKind};

/// The rows of one section with trials.
pub(crate) struct Rows<'a> {
    /// The two columns naming a row: `scenario`/`invariant`, `chaos`/`prompt` or
    /// `type`/`variant`.
    pub heads: (&'static str, &'static str),
    pub rows: Vec<Row<'a>>,
    /// What the rows are (`cells`, `prompts`, `variants`), for the hidden-zero line.
    pub what: &'static str,
    /// The hidden-zero line (`run::hidden_zero`), when the run's scoring hides one.
    pub hidden: Option<String>,
}

pub(crate) struct Row<'a> {
    pub first: &'a str,
    pub second: &'a str,
    pub trials: &'a Consistency,
}

/// `s`'s rows, flaky first; `None` when nothing in it ran several trials.
pub(crate) fn of<'a>(s: &Section<'a>) -> Option<Rows<'a>> {
    let (heads, what, mut rows): (_, _, Vec<Row<'a>>) = match s.phase {
        RunKind::Contract => (
            ("scenario", "invariant"),
            "cells",
            s.cells
                .iter()
                .filter_map(|c| {
                    Some(Row {
                        first: &c.scenario,
                        second: &c.invariant,
                        trials: c.consistency.as_ref()?,
                    })
                })
                .collect(),
        ),
        RunKind::Chaos | RunKind::Mutation => {
            let (heads, what) = match s.phase == RunKind::Chaos {
                true => (("chaos", "prompt"), "prompts"),
                false => (("type", "variant"), "variants"),
            };
            let rows = s.units.iter().map(|t| Row {
                first: &t.scenario,
                second: &t.prompt,
                trials: &t.consistency,
            });
            (heads, what, rows.collect())
        }
        RunKind::Replay | RunKind::Ci => return None,
    };
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|r| !r.trials.flaky);
    let labelled = rows.iter().map(|r| {
        let label = match s.phase == RunKind::Contract {
            true => format!("`{}` under `{}`", r.second, r.first),
            false => format!("{:?}", crate::text::cut(r.second, 60)),
        };
        (label, r.trials)
    });
    let hidden = crate::run::hidden_zero(labelled, s.trials);
    Some(Rows {
        heads,
        rows,
        what,
        hidden,
    })
}
