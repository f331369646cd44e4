//! Outcome classes in JUnit (docs/reports.md): a case's class as its `outcome` property and
//! at the head of its failure message (`[fabricated] …`), with the reason and the evidence
//! in the failure's body; a contract cell's classes as one `outcome.<class>` property per
//! class, counting its cases (every trial).

use std::fmt::Write;

use crate::report::outcomes;
use crate::run::{CaseOutcome, CellResult};

/// `[fabricated] ` for a case with a class; empty without.
pub(super) fn tag(o: Option<&CaseOutcome>) -> String {
    o.map(|o| format!("[{}] ", o.class)).unwrap_or_default()
}

/// A case's `outcome` property.
pub(super) fn property(o: Option<&CaseOutcome>) -> Vec<(String, String)> {
    o.map(|o| ("outcome".to_string(), o.class.to_string()))
        .into_iter()
        .collect()
}

/// A cell's classes, one property each (`outcome.recovered` = 3).
pub(super) fn cell_properties(cell: &CellResult) -> Vec<(String, String)> {
    cell.outcomes
        .iter()
        .map(|(class, n)| (format!("outcome.{class}"), n.to_string()))
        .collect()
}

/// The outcome's lines in a failure body: the class and why, then each piece of evidence,
/// each line starting with `indent`.
pub(super) fn body(out: &mut String, o: &CaseOutcome, indent: &str) {
    let _ = writeln!(out, "{indent}outcome {}: {}", o.class, o.reason);
    for e in &o.evidence {
        let _ = writeln!(
            out,
            "{indent}  - {}",
            outcomes::plain(&outcomes::evidence(e))
        );
    }
}
