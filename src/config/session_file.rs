//! A replay session's own file (YAML or JSON; `replays.sessions[].file`): read when a
//! replay run starts, checked as config files are (size, depth, duplicate keys), and
//! every problem named with its field and, where the text shows it, its line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::replays::Session;

/// Why a session file could not be used: the file, the field and, where the parser knows
/// it, the line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SessionFileError {
    pub file: PathBuf,
    pub message: String,
}

/// Reads a session file (YAML or JSON).
pub fn read_session(file: &Path) -> Result<Session, SessionFileError> {
    let fail = |message: String| SessionFileError {
        file: file.to_path_buf(),
        message,
    };
    let text = crate::files::read_to_string(file, crate::files::Limit::Session)
        .map_err(|e| fail(e.reason()))?;
    let value = parse(&text).map_err(fail)?;
    let session: Session = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let message = super::redact::serde_message(&e.into_inner().to_string());
        let line = line_of(&text, &path)
            .map(|l| format!(" (line {l})"))
            .unwrap_or_default();
        match path.as_str() {
            "." => fail(format!("{message}{line}")),
            p => fail(format!("{p}: {message}{line}")),
        }
    })?;
    let mut errors = vec![];
    super::replays::check_session(&session, "", &mut errors);
    match errors.first() {
        None => Ok(session),
        Some(e) => {
            let path = e.path.trim_start_matches('.').to_string();
            let line = line_of(&text, &path)
                .map(|l| format!(" (line {l})"))
                .unwrap_or_default();
            Err(fail(format!("{path}: {}{line}", e.message)))
        }
    }
}

/// A session file's text as a value: the size, depth, duplicate-key and syntax checks of
/// config files first (errors with their line), then JSON as JSON, else the YAML parser.
/// JSON is YAML but for strings: a YAML parser refuses DEL and C1 controls and folds
/// U+0085 into a space, which JSON (`replay export` of a mutated prompt) carries as is.
pub(super) fn parse(text: &str) -> Result<Value, String> {
    if let Err(found) = super::untrusted::check_yaml(text) {
        return Err(found.one_line());
    }
    if let Ok(json) = serde_json::from_str(text) {
        return Ok(json);
    }
    let yaml = <crate::config::Yaml as figment::providers::Format>::string(text);
    figment::Figment::from(yaml)
        .extract::<Value>()
        .map_err(|e| super::redact::serde_message(&e.to_string()))
}

/// The line of the field at `path` (`tool_responses[1].status`) in `text`: each key is
/// looked for after the line of the one before it, each list index counts the `- ` items
/// after it. Good enough to point at the field in a session file as people write them.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut from, mut found) = (0, None);
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, indexes) = match part.split_once('[') {
            Some((k, rest)) => (k, Some(rest)),
            None => (part, None),
        };
        if !key.is_empty() {
            let at = (from..lines.len()).find(|&i| {
                let t = lines[i].trim_start().trim_start_matches("- ");
                t.starts_with(&format!("{key}:")) || t.starts_with(&format!("\"{key}\""))
            })?;
            (from, found) = (at, Some(at + 1));
        }
        for index in indexes.into_iter().flat_map(|r| r.split('[')) {
            let n: usize = index.trim_end_matches(']').parse().ok()?;
            let at = (from + 1..lines.len())
                .filter(|&i| lines[i].trim_start().starts_with("- "))
                .nth(n)?;
            (from, found) = (at, Some(at + 1));
        }
    }
    found
}
