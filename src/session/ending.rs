//! A run's end as its user meets it, one way for every run that ends in a report (the CLI's
//! run commands, `--server`, `report merge`, the daemon's runs and the demo): the report
//! written in its formats beside its JSON with its tapes (`write`), then what is printed
//! (`Ended::told`): the summary or the JSON report, the files written, the tapes, and what
//! could not be written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::shown::{Show, shown};
use crate::config::{ReportFormat, Tapes};
use crate::journal::Journal;
use crate::report::Written;
use crate::run::Report;
use crate::store::StoreError;

/// A finished run: its report, where it was written, and whether the store recorded it.
pub struct Ended {
    pub report: Report,
    /// The JSON report's path (the other formats are beside it).
    pub json: PathBuf,
    pub written: Written,
    /// The cases whose tapes were written, and the tapes that could not be.
    pub taped: Vec<PathBuf>,
    pub untaped: Vec<String>,
    /// The store's answer when the session recorded the run (`Ok` when nothing recorded).
    pub stored: Result<(), StoreError>,
}

/// What a run's end prints: stdout's text, and stderr's lines.
#[derive(Debug, Default)]
pub struct Told {
    pub out: String,
    pub err: Vec<String>,
}

impl Told {
    /// Printed: stdout's text, then each of stderr's lines after `flakestorm: `.
    pub fn print(&self) {
        print!("{}", self.out);
        for line in &self.err {
            eprintln!("flakestorm: {line}");
        }
    }
}

impl Ended {
    /// What the run's user is told: the report as `show` says (the JSON report itself with
    /// `--json`), what could not be written, and with the whole summary where the run ran
    /// (`from`, when elsewhere: `run ID on URL`), the files written and the tapes.
    pub fn told(&self, show: Show, from: Option<&str>) -> Told {
        // Rendering never fails a run; only a JSON report that could not be written does,
        // which its caller says.
        let mut err: Vec<String> = self
            .written
            .failed
            .iter()
            .chain(&self.untaped)
            .cloned()
            .collect();
        let mut out = match show.json {
            true => match serde_json::to_string_pretty(&self.report) {
                Ok(json) => json + "\n",
                Err(e) => {
                    err.push(format!("the report as JSON on stdout: {e}"));
                    String::new()
                }
            },
            false => shown(&self.report, show),
        };
        if show.summary() {
            if let Some(from) = from {
                let _ = writeln!(out, "{from}");
            }
            for (_, p) in &self.written.files {
                let _ = writeln!(out, "report: {}", p.display());
            }
            if !self.taped.is_empty() {
                let dir = crate::run::tapes::tapes_dir(&self.json);
                let _ = writeln!(
                    out,
                    "tapes: {} case(s) in {}",
                    self.taped.len(),
                    dir.display()
                );
            }
        }
        Told { out, err }
    }
}

/// The report written in `formats` beside `json`, and its tapes (`tapes`: which, cut from
/// the journal's bodies); off the async threads, whose proxy traffic rendering and writing
/// a large report would stall. Nothing is recorded: `stored` is `Ok`.
pub async fn write(
    report: Report,
    formats: Vec<ReportFormat>,
    json: &Path,
    tapes: Option<(Tapes, Journal)>,
) -> Ended {
    let report = Arc::new(report);
    let (shared, path) = (report.clone(), json.to_path_buf());
    let written = tokio::task::spawn_blocking(move || {
        let written = crate::report::write_all(&shared, &formats, &path);
        let taped = match tapes {
            Some((tapes, journal)) => crate::run::tapes::write(&shared, &journal, tapes, &path),
            None => (vec![], vec![]),
        };
        (written, taped)
    });
    let (written, (taped, untaped)) = match written.await {
        Ok(w) => w,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Dropped unrun: the runtime is shutting down.
        Err(_) => {
            let why = format!("{}: not written, flakestorm was stopping", json.display());
            let written = Written {
                files: vec![],
                failed: vec![why],
            };
            (written, (vec![], vec![]))
        }
    };
    // The task, and its handle on the report, are gone once it is joined.
    let report = Arc::try_unwrap(report).unwrap_or_else(|r| (*r).clone());
    Ended {
        report,
        json: json.to_path_buf(),
        written,
        taped,
        untaped,
        stored: Ok(()),
    }
}
