//! `replays:` (config.md): the recorded incidents a replay run plays back — sessions inline
//! or in their own files — what happens to an agent's call no session answers
//! (`on_miss`), which JSON body fields a tape's request key leaves out
//! (`match.ignore_json_fields`), and where sessions are imported from (`sources`). Session
//! files are read when a replay run starts (`session_file::read_session`), so one bad file fails its own
//! session, named with its field and line, and the others still run.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ConfigError;
use super::de::section;

/// A checked `replays:` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplaysSpec {
    pub sessions: Vec<SessionEntry>,
    pub on_miss: OnMiss,
    /// Whether a tape answers the agent's LLM calls (`tape`) or they go to the live model
    /// (`live`: a new model or prompt meets the recorded tools).
    pub llm: LlmSource,
    /// Request-body fields left out of a tape's request key (SDKs add `user`,
    /// `stream_options`, `metadata` that differ run to run).
    pub ignore_json_fields: Vec<String>,
    pub sources: Vec<Source>,
    /// The config file's folder: an inline session's `contract:` path is relative to it
    /// (a session file's, to that file). Empty without a file: the working directory.
    pub base: PathBuf,
    /// Set when the config was sent to a daemon (`load_submitted`): the only variables a
    /// contract file named by a session may expand, as the config itself could.
    pub submitted_vars: Option<std::collections::BTreeMap<String, String>>,
}

/// A session written in the config, or the file that holds one (relative to the config
/// file's folder once loaded).
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEntry {
    Inline(Box<Session>),
    File(PathBuf),
}

/// Where a replay case's LLM calls are answered from, when its session has a tape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmSource {
    /// The tape, like every other call: the whole agent run is deterministic.
    #[default]
    Tape,
    /// The live model: LLM calls (and embeddings calls) skip the tape.
    Live,
}

/// What a replay case does with a call no session answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnMiss {
    /// Forward it to the real service.
    #[default]
    Live,
    /// Answer 599 naming the request.
    Error,
    /// The case fails and the report lists every miss.
    Strict,
}

/// One recorded incident (v2's session format, plus `tape`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Where it came from (`langsmith`, `production`, …): shown, not interpreted.
    #[serde(default)]
    pub source: Option<String>,
    /// The prompt the agent got in the incident.
    pub input: String,
    /// The tools' answers in the incident, in call order per tool.
    #[serde(default)]
    pub tool_responses: Vec<ToolResponse>,
    /// What went wrong in the incident, in words: shown in the report.
    #[serde(default)]
    pub expected_failure: Option<String>,
    /// The contract the replayed answer is checked with: a contract name in the config, or
    /// a file path (relative to the session's file).
    #[serde(default)]
    pub contract: Option<String>,
    /// Extra context of the incident (conversation, user): kept in the report.
    #[serde(default)]
    pub context: Option<Value>,
    /// A recorded HAR tape that answers the calls `tool_responses` do not, by request key
    /// (relative to the session file; inline sessions: to the config file's folder).
    #[serde(default)]
    pub tape: Option<PathBuf>,
}

/// A tool's recorded answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolResponse {
    pub tool: String,
    /// The HTTP status; 0 = the connection was refused.
    #[serde(default = "ok")]
    pub status: u16,
    /// The body: a string as is, anything else as JSON; null = empty.
    #[serde(default)]
    pub response: Value,
    #[serde(default)]
    pub latency_ms: u64,
}

fn ok() -> u16 {
    200
}

/// Where sessions are imported from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// A LangSmith project's runs, filtered.
    Langsmith {
        project: String,
        #[serde(default)]
        filter: SourceFilter,
        #[serde(default)]
        auto_import: bool,
    },
    /// One LangSmith run.
    LangsmithRun { run_id: String },
}

/// Which of a project's root runs are imported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFilter {
    /// Default `error`: incidents.
    #[serde(default)]
    pub status: StatusFilter,
    /// `last_N_days` or `last_N_hours`: runs started since then.
    #[serde(default)]
    pub date_range: Option<String>,
    /// Runs that took at least this long.
    #[serde(default)]
    pub min_latency_ms: Option<u64>,
}

/// `filter.status` / `--filter-status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusFilter {
    /// Root runs that ended in an error.
    #[default]
    Error,
    /// Every root run.
    All,
}

/// A `date_range` that is not `last_N_days` or `last_N_hours` (N > 0).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{range}` is not a date range: expected last_N_days or last_N_hours")]
pub struct DateRangeError {
    pub range: String,
}

/// A `date_range` (`last_7_days`, `last_12_hours`) as milliseconds back from now.
pub fn date_range_ms(range: &str) -> Result<u64, DateRangeError> {
    let bad = || DateRangeError {
        range: range.to_string(),
    };
    let rest = range.strip_prefix("last_").ok_or_else(bad)?;
    let (n, unit) = rest.split_once('_').ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    let unit_ms = match unit {
        "day" | "days" => 86_400_000,
        "hour" | "hours" => 3_600_000,
        _ => return Err(bad()),
    };
    match n.checked_mul(unit_ms) {
        Some(ms) if n > 0 => Ok(ms),
        _ => Err(bad()),
    }
}

/// The longest a recorded tool answer may be held (a session can say 30 s; more is a
/// mistake, not an incident).
const MAX_LATENCY_MS: u64 = 600_000;

/// `replays:`. File paths stay as written; `load` makes them relative to the config file.
pub(super) fn replays_section(v: Value, errors: &mut Vec<ConfigError>) -> ReplaysSpec {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        #[serde(default)]
        on_miss: OnMiss,
        #[serde(default)]
        llm: LlmSource,
        #[serde(default, rename = "match")]
        matching: Option<Match>,
        #[serde(default)]
        sources: Vec<Source>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Match {
        #[serde(default)]
        ignore_json_fields: Vec<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct FileRef {
        file: PathBuf,
    }
    // Sessions are checked one by one, so every bad one is named along with the rest.
    let mut v = v;
    let sessions = match v.as_object_mut().and_then(|o| o.remove("sessions")) {
        None => vec![],
        Some(Value::Array(list)) => list,
        Some(other) => {
            let msg = format!("must be a list of sessions, not {other}");
            errors.push(ConfigError::new("replays.sessions", msg));
            vec![]
        }
    };
    let mut out = ReplaysSpec::default();
    if let Some(raw) = section::<Raw>(v, "replays", errors) {
        out.on_miss = raw.on_miss;
        out.llm = raw.llm;
        out.ignore_json_fields = raw
            .matching
            .map(|m| m.ignore_json_fields)
            .unwrap_or_default();
        out.sources = raw.sources;
    }
    let mut ids: Vec<String> = vec![];
    for (i, s) in sessions.into_iter().enumerate() {
        let at = format!("replays.sessions[{i}]");
        let is_file = s.as_object().is_some_and(|o| o.contains_key("file"));
        if is_file {
            if let Some(f) = section::<FileRef>(s, &at, errors) {
                out.sessions.push(SessionEntry::File(f.file));
            }
            continue;
        }
        let Some(session) = section::<Session>(s, &at, errors) else {
            continue;
        };
        check_session(&session, &at, errors);
        if ids.contains(&session.id) {
            errors.push(ConfigError::new(
                format!("{at}.id"),
                format!(
                    "`{}` names another session too; ids must be unique",
                    session.id
                ),
            ));
        }
        ids.push(session.id.clone());
        out.sessions.push(SessionEntry::Inline(Box::new(session)));
    }
    out
}

/// `replays.sources`: what serde cannot check (date ranges, empty names), and a warning for
/// a project source that is never imported (`auto_import: false`).
pub(super) fn check_sources(
    spec: &ReplaysSpec,
    warnings: &mut Vec<String>,
    errors: &mut Vec<ConfigError>,
) {
    for (i, s) in spec.sources.iter().enumerate() {
        let at = format!("replays.sources[{i}]");
        match s {
            Source::Langsmith {
                project,
                filter,
                auto_import,
            } => {
                if project.trim().is_empty() {
                    errors.push(ConfigError::new(
                        format!("{at}.project"),
                        "must not be empty",
                    ));
                }
                if let Some(Err(e)) = filter.date_range.as_deref().map(date_range_ms) {
                    let at = format!("{at}.filter.date_range");
                    errors.push(ConfigError::new(at, e.to_string()));
                }
                if !auto_import {
                    warnings.push(format!(
                        "{at}: LangSmith project `{project}` is not imported by replay runs \
                         (auto_import: false); import it with `flakestorm replay run \
                         --from-langsmith-project {project} -o DIR`"
                    ));
                }
            }
            Source::LangsmithRun { run_id } => {
                let uuid =
                    !run_id.is_empty() && run_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
                if !uuid {
                    errors.push(ConfigError::new(
                        format!("{at}.run_id"),
                        format!("`{run_id}` is not a LangSmith run id (a UUID)"),
                    ));
                }
            }
        }
    }
}

/// What serde cannot say about a session: empty names, statuses and latencies out of range.
pub fn check_session(s: &Session, at: &str, errors: &mut Vec<ConfigError>) {
    if s.id.trim().is_empty() {
        errors.push(ConfigError::new(format!("{at}.id"), "must not be empty"));
    }
    for (i, r) in s.tool_responses.iter().enumerate() {
        let here = format!("{at}.tool_responses[{i}]");
        if r.tool.trim().is_empty() {
            errors.push(ConfigError::new(
                format!("{here}.tool"),
                "must not be empty",
            ));
        }
        if r.status != 0 && !(100..=599).contains(&r.status) {
            errors.push(ConfigError::new(
                format!("{here}.status"),
                format!(
                    "{} is not an HTTP status (100–599, or 0 for a refused connection)",
                    r.status
                ),
            ));
        }
        if r.latency_ms > MAX_LATENCY_MS {
            errors.push(ConfigError::new(
                format!("{here}.latency_ms"),
                format!("{} is over {MAX_LATENCY_MS} (10 minutes)", r.latency_ms),
            ));
        }
    }
}

#[cfg(test)]
#[path = "replays_tests.rs"]
mod tests;
