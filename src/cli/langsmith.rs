//! `replay run --from-langsmith RUN_ID` / `--from-langsmith-project NAME`, and the import of
//! `replays.sources` before a local `replay run` or `ci`. With `-o`, an import only writes
//! (a session file for a run, a folder of them for a project) and exits 0; without, it
//! writes to `<data_dir>/langsmith/` and replays what it imported. A LangSmith error is one
//! line and exit 2, with nothing written.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{ConfigArg, OpenProxyArg, ReportArgs, job, request, runs};
use crate::config::Loaded;
use crate::config::replays::{SessionEntry, SourceFilter, StatusFilter};
use crate::langsmith::{self as ls, Client};
use crate::run::RunKind;

/// Where the sessions are imported from.
#[derive(Debug, Args)]
pub struct FromLangsmith {
    /// Import LangSmith run RUN_ID and the runs under it as a session (and its LLM calls as
    /// a tape). With -o FILE (or a folder): only write the session there; without: replay it.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["sessions", "from_langsmith_project"])]
    from_langsmith: Option<String>,
    /// Import the root runs of LangSmith project NAME as sessions. With -o DIR: only write
    /// them to DIR; without: replay them.
    #[arg(long, value_name = "NAME", conflicts_with = "sessions")]
    from_langsmith_project: Option<String>,
    /// Which root runs of the project: `error` (default) or `all`.
    #[arg(long, value_name = "error|all", value_parser = status_arg, requires = "from_langsmith_project")]
    filter_status: Option<StatusFilter>,
}

impl FromLangsmith {
    pub fn given(&self) -> bool {
        self.from_langsmith.is_some() || self.from_langsmith_project.is_some()
    }
}

fn status_arg(s: &str) -> Result<StatusFilter, String> {
    match s {
        "error" => Ok(StatusFilter::Error),
        "all" => Ok(StatusFilter::All),
        _ => Err(format!("`{s}`: expected error or all")),
    }
}

/// Imports, then writes only (`-o`) or replays.
pub async fn replay(
    from: Box<FromLangsmith>,
    config: &ConfigArg,
    open: OpenProxyArg,
    mut report: ReportArgs,
    show: runs::Show,
) -> ExitCode {
    if report.server.is_some() {
        eprintln!("flakestorm: --from-langsmith imports here; it cannot be combined with --server");
        return ExitCode::from(2);
    }
    // `-o` names where the import goes: the run's report then is not written at all.
    if let Some(out) = report.output.take() {
        return match fetch(&from).await.and_then(|i| write(&from, &i, &out)) {
            Ok(files) => {
                for f in files {
                    println!("session: {}", f.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("flakestorm: {e}");
                ExitCode::from(2)
            }
        };
    }
    let req = request(RunKind::Replay, false, None);
    job(config, open, |mut loaded| async move {
        let dir = loaded.config.data_dir.join("langsmith");
        let written = |i: Vec<ls::Imported>| ls::write_all(&i, &dir).map_err(|e| e.to_string());
        let files = match fetch(&from).await.and_then(written) {
            Ok(files) if files.is_empty() => {
                eprintln!("flakestorm: LangSmith import: no run matched; nothing to replay");
                return Ok(ExitCode::from(2));
            }
            Ok(files) => files,
            Err(e) => {
                eprintln!("flakestorm: {e}");
                return Ok(ExitCode::from(2));
            }
        };
        loaded.config.replays.sessions = files.into_iter().map(SessionEntry::File).collect();
        runs::run(loaded, req, report, show).await
    })
    .await
}

/// Everything the import needs, fetched and mapped (notes printed).
async fn fetch(from: &FromLangsmith) -> Result<Vec<ls::Imported>, String> {
    let client = Client::from_env().map_err(|e| e.to_string())?;
    let imported = if let Some(id) = &from.from_langsmith {
        vec![
            ls::import_run(&client, id)
                .await
                .map_err(|e| format!("LangSmith run {id}: {e}"))?,
        ]
    } else {
        let name = from.from_langsmith_project.as_deref().unwrap_or_default();
        let filter = SourceFilter {
            status: from.filter_status.unwrap_or_default(),
            ..SourceFilter::default()
        };
        ls::import_project(&client, name, &filter)
            .await
            .map_err(|e| format!("LangSmith project `{name}`: {e}"))?
    };
    for note in imported.iter().flat_map(|i| &i.notes) {
        eprintln!("flakestorm: note: {note}");
    }
    Ok(imported)
}

/// `-o`: a run's session at FILE (in it as `langsmith-<run id>.json` when FILE is a folder
/// or ends with `/`), a project's sessions in DIR.
fn write(
    from: &FromLangsmith,
    imported: &[ls::Imported],
    out: &std::path::Path,
) -> Result<Vec<PathBuf>, String> {
    let folder = out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/');
    match (&from.from_langsmith, imported) {
        (Some(_), [one]) if !folder => Ok(vec![ls::write(one, out).map_err(|e| e.to_string())?]),
        _ => {
            if imported.is_empty() {
                eprintln!("flakestorm: LangSmith import: no run matched; nothing written");
            }
            ls::write_all(imported, out).map_err(|e| e.to_string())
        }
    }
}

/// `replays.sources` imported into `<data_dir>/langsmith/` and added to the sessions; an
/// error is printed and is exit 2.
pub async fn sources(mut loaded: Loaded) -> Result<Loaded, ExitCode> {
    let dir = loaded.config.data_dir.join("langsmith");
    match ls::import_sources(&loaded.config.replays.sources, &dir).await {
        Ok(done) => {
            for note in &done.notes {
                eprintln!("flakestorm: note: {note}");
            }
            let entries = done.files.into_iter().map(SessionEntry::File);
            loaded.config.replays.sessions.extend(entries);
            Ok(loaded)
        }
        Err(e) => {
            eprintln!("flakestorm: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// A `--server` run does not import `replays.sources`: said, not silently skipped.
pub fn warn_remote(loaded: &Loaded) {
    if !loaded.config.replays.sources.is_empty() {
        eprintln!(
            "flakestorm: warning: replays.sources are imported by local runs only; the \
             daemon replays replays.sessions (import with `replay run --from-langsmith… -o`)"
        );
    }
}
