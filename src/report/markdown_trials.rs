//! Trials in the Markdown summary (docs/trials.md): a contract's cells, or a chaos or
//! mutation run's prompts or variants, the flaky ones first, with their figures in the
//! terminal's words (pass^1, pass^k and pass@k over c passes of n trials), the estimator
//! named, and the line that says when the run's scoring hides a pass^k of 0.

use std::fmt::Write;

use super::markdown::{MAX_ROWS, cell, inline, more};
use super::view::Section;

/// The table, when something in `s` ran several trials.
pub(super) fn table(out: &mut String, s: &Section<'_>) {
    let Some(rows) = super::trials_rows::of(s) else {
        return;
    };
    let (first, second) = rows.heads;
    let _ = write!(
        out,
        "**Consistency over trials**\n\n| {first} | {second} | trials |\n|---|---|---|\n"
    );
    for r in rows.rows.iter().take(MAX_ROWS) {
        let flaky = if r.trials.flaky { "flaky: " } else { "" };
        let _ = writeln!(
            out,
            "| {} | {} | {flaky}{} |",
            cell(r.first),
            cell(r.second),
            cell(&crate::run::trials_figures(r.trials, s.trials))
        );
    }
    more(out, rows.rows.len());
    let _ = writeln!(out, "<sub>{}</sub>\n", inline(crate::run::ESTIMATOR));
    if let Some(line) = &rows.hidden {
        let _ = writeln!(out, "> ⚠️ The {} are {}\n", rows.what, inline(line));
    }
}
