//! Plain-text renderings of run reports for the terminal: the contract matrix (✓ pass,
//! ✗ fail, · not applicable), failures with their reasons, the score.

use super::ContractReport;
use crate::checks::Verdict;

/// The matrix, one row per invariant, one column per scenario: ✓ pass, ✗ fail, · n/a.
/// `color`: ANSI colours for the marks (a terminal).
pub fn summary(r: &ContractReport, color: bool) -> String {
    let mut out = format!(
        "contract {:?}: {} agent calls\n\n",
        r.contract, r.agent_calls
    );
    let width = r
        .cells
        .iter()
        .map(|c| c.invariant.len())
        .max()
        .unwrap_or(9)
        .max(9);
    out.push_str(&format!("  {:<width$}", "invariant"));
    for s in &r.scenarios {
        out.push_str(&format!("  {s}"));
    }
    out.push('\n');
    let mut ids: Vec<&str> = vec![];
    for c in &r.cells {
        if !ids.contains(&c.invariant.as_str()) {
            ids.push(&c.invariant);
        }
    }
    for id in ids {
        out.push_str(&format!("  {id:<width$}"));
        for s in &r.scenarios {
            let verdict = r
                .cells
                .iter()
                .find(|c| c.invariant == id && &c.scenario == s)
                .map(|c| &c.verdict);
            let (mark, ansi) = match verdict {
                Some(Verdict::Pass(_)) => ("✓", "32"),
                Some(Verdict::Fail(_)) => ("✗", "31"),
                _ => ("·", "2"),
            };
            let pad = " ".repeat(s.chars().count().saturating_sub(1));
            if color {
                out.push_str(&format!("  \x1b[{ansi}m{mark}\x1b[0m{pad}"));
            } else {
                out.push_str(&format!("  {mark}{pad}"));
            }
        }
        out.push('\n');
    }
    for c in r
        .cells
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail(_)))
    {
        if let Verdict::Fail(reason) = &c.verdict {
            out.push_str(&format!(
                "\n✗ {} under {} ({}): {reason}",
                c.invariant, c.scenario, c.severity
            ));
        }
    }
    for w in &r.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    let verdict = if r.score.passed {
        "PASS"
    } else {
        "FAIL (a critical invariant failed)"
    };
    out.push_str(&format!("\n\nscore {:.1}/100: {verdict}\n", r.score.value));
    out
}
