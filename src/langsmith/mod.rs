//! LangSmith import (issue #13): a LangSmith run, or a project's root runs, as replay
//! session files. `client` speaks the REST API as the SDK does, `run` reads runs and orders
//! a trace, `session` maps a root run and its tool runs to a session, `llm` its llm runs to
//! a HAR tape. Everything is fetched and mapped before anything is written, so a LangSmith
//! error (401, 404, timeout, a missing field) leaves no half-written import behind.

mod client;
mod llm;
mod run;
mod session;

use std::path::{Path, PathBuf};

use serde_json::json;

pub use client::{Client, DEFAULT_ENDPOINT};
use run::{Run, SELECT, descendants};

use crate::config::replays::{Session, Source, SourceFilter, StatusFilter, date_range_ms};
use crate::tape::Har;

/// Why a LangSmith import failed, in words: who failed and how (LangSmith's answer, a
/// run it could not read, a file not written). Built from the words of the steps below.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LangsmithError(String);

impl From<String> for LangsmithError {
    fn from(why: String) -> LangsmithError {
        LangsmithError(why)
    }
}

impl From<&str> for LangsmithError {
    fn from(why: &str) -> LangsmithError {
        LangsmithError(why.to_string())
    }
}

/// One imported run: its session, its tape (when it had llm runs flakestorm can rebuild),
/// and notes on what was left out.
#[derive(Debug)]
pub struct Imported {
    pub session: Session,
    pub tape: Option<Har>,
    pub notes: Vec<String>,
}

/// The run `run_id` and the runs under it.
pub async fn import_run(client: &Client, run_id: &str) -> Result<Imported, LangsmithError> {
    let root = Run::parse(&client.run(run_id).await?)?;
    trace(client, &root).await.map_err(LangsmithError)
}

/// The root runs of project `name` that pass `filter`, each with its trace.
pub async fn import_project(
    client: &Client,
    name: &str,
    filter: &SourceFilter,
) -> Result<Vec<Imported>, LangsmithError> {
    let project = client.project_id(name).await?;
    let body = roots_query(&project, filter, crate::exchange::now_unix_ms())?;
    let roots = client.query(body).await?;
    let mut out = vec![];
    for r in &roots {
        let root = Run::parse(r)?;
        out.push(trace(client, &root).await?);
    }
    Ok(out)
}

/// The `POST /runs/query` body for a project's root runs that pass `filter` (`now_ms`: the
/// clock `date_range` counts back from).
fn roots_query(
    project: &str,
    filter: &SourceFilter,
    now_ms: u64,
) -> Result<serde_json::Value, String> {
    let mut body = json!({"session": [project], "is_root": true, "select": SELECT});
    if filter.status == StatusFilter::Error {
        body["error"] = json!(true);
    }
    if let Some(range) = &filter.date_range {
        let since = now_ms.saturating_sub(date_range_ms(range).map_err(|e| e.to_string())?);
        body["start_time"] = json!(crate::tape::write::iso8601(since));
    }
    if let Some(ms) = filter.min_latency_ms {
        // LangSmith's filter language counts latency in seconds.
        body["filter"] = json!(format!("gte(latency, {})", ms as f64 / 1000.0));
    }
    Ok(body)
}

/// `root`'s trace (`POST /runs/query` with `trace`), grouped under it by `parent_run_id`.
async fn trace(client: &Client, root: &Run) -> Result<Imported, String> {
    let trace_id = root.trace_id.clone().unwrap_or_else(|| root.id.clone());
    let found = client
        .query(json!({"trace": trace_id, "select": SELECT}))
        .await?;
    let runs: Vec<Run> = found.iter().map(Run::parse).collect::<Result<_, _>>()?;
    let calls = descendants(&root.id, &runs);
    let session = session::session(root, &calls)?;
    let mut tape: Option<Har> = None;
    let mut notes = vec![];
    for r in calls.iter().filter(|r| r.run_type == "llm") {
        match llm::entry(r)? {
            Ok(entry) => tape
                .get_or_insert_with(|| {
                    crate::tape::write::empty(Some(format!(
                        "LLM calls of LangSmith run {} rebuilt from its llm runs",
                        root.id
                    )))
                })
                .log
                .entries
                .push(entry),
            Err(note) => notes.push(note),
        }
    }
    Ok(Imported {
        session,
        tape,
        notes,
    })
}

/// Writes an import as the session file `file` (JSON) and, when it has one, its tape beside
/// it (`<stem>.har`, named by the session's `tape:`). Each file is written whole.
pub fn write(imported: &Imported, file: &Path) -> Result<PathBuf, LangsmithError> {
    let mut session = imported.session.clone();
    if let Some(har) = &imported.tape {
        let stem = file
            .file_stem()
            .map_or_else(|| session.id.clone(), |s| s.to_string_lossy().into_owned());
        let tape = file.with_file_name(format!("{stem}.har"));
        crate::tape::write::save(har, &tape).map_err(|e| format!("{}: {e}", tape.display()))?;
        session.tape = Some(PathBuf::from(format!("{stem}.har")));
    }
    let json =
        serde_json::to_string_pretty(&session).map_err(|e| LangsmithError(e.to_string()))? + "\n";
    crate::tape::write::save_bytes(file, json.as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file.to_path_buf())
}

/// Writes imports into `dir`, one `<session id>.json` each.
pub fn write_all(imports: &[Imported], dir: &Path) -> Result<Vec<PathBuf>, LangsmithError> {
    imports
        .iter()
        .map(|i| write(i, &dir.join(format!("{}.json", i.session.id))))
        .collect()
}

/// The sessions `replays.sources` imports for a replay run: every `langsmith_run`, and each
/// `langsmith` project with `auto_import: true`, written to `dir`. Nothing is written unless
/// every source imported.
pub async fn import_sources(
    sources: &[Source],
    dir: &Path,
) -> Result<SourcesImported, LangsmithError> {
    let wanted: Vec<&Source> = sources
        .iter()
        .filter(|s| match s {
            Source::Langsmith { auto_import, .. } => *auto_import,
            Source::LangsmithRun { .. } => true,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(SourcesImported::default());
    }
    let client = Client::from_env()?;
    let mut all = vec![];
    for s in wanted {
        match s {
            Source::Langsmith {
                project, filter, ..
            } => all.extend(
                import_project(&client, project, filter)
                    .await
                    .map_err(|e| format!("replays.sources: project `{project}`: {e}"))?,
            ),
            Source::LangsmithRun { run_id } => all.push(
                import_run(&client, run_id)
                    .await
                    .map_err(|e| format!("replays.sources: run {run_id}: {e}"))?,
            ),
        }
    }
    let files = write_all(&all, dir)?;
    let notes = all.into_iter().flat_map(|i| i.notes).collect();
    Ok(SourcesImported { files, notes })
}

/// What `import_sources` wrote, and its notes.
#[derive(Debug, Default)]
pub struct SourcesImported {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_filter_is_the_query_the_sdk_sends() {
        let filter = SourceFilter {
            status: StatusFilter::Error,
            date_range: Some("last_2_days".into()),
            min_latency_ms: Some(5500),
        };
        let body = roots_query("p1", &filter, 3 * 86_400_000).unwrap();
        assert_eq!(
            (&body["session"], &body["is_root"], &body["error"]),
            (&json!(["p1"]), &json!(true), &json!(true))
        );
        assert_eq!(body["start_time"], "1970-01-02T00:00:00.000Z");
        assert_eq!(body["filter"], "gte(latency, 5.5)");
        let all = SourceFilter {
            status: StatusFilter::All,
            ..SourceFilter::default()
        };
        let body = roots_query("p1", &all, 0).unwrap();
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["session", "is_root", "select"]);
    }
}
