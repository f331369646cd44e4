//! `flakestorm report merge SHARD... -c flakestorm.yaml`: the shard reports of a sharded
//! run (`--shard K/N`) made one report, judged again through the code a whole run ends
//! with (`run::merge`), written with the config's formats (or `-f`), exit code the merged
//! verdict's (docs/scale.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::args::ConfigArg;
use super::history::Stop;
use crate::config::{Overrides, ReportFormat};
use crate::run::Report;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard reports (`contract.shard-K-of-N.json`), one per shard.
    #[arg(required = true, value_name = "SHARD")]
    shards: Vec<PathBuf>,
    /// The config the shards ran with (its digest must be theirs).
    #[command(flatten)]
    config: ConfigArg,
    /// The merged JSON report (default: output.path/contract.json).
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Formats to write beside it (default: output.format).
    #[arg(short, long, value_name = "FORMAT", value_delimiter = ',')]
    format: Vec<ReportFormat>,
    /// The pass mark (default: scoring.min_score).
    #[arg(long, value_name = "SCORE")]
    min_score: Option<f64>,
    /// Merge the shards that are there when some are missing: the verdict is then not
    /// tested (INCOMPLETE), exit 2, never a pass.
    #[arg(long)]
    allow_partial: bool,
}

pub async fn run(args: MergeArgs) -> ExitCode {
    match merge(args).await {
        Ok(code) => code,
        Err(Stop(code, why)) => {
            eprintln!("flakestorm: {why}");
            ExitCode::from(code)
        }
    }
}

async fn merge(args: MergeArgs) -> Result<ExitCode, Stop> {
    // `load` has said what is wrong with the config.
    let loaded = super::load::load(&args.config, Overrides::default())
        .map_err(|_| Stop(2, "the config could not be loaded".into()))?;
    let mut shards = vec![];
    for file in &args.shards {
        let name = file.display().to_string();
        let text = crate::files::read_to_string(file, crate::files::Limit::Report)
            .map_err(|e| Stop(2, e.to_string()))?;
        let report = Report::from_json(&text).map_err(|e| Stop(2, format!("{name}: {e}")))?;
        shards.push((name, report));
    }
    let config = &loaded.config;
    let min_score = args.min_score.unwrap_or(config.scoring.min_score);
    if !(0.0..=100.0).contains(&min_score) {
        return Err(Stop(
            2,
            format!("--min-score {min_score}: expected 0 to 100"),
        ));
    }
    let report = crate::run::merge_reports(&loaded, min_score, shards, args.allow_partial)
        .await
        .map_err(|e| Stop(2, e))?;
    let json = args
        .output
        .clone()
        .unwrap_or_else(|| config.output.path.join("contract.json"));
    let formats = match args.format.is_empty() {
        true => config.output.format.clone(),
        false => args.format.clone(),
    };
    let written = crate::report::write_all(&report, &formats, &json);
    for why in &written.failed {
        eprintln!("flakestorm: {why}");
    }
    if written.json().is_none() {
        return Err(Stop(1, "the merged JSON report was not written".into()));
    }
    let show = super::runs::Show {
        quiet: false,
        json: false,
        score_only: false,
    };
    print!("{}", super::runs::shown(&report, show));
    for (_, p) in &written.files {
        println!("report: {}", p.display());
    }
    Ok(ExitCode::from(report.verdict().exit_code()))
}
