//! `flakestorm report SOURCE --format F… [-o PATH]`: renders a saved report again, from its
//! JSON file or from a stored run's id (docs/reports.md). Each format is written on its
//! own: one that cannot be written is one line naming the file, the others are still
//! written, and the exit code is 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::history::{Stop, StoreArg, open};
use crate::config::ReportFormat;
use crate::run::Report;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReportArgs {
    #[command(subcommand)]
    command: Option<ReportCommand>,
    /// A JSON report a run wrote, or the id of a stored run (`flakestorm runs list`).
    #[arg(required = true)]
    source: Option<String>,
    /// Formats to write: html, junit, markdown, json (repeat, or separate with commas).
    #[arg(
        short,
        long,
        value_name = "FORMAT",
        value_delimiter = ',',
        required = true
    )]
    format: Vec<ReportFormat>,
    /// Where to write: a file for one format (`-` for stdout), a folder for several
    /// (default: beside the JSON report).
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    at: StoreArg,
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// Merge the shard reports of a run made with --shard K/N into its one report, judged
    /// again as a whole run (docs/scale.md).
    Merge(super::merge::MergeArgs),
}

pub async fn run(args: ReportArgs) -> ExitCode {
    if let Some(ReportCommand::Merge(m)) = args.command {
        return super::merge::run(m).await;
    }
    match render(&args) {
        Ok(code) => code,
        Err(Stop(code, why)) => {
            eprintln!("flakestorm: {why}");
            ExitCode::from(code)
        }
    }
}

fn render(args: &ReportArgs) -> Result<ExitCode, Stop> {
    let json = source(args)?;
    let text = crate::files::read_to_string(&json, crate::files::Limit::Report)
        .map_err(|e| Stop(2, e.to_string()))?;
    let report =
        Report::from_json(&text).map_err(|e| Stop(2, format!("{}: {e}", json.display())))?;
    let mut formats: Vec<ReportFormat> = vec![];
    for f in &args.format {
        if !formats.contains(f) {
            formats.push(*f);
        }
    }
    if args.output.as_deref() == Some(Path::new("-")) {
        let [format] = formats.as_slice() else {
            return Err(Stop(2, "-o -: stdout takes one format".into()));
        };
        let out = crate::report::render(&report, *format)
            .map_err(|e| Stop(1, format!("rendering {}: {e}", format.as_str())))?;
        print!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for &format in &formats {
        let path = destination(args.output.as_deref(), &json, format, formats.len());
        let written = crate::report::render(&report, format)
            .map_err(|e| format!("could not render {}: {e}", path.display()))
            .and_then(|out| write(&path, &out));
        match written {
            Ok(()) => println!("{}", path.display()),
            Err(why) => {
                eprintln!("flakestorm: {why}");
                failed = true;
            }
        }
    }
    Ok(ExitCode::from(u8::from(failed)))
}

/// The JSON report to render: the path named (`files` refuses what is not a regular
/// file, saying what it is), or a stored run's.
fn source(args: &ReportArgs) -> Result<PathBuf, Stop> {
    let path = PathBuf::from(&source_of(args));
    if path.exists() {
        return Ok(path);
    }
    if source_of(args).contains(['/', '\\']) || source_of(args).ends_with(".json") {
        return Err(Stop(2, format!("{}: no such file", path.display())));
    }
    let missing = || {
        Stop(
            2,
            format!(
                "{}: no such report file or stored run (`flakestorm runs list` shows the runs)",
                source_of(args)
            ),
        )
    };
    let store = open(&args.at)?.ok_or_else(missing)?;
    let run = store
        .get(source_of(args))
        .map_err(|e| Stop(1, e.to_string()))?
        .ok_or_else(missing)?;
    let Some(json) = run.artifacts.get("json") else {
        return Err(Stop(
            2,
            format!(
                "run {} has no report (it ended {})",
                source_of(args),
                run.status.as_str()
            ),
        ));
    };
    Ok(PathBuf::from(json))
}

/// Where `format` goes: `-o` as a file for one format, as a folder for several, else
/// beside the JSON report.
fn destination(out: Option<&Path>, json: &Path, format: ReportFormat, n: usize) -> PathBuf {
    let beside = crate::report::beside(json, format);
    match out {
        None => beside,
        Some(o) if n > 1 || o.is_dir() || o.to_string_lossy().ends_with('/') => {
            o.join(beside.file_name().unwrap_or_default())
        }
        Some(o) => o.to_path_buf(),
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            let dir = dir.display();
            format!("could not write {}: creating {dir}: {e}", path.display())
        })?;
    }
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

fn source_of(args: &ReportArgs) -> &str {
    args.source.as_deref().unwrap_or_default()
}
