//! What a replay run needs before a session can run: the session itself (inline, or read
//! from its file) and the invariants it is judged with (its `contract:` by name in the
//! config, else a config file at that path relative to the session file; without one, the
//! top-level `invariants:`). Either failing fails that session alone, with the reason.

use std::path::{Path, PathBuf};

use crate::checks::Invariant;
use crate::checks::spec::Check;
use crate::config::replays::{Session, SessionEntry};
use crate::config::session_file::read_session;
use crate::config::{Config, ContractSpec, Overrides, Submitted, When};

/// One invariant a session is judged with.
pub(super) struct Judged {
    pub id: String,
    pub when: When,
    pub invariant: Invariant,
    /// Its spec's check (the embeddings measure reads it).
    pub check: Check,
}

/// A session ready to run, or why it cannot.
pub(super) struct Ready {
    pub id: String,
    pub file: Option<PathBuf>,
    pub session: Result<Session, String>,
}

/// Reads each entry: an inline session as it is, a file with `read_session` (its error
/// names the file, the field and the line).
pub(super) fn sessions(entries: &[SessionEntry]) -> Vec<Ready> {
    entries
        .iter()
        .map(|e| match e {
            SessionEntry::Inline(s) => Ready {
                id: s.id.clone(),
                file: None,
                session: Ok((**s).clone()),
            },
            SessionEntry::File(path) => {
                let session = read_session(path).map_err(|e| e.to_string());
                let id = match &session {
                    Ok(s) => s.id.clone(),
                    Err(_) => path.file_stem().map_or_else(
                        || path.display().to_string(),
                        |s| s.to_string_lossy().into(),
                    ),
                };
                Ready {
                    id,
                    file: Some(path.clone()),
                    session,
                }
            }
        })
        .collect()
}

/// The session files of `path`: the file itself, or a folder's `.yaml`, `.yml` and
/// `.json` files in name order (`replay run FILE|DIR`). Each is opened once here, so a
/// FIFO or device among them stops the command before the run starts (`files::open`).
pub fn session_files(path: &Path) -> Result<Vec<SessionEntry>, String> {
    if !path.is_dir() {
        if !path.exists() {
            return Err(format!("{}: no such file or folder", path.display()));
        }
        crate::files::open(path).map_err(|e| e.to_string())?;
        return Ok(vec![SessionEntry::File(path.to_path_buf())]);
    }
    let read = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut files: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.is_dir()
                && p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    for file in &files {
        crate::files::open(file).map_err(|e| e.to_string())?;
    }
    if files.is_empty() {
        return Err(format!(
            "{}: no session files (.yaml, .yml, .json) in this folder",
            path.display()
        ));
    }
    Ok(files.into_iter().map(SessionEntry::File).collect())
}

/// The session's tape, read and indexed by request key: its `tape:` path is relative to the
/// session file (inline sessions: the config file's folder). A tape that cannot be read
/// fails the session, naming the file, the field and the line.
pub(super) fn tape(
    session: &Session,
    file: Option<&Path>,
    config: &Config,
) -> Result<Option<std::sync::Arc<crate::tape::TapeTable>>, String> {
    let Some(tape) = &session.tape else {
        return Ok(None);
    };
    let base = file
        .and_then(Path::parent)
        .unwrap_or(config.replays.base.as_path());
    let har = crate::tape::read(&base.join(tape)).map_err(|e| format!("tape: {e}"))?;
    let table = crate::tape::TapeTable::new(&har, &config.replays.ignore_json_fields);
    Ok(Some(std::sync::Arc::new(table)))
}

/// The invariants `session` is judged with, and what they are called in the report (the
/// contract's name, or `invariants`).
pub(super) fn invariants(
    session: &Session,
    file: Option<&Path>,
    config: &Config,
) -> Result<(String, Vec<Judged>), String> {
    let Some(name) = &session.contract else {
        if config.invariants.is_empty() {
            return Err(
                "no invariants to judge the replay with: name a `contract:` in the \
                        session or add `invariants:` to the config"
                    .into(),
            );
        }
        let judged = config
            .invariants
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let id = format!("invariants[{i}] ({})", spec.check.name());
                let invariant = Invariant::compile(spec).map_err(|e| format!("{id}: {e}"))?;
                Ok(Judged {
                    id,
                    when: When::Always,
                    invariant,
                    check: spec.check.clone(),
                })
            })
            .collect::<Result<_, String>>()?;
        return Ok(("invariants".into(), judged));
    };
    let contract = match config.contract.as_ref().filter(|c| &c.name == name) {
        Some(c) => c.clone(),
        None => from_file(name, file, config)?,
    };
    let judged = contract
        .invariants
        .iter()
        .map(|i| {
            let invariant = Invariant::compile(&i.invariant)
                .map_err(|e| format!("contract `{}`: {}: {e}", contract.name, i.id))?;
            Ok(Judged {
                id: i.id.clone(),
                when: i.when,
                invariant,
                check: i.invariant.check.clone(),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((contract.name, judged))
}

/// `contract:` read as a path to a config file holding a `contract:` section, relative to
/// the session file (inline sessions: the working directory).
fn from_file(name: &str, file: Option<&Path>, config: &Config) -> Result<ContractSpec, String> {
    let base = file
        .and_then(Path::parent)
        .unwrap_or(config.replays.base.as_path());
    let path = base.join(name);
    let known = match &config.contract {
        Some(c) => format!("the config's contract is `{}`", c.name),
        None => "the config has no `contract:` section".into(),
    };
    // Anything there is read as a config (`files` refuses a FIFO or device, saying so).
    if !path.exists() {
        return Err(format!(
            "contract `{name}` resolves to nothing: {known}, and there is no file {}",
            path.display()
        ));
    }
    // A config sent to a daemon expands only its own variables, in the files it names too.
    let loaded = match &config.replays.submitted_vars {
        Some(vars) => crate::config::load_submitted(Submitted::File(&path), vars),
        None => crate::config::load(Some(&path), &Overrides::default()),
    }
    .map_err(|e| format!("contract `{name}`: {e}"))?;
    loaded.config.contract.ok_or_else(|| {
        format!(
            "contract `{name}`: {} has no `contract:` section",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inline session's contract file is the config folder's, wherever flakestorm runs.
    #[test]
    fn an_inline_sessions_contract_path_is_relative_to_the_config_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("contracts")).unwrap();
        std::fs::write(
            dir.path().join("contracts/c.yaml"),
            "golden_prompts: [hi]\ncontract:\n  name: From File\n  invariants:\n    - {id: says-ok, type: contains, value: ok}\n",
        )
        .unwrap();
        let session: Session =
            serde_json::from_str(r#"{"id": "b", "input": "hi", "contract": "contracts/c.yaml"}"#)
                .unwrap();
        let mut config = Config::default();
        let Err(missing) = invariants(&session, None, &config) else {
            panic!("found a contract file in the working directory")
        };
        assert!(missing.contains("resolves to nothing"), "{missing}");
        config.replays.base = dir.path().to_path_buf();
        let Ok((name, judged)) = invariants(&session, None, &config) else {
            panic!("the config folder's contract file was not read")
        };
        assert_eq!((name.as_str(), judged.len()), ("From File", 1));
    }

    /// A config sent to a daemon cannot reach the daemon's environment through a contract
    /// file its session names: the file expands the request's variables only.
    #[test]
    fn a_submitted_configs_contract_file_expands_only_the_requests_variables() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.yaml"),
            "golden_prompts: [hi]\ncontract:\n  name: C\n  invariants:\n    - {id: i, type: contains, value: '${PATH}'}\n",
        )
        .unwrap();
        let text = "agent: {endpoint: 'http://127.0.0.1:9/x'}\nreplays:\n  sessions:\n    \
                    - {id: s, input: hi, contract: c.yaml}\n";
        let load = |vars: &[(&str, &str)]| {
            let vars = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let submitted = Submitted::Text {
                text,
                base: dir.path(),
            };
            crate::config::load_submitted(submitted, &vars)
                .unwrap()
                .config
        };
        let session: Session =
            serde_json::from_str(r#"{"id": "s", "input": "hi", "contract": "c.yaml"}"#).unwrap();
        let Err(why) = invariants(&session, None, &load(&[])) else {
            panic!("the daemon's PATH expanded in a submitted config's contract file")
        };
        assert!(why.contains("`${PATH}` has no value"), "{why}");
        let judged = match invariants(&session, None, &load(&[("PATH", "sent")])) {
            Ok((_, judged)) => judged,
            Err(e) => panic!("the request's own variable was not used: {e}"),
        };
        assert!(format!("{:?}", judged[0].check).contains("sent"));
    }
}
