//! `replay export --from-report`: each failed case of a saved report becomes a replay
//! session file (`<case>.json`: the case's prompt as `input`, its failed checks as
//! `expected_failure`, its contract by name) and, beside it, its tape (copied from the
//! `<report>.tapes/` folder `output.tapes` wrote), ready to commit as a regression test.
//! A failed case without a tape is named, and the others are still exported.

use std::path::{Path, PathBuf};

use super::tapes::{cases, tape_file};
use crate::config::replays::Session;

/// What an export wrote, and the failed cases it could not export (with why).
#[derive(Debug, Default)]
pub struct Exported {
    pub sessions: Vec<PathBuf>,
    pub skipped: Vec<String>,
}

/// Why nothing could be exported: the report could not be read, or `out` written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExportError(String);

/// Exports the failed cases of the report at `report` into `out`. The error: the report
/// could not be read, or `out` could not be written.
pub fn export(report: &Path, out: &Path) -> Result<Exported, ExportError> {
    export_failed(report, out).map_err(ExportError)
}

fn export_failed(report: &Path, out: &Path) -> Result<Exported, String> {
    let text = crate::files::read_to_string(report, crate::files::Limit::Report)
        .map_err(|e| e.to_string())?;
    let parsed =
        super::Report::from_json(&text).map_err(|e| format!("{}: {e}", report.display()))?;
    crate::files::create_private_dir(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut done = Exported::default();
    for c in cases(&parsed).into_iter().filter(|c| !c.failed.is_empty()) {
        let tape = tape_file(report, &c.id);
        if !tape.exists() {
            done.skipped.push(format!(
                "case {} ({}): no tape at {} (output.tapes: none, or the report was moved \
                 without its .tapes folder)",
                c.id,
                c.case.scenario,
                tape.display()
            ));
            continue;
        }
        // Read, not only copied: a tape that would not replay is not exported. The bytes
        // checked are the bytes written (the file is not opened a second time).
        let bytes = match crate::files::read(&tape, crate::files::Limit::Tape) {
            Ok(b) => b,
            Err(e) => {
                done.skipped.push(format!("case {}: {e}", c.id));
                continue;
            }
        };
        if let Err(e) = crate::tape::parse(&bytes) {
            done.skipped
                .push(format!("case {}: {}: {e}", c.id, tape.display()));
            continue;
        }
        let tape_name = format!("{}.har", c.id);
        let copy = out.join(&tape_name);
        // Exporting into the tapes folder itself: the tape is already where it goes.
        if !same_file(&tape, &copy) {
            crate::files::write_private(&copy, &bytes)
                .map_err(|e| format!("{}: {e}", copy.display()))?;
        }
        let session = Session {
            id: c.id.clone(),
            name: Some(format!("{} under {}", c.id, c.case.scenario)),
            source: Some(format!("flakestorm report {}", report.display())),
            input: c.case.prompt.clone(),
            tool_responses: vec![],
            expected_failure: Some(c.failed.join("; ")),
            contract: c.contract.clone(),
            context: None,
            tape: Some(PathBuf::from(tape_name)),
        };
        let file = out.join(format!("{}.json", c.id));
        let json = serde_json::to_string_pretty(&session).map_err(|e| e.to_string())?;
        crate::files::write_private(&file, (json + "\n").as_bytes())
            .map_err(|e| format!("{}: {e}", file.display()))?;
        done.sessions.push(file);
    }
    Ok(done)
}
/// Whether `a` and `b` are one file (`b` may not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
