//! Reports people read and CI systems consume (docs/reports.md): one module per format,
//! each rendering `view::Overview` (built from the JSON report's types). Rendering never
//! fails a run: the JSON report is written first, and a format that cannot be rendered or
//! written is one line on stderr.

pub mod certificate;
pub mod html;
pub mod junit;
pub mod markdown;
mod markdown_trials;
pub mod outcomes;
pub mod text;
mod trials_rows;
pub mod usage;
pub mod view;

use std::path::{Path, PathBuf};

use crate::config::ReportFormat;

/// Text as one Markdown table cell (escaped, `|` and line breaks made inert).
pub(crate) fn markdown_cell(s: &str) -> String {
    markdown::cell(s)
}
use crate::run::Report;

/// Renders `report` as `format` (`json`: the report itself, pretty-printed).
pub fn render(report: &Report, format: ReportFormat) -> Result<String, String> {
    match format {
        ReportFormat::Json => serde_json::to_string_pretty(report).map_err(|e| e.to_string()),
        ReportFormat::Html => html::render(&view::overview(report)),
        ReportFormat::Junit => Ok(junit::render(&view::overview(report))),
        ReportFormat::Markdown => Ok(markdown::render(&view::overview(report))),
    }
}

/// The file a format goes to beside the JSON report `json`: `ci.json` → `ci.html`,
/// `ci.junit.xml`, `ci.md`.
pub fn beside(json: &Path, format: ReportFormat) -> PathBuf {
    let ext = match format {
        ReportFormat::Json => return json.to_path_buf(),
        ReportFormat::Html => "html",
        ReportFormat::Junit => "junit.xml",
        ReportFormat::Markdown => "md",
    };
    json.with_extension(ext)
}

#[cfg(test)]
mod golden;

/// What `write_all` wrote, and the formats it could not.
#[derive(Debug, Default)]
pub struct Written {
    /// Each format written, with its file (the JSON report first).
    pub files: Vec<(ReportFormat, PathBuf)>,
    /// One line per format that could not be rendered or written, naming the file.
    pub failed: Vec<String>,
}

impl Written {
    /// Whether the JSON report itself was written (the run's record of truth).
    pub fn json(&self) -> Option<&Path> {
        self.files
            .iter()
            .find(|(f, _)| *f == ReportFormat::Json)
            .map(|(_, p)| p.as_path())
    }
}

/// Writes `report` as JSON to `json`, then as each other format in `formats` beside it.
/// A format that fails is listed in `failed`; the others are still written.
pub fn write_all(report: &Report, formats: &[ReportFormat], json: &Path) -> Written {
    let mut out = Written::default();
    if let Some(dir) = json.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = crate::files::create_private_dir(dir)
    {
        out.failed
            .push(format!("could not create {}: {e}", dir.display()));
        return out;
    }
    let mut all = vec![ReportFormat::Json];
    all.extend(formats.iter().filter(|f| **f != ReportFormat::Json));
    for format in all {
        let path = beside(json, format);
        match render(report, format) {
            // Private (0600): a report holds the agent's prompts, answers and traffic.
            Ok(text) => match crate::files::write_private(&path, text.as_bytes()) {
                Ok(()) => out.files.push((format, path)),
                Err(e) => out
                    .failed
                    .push(format!("could not write {}: {e}", path.display())),
            },
            Err(e) => out.failed.push(format!(
                "could not render the {} report {}: {e}",
                format.as_str(),
                path.display()
            )),
        }
    }
    out
}
