//! Reports people read and CI systems consume (docs/reports.md): one module per format,
//! each rendering `view::Overview` (built from the JSON report's types). Rendering never
//! fails a run: the JSON report is written first, and a format that cannot be rendered or
//! written is one line on stderr.

pub mod html;
pub mod junit;
pub mod markdown;
pub mod text;
pub mod view;

use std::path::{Path, PathBuf};

use crate::config::ReportFormat;
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
