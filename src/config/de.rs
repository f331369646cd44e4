//! Deserialization helpers shared by every section loader: `section` (one section, every
//! bad value reported with its full path), `list` (element by element) and `kind` (a
//! value's kind, for messages that must not quote it). A leaf: it imports no other
//! loader, so `load` and the section modules (`chaos_load`, `contract`, `output`) all
//! depend on it and not on each other.

// Matches serde_json values and serde_path_to_error segments: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ConfigError;

/// A JSON value's kind, for messages that must not quote the value itself.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Deserializes one section; on failure records every error with its full path. serde stops
/// at the first bad value, so each bad value is taken out and the rest tried again (a few
/// rounds at most), until none is left or the remaining problem is the section itself.
pub(super) fn section<T: DeserializeOwned>(
    v: Value,
    name: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<T> {
    /// More rounds than any section has fields.
    const MAX_ROUNDS: usize = 64;
    let mut v = v;
    let mut found = false;
    // (path of the mapping, key) taken out, so their "missing field" is not a new problem.
    let mut removed: Vec<(String, String)> = vec![];
    for _ in 0..MAX_ROUNDS {
        let e = match serde_path_to_error::deserialize::<_, T>(v.clone()) {
            Ok(t) => return (!found).then_some(t),
            Err(e) => e,
        };
        let inner = e.path().to_string();
        let segments: Vec<serde_path_to_error::Segment> = e.path().iter().cloned().collect();
        let message = super::redact::serde_message(&e.into_inner().to_string());
        let ours = missing_field(&message)
            .is_some_and(|k| removed.iter().any(|(p, r)| *p == inner && r == k));
        if !ours {
            let path = if inner == "." {
                name.to_string()
            } else {
                join_path(name, &inner)
            };
            errors.push(ConfigError::new(path, message));
            found = true;
        }
        match take_out(&mut v, &segments) {
            Some(taken) => removed.push(taken),
            None => break,
        }
    }
    None
}

/// `missing field `x`` -> `x`.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// Removes the value at `segments` (or, inside a list, the nearest enclosing mapping entry)
/// and says which (mapping path, key) went; None when only the section itself is left.
fn take_out(v: &mut Value, segments: &[serde_path_to_error::Segment]) -> Option<(String, String)> {
    use serde_path_to_error::Segment;
    // The deepest prefix of `segments` that ends in a mapping key.
    let mut keys = vec![];
    for (i, seg) in segments.iter().enumerate() {
        match seg {
            Segment::Map { .. } => keys.push(i),
            Segment::Seq { .. } => {}
            _ => break,
        }
    }
    let last = *keys.last()?;
    let mut node = &mut *v;
    for seg in &segments[..last] {
        node = match (seg, node) {
            (Segment::Map { key }, Value::Object(m)) => m.get_mut(key)?,
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index)?,
            _ => return None,
        };
    }
    let (Segment::Map { key }, Value::Object(map)) = (&segments[last], node) else {
        return None;
    };
    map.remove(key)?;
    let parent: String = segments[..last]
        .iter()
        .map(|s| match s {
            Segment::Map { key } => format!(".{key}"),
            Segment::Seq { index } => format!("[{index}]"),
            _ => String::new(),
        })
        .collect();
    let parent = parent.strip_prefix('.').unwrap_or(&parent);
    Some((
        if parent.is_empty() {
            ".".into()
        } else {
            parent.to_string()
        },
        key.clone(),
    ))
}

/// Deserializes a list element by element, so every bad element is reported.
pub(super) fn list<T: DeserializeOwned>(
    v: Value,
    name: &str,
    errors: &mut Vec<ConfigError>,
) -> Vec<T> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .filter_map(|(i, item)| section(item, &format!("{name}[{i}]"), errors))
            .collect(),
        Value::Null => vec![],
        other => {
            errors.push(ConfigError::new(
                name,
                format!("expected a list, found {}", kind(&other)),
            ));
            vec![]
        }
    }
}

fn join_path(base: &str, inner: &str) -> String {
    if inner.starts_with('[') {
        format!("{base}{inner}")
    } else {
        format!("{base}.{inner}")
    }
}
