//! `flakestorm report merge SHARD... [-c flakestorm.yaml]`: the shard reports of a sharded
//! run (`--shard K/N`) made one report, judged again through the code a whole run ends
//! with (`run::merge`) with the config the shards carry (`config::carried`, trusted no
//! further than the working folder) or `-c`'s, written with the config's formats (or
//! `-f`), exit code the merged verdict's (docs/scale.md). The merged run is recorded in
//! the run store of the config's `data_dir`, as a whole CLI run is, with how many shards
//! it was made of (`--no-store`: not recorded).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::args::ConfigArg;
use super::history::Stop;
use crate::config::{Overrides, ReportFormat};
use crate::run::Report;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard reports (`contract.shard-K-of-N.json`), or folders of them (every
    /// `*.shard-K-of-N.json` inside: a volume the shards wrote to).
    #[arg(required = true, value_name = "SHARD|DIR")]
    shards: Vec<PathBuf>,
    /// The config the shards ran with (its digest must be theirs). Without it, the config
    /// each shard report carries (credentials out); shards too old to carry one: this,
    /// else ./flakestorm.yaml.
    #[command(flatten)]
    config: ConfigArg,
    /// The merged JSON report (default: <contract|chaos|ci>.json beside the shards; with
    /// -c, in the config's output.path).
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
    /// Do not record the merged run in the run store (data_dir/flakestorm.db).
    #[arg(long)]
    no_store: bool,
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
    let mut shards = vec![];
    for file in &files(&args.shards)? {
        let name = file.display().to_string();
        let text = crate::files::read_to_string(file, crate::files::Limit::Report)
            .map_err(|e| Stop(2, e.to_string()))?;
        let report = Report::from_json(&text).map_err(|e| Stop(2, format!("{name}: {e}")))?;
        shards.push((name, report));
    }
    let (loaded, is_carried) = config_of(&args.config, &shards)?;
    let config = &loaded.config;
    let min_score = args.min_score.unwrap_or(config.scoring.min_score);
    if !(0.0..=100.0).contains(&min_score) {
        return Err(Stop(
            2,
            format!("--min-score {min_score}: expected 0 to 100"),
        ));
    }
    // Refused before anything is written.
    if is_carried && !args.no_store && crate::config::escapes(&config.data_dir) {
        return Err(Stop(
            2,
            format!(
                "data_dir `{}`, where the merged run would be recorded, is {}, or give --no-store",
                config.data_dir.display(),
                crate::config::OUTSIDE
            ),
        ));
    }
    let report = crate::run::merge_reports(&loaded, min_score, shards, args.allow_partial)
        .await
        .map_err(|e| Stop(2, e.to_string()))?;
    // A report names no place to write to: merged without a config file, beside the shards.
    let folder = match is_carried {
        true => beside(&args.shards),
        false => config.output.path.clone(),
    };
    let json = args
        .output
        .clone()
        .unwrap_or_else(|| folder.join(report.kind().report_file()));
    let formats = match args.format.is_empty() {
        true => config.output.format.clone(),
        false => args.format.clone(),
    };
    let ended = crate::session::write(report, formats, &json, None).await;
    ended.told(crate::session::Show::default(), None).print();
    let Some(written) = ended.written.json() else {
        return Err(Stop(1, "the merged JSON report was not written".into()));
    };
    if !args.no_store {
        record(config, &ended.report, written).await?;
    }
    Ok(ExitCode::from(ended.report.verdict().exit_code()))
}

/// The config to merge with: `-c`'s file whatever the shards carry; else the one they carry
/// (true), loaded as anyone's file; else, for shards too old to carry one,
/// `./flakestorm.yaml` or the defaults.
fn config_of(
    arg: &ConfigArg,
    shards: &[(String, Report)],
) -> Result<(crate::config::Loaded, bool), Stop> {
    let carried = match arg.config {
        Some(_) => None,
        None => carried(shards)?,
    };
    let Some((file, config)) = carried else {
        // `load` has said what is wrong with the config.
        let loaded = super::load::load(arg, Overrides::default())
            .map_err(|_| Stop(2, "the config could not be loaded".into()))?;
        return Ok((loaded, false));
    };
    let digest = shards[0].1.config_digest().map(str::to_string);
    let source = format!("the config carried by {file}");
    let loaded = crate::config::load_carried(config, &source, digest).map_err(|e| {
        eprint!("flakestorm: {e}");
        Stop(2, "the shards' config could not be loaded".into())
    })?;
    Ok((loaded, true))
}

/// Records the merged run (`report`, written at `json`) in the store of `config`'s
/// data_dir, as `runs import` would; says its id.
async fn record(
    config: &crate::config::Config,
    report: &Report,
    json: &std::path::Path,
) -> Result<(), Stop> {
    let failed = |e: &dyn std::fmt::Display| Stop(1, format!("recording the merged run: {e}"));
    crate::store::check_private(&config.data_dir, config.control.allow_shared_data_dir)
        .map_err(|e| failed(&e))?;
    let store = crate::store::Store::open(&config.data_dir).map_err(|e| failed(&e))?;
    let text =
        crate::files::read_to_string(json, crate::files::Limit::Report).map_err(|e| failed(&e))?;
    let id = crate::store::import(&store, report, text)
        .await
        .map_err(|e| failed(&e))?;
    eprintln!(
        "flakestorm: recorded as run {id} in {}",
        store.path().display()
    );
    Ok(())
}

/// The config the shards carry (`config::carried`) and the first shard carrying it: the
/// same in every shard but for what each pod has its own (`config::comparable_carried`),
/// else which two differ and where; none when no shard carries one (written before shards
/// did).
fn carried(shards: &[(String, Report)]) -> Result<Option<(&str, &serde_json::Value)>, Stop> {
    let mut first: Option<(&str, &serde_json::Value, Option<&str>)> = None;
    let mut without = None;
    for (file, report) in shards {
        let digest = report.config_digest();
        // Not a shard's report: the merge says so.
        let Some(carried) = crate::run::carried_config(report) else {
            continue;
        };
        let Some(config) = carried else {
            without = Some(file.as_str());
            continue;
        };
        let Some((first_file, first_config, first_digest)) = first else {
            first = Some((file, config, digest));
            continue;
        };
        let (ours, theirs) = (
            crate::config::comparable_carried(first_config),
            crate::config::comparable_carried(config),
        );
        if ours == theirs {
            continue;
        }
        // The digest says "another file"; else the file was the same and a variable or a
        // flag set something else.
        let why = match digest == first_digest {
            false => format!(
                "`config_digest` is {} there, {} in {first_file}",
                digest.unwrap_or("none"),
                first_digest.unwrap_or("none")
            ),
            true => format!(
                "the same config file with other settings from FLAKESTORM_* variables or flags \
                 (first at `{}`)",
                differs_at(&ours, &theirs)
            ),
        };
        return Err(Stop(
            2,
            format!("{file} is not a shard of the same run as {first_file}: {why}"),
        ));
    }
    match (first, without) {
        (Some((file, config, _)), None) => Ok(Some((file, config))),
        (Some((file, _, _)), Some(old)) => Err(Stop(
            2,
            format!(
                "{old} carries no config (written by an older flakestorm) but {file} does: \
                 merge them with the config file they ran with (-c FILE)"
            ),
        )),
        (None, _) => Ok(None),
    }
}

/// The first path (`agent.env.NO_PROXY`) where `a` and `b` differ.
fn differs_at(a: &serde_json::Value, b: &serde_json::Value) -> String {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys());
            for k in keys {
                if x.get(k) != y.get(k) {
                    let below = match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => differs_at(p, q),
                        _ => String::new(),
                    };
                    return match below.strip_prefix('[') {
                        _ if below.is_empty() => k.clone(),
                        Some(_) => format!("{k}{below}"),
                        None => format!("{k}.{below}"),
                    };
                }
            }
            String::new()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .position(|(p, q)| p != q)
            .map(|i| match differs_at(&x[i], &y[i]) {
                below if below.is_empty() => format!("[{i}]"),
                below if below.starts_with('[') => format!("[{i}]{below}"),
                below => format!("[{i}].{below}"),
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Where a merge without a config file writes: the first folder named, else the folder of
/// the first shard report.
fn beside(named: &[PathBuf]) -> PathBuf {
    let first = named.iter().find(|p| p.is_dir()).or(named.first());
    match first {
        Some(p) if p.is_dir() => p.clone(),
        Some(p) => p.parent().map(PathBuf::from).unwrap_or_default(),
        None => PathBuf::new(),
    }
}

/// The shard reports named: files as they are, folders as the shard reports in them.
fn files(named: &[PathBuf]) -> Result<Vec<PathBuf>, Stop> {
    let mut out = vec![];
    for path in named {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let listed =
            std::fs::read_dir(path).map_err(|e| Stop(2, format!("{}: {e}", path.display())))?;
        let mut found: Vec<PathBuf> = listed
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_shard_report)
            })
            .collect();
        if found.is_empty() {
            return Err(Stop(
                2,
                format!(
                    "{}: no shard reports (*.shard-K-of-N.json) in it",
                    path.display()
                ),
            ));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// `contract.shard-2-of-5.json`, as `--shard` names its report.
fn is_shard_report(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".json") else {
        return false;
    };
    let Some((_, part)) = stem.rsplit_once(".shard-") else {
        return false;
    };
    let Some((k, n)) = part.split_once("-of-") else {
        return false;
    };
    k.parse::<u32>().is_ok() && n.parse::<u32>().is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn shard_reports_are_known_by_their_names() {
        for (name, is) in [
            ("contract.shard-2-of-5.json", true),
            ("contract.shard-12-of-50.json", true),
            ("contract.json", false),
            ("contract.shard-2-of-5.agent.log", false),
            ("contract.shard-x-of-5.json", false),
            ("merged.json", false),
        ] {
            assert_eq!(super::is_shard_report(name), is, "{name}");
        }
    }
}
