//! A contract's trials in the Markdown summary (docs/trials.md): every cell with trials,
//! the flaky ones first, with its figures in the terminal's words (pass^1, pass^k and
//! pass@k over c passes of n trials), the estimator named, and the line that says when the
//! run's scoring hides a pass^k of 0.

use std::fmt::Write;

use super::markdown::{MAX_ROWS, cell, inline, more};
use super::view::Section;

/// The table, when some cell of `s` ran several trials.
pub(super) fn table(out: &mut String, s: &Section<'_>) {
    let mut with: Vec<_> = s.cells.iter().filter(|c| c.consistency.is_some()).collect();
    if with.is_empty() {
        return;
    }
    with.sort_by_key(|c| !c.consistency.as_ref().is_some_and(|t| t.flaky));
    out.push_str(
        "**Consistency over trials**\n\n| scenario | invariant | trials |\n|---|---|---|\n",
    );
    for c in with.iter().take(MAX_ROWS) {
        let Some(t) = &c.consistency else { continue };
        let flaky = if t.flaky { "flaky: " } else { "" };
        let _ = writeln!(
            out,
            "| {} | {} | {flaky}{} |",
            cell(&c.scenario),
            cell(&c.invariant),
            cell(&crate::run::trials_figures(t, s.trials))
        );
    }
    more(out, with.len());
    let _ = writeln!(out, "<sub>{}</sub>\n", inline(crate::run::ESTIMATOR));
    let labelled = with.iter().filter_map(|c| {
        let t = c.consistency.as_ref()?;
        Some((format!("`{}` under `{}`", c.invariant, c.scenario), t))
    });
    if let Some(line) = crate::run::hidden_zero(labelled, s.trials) {
        let _ = writeln!(out, "> ⚠️ The cells are {}\n", inline(&line));
    }
}
