//! `validate` without secrets (Flakestorm v2 files name `${OPENAI_API_KEY}` and the like):
//! a config whose `${VAR}`s are not all set is checked with a stand-in for each missing
//! one. Every missing variable is a warning naming where it is used, and an error at a
//! field that uses one is a warning too: that field cannot be checked without the value.
//! Runs still refuse a config with an unset variable (`load`); only `validate` reads this way.

use std::collections::BTreeMap;
use std::path::Path;

use figment::Figment;
use figment::providers::Format;

use super::Yaml;
use serde_json::Value;

use super::{ConfigError, ConfigErrors, Loaded, Overrides, load_with_env, referenced_vars};

/// What each missing variable stands in as: a URL, so a variable that is a whole endpoint
/// or its base still parses; an error it causes elsewhere becomes a warning.
const STAND_IN: &str = "http://stand-in.invalid";

/// A config checked as far as it can be without the variables that are not set.
#[derive(Debug)]
pub struct Validated {
    /// The config as loaded with stand-ins; `None` when a field that uses a missing
    /// variable could not be checked (its error is among the warnings).
    pub loaded: Option<Loaded>,
    pub warnings: Vec<String>,
}

/// Loads `file` as `validate` does: missing `${VAR}`s are warnings, not errors (see the
/// module's doc); anything else wrong is an error as `load` reports it.
pub fn load_for_validation(
    file: Option<&Path>,
    overrides: &Overrides,
    vars: &BTreeMap<String, String>,
) -> Result<Validated, ConfigErrors> {
    let text = file.and_then(|p| crate::files::read_to_string(p, crate::files::Limit::Config).ok());
    validate_with(text.as_deref().unwrap_or_default(), vars, |vars| {
        load_with_env(file, overrides, vars)
    })
}

/// `load_for_validation` of a config's `text` (not yet a file: `flakestorm migrate`'s
/// output), its relative paths taken from `base`.
pub fn validate_text(
    text: &str,
    source_name: &str,
    base: &Path,
    vars: &BTreeMap<String, String>,
) -> Result<Validated, ConfigErrors> {
    validate_with(text, vars, |vars| {
        super::load_text(text, source_name, base, &Overrides::default(), vars)
    })
}

fn validate_with(
    text: &str,
    vars: &BTreeMap<String, String>,
    load: impl Fn(&BTreeMap<String, String>) -> Result<Loaded, ConfigErrors>,
) -> Result<Validated, ConfigErrors> {
    // Values only: a `${VAR}` in a comment is nobody's.
    let uses = uses(text, vars);
    let mut missing: Vec<String> = vec![];
    for (_, name) in &uses {
        if !missing.contains(name) {
            missing.push(name.clone());
        }
    }
    if missing.is_empty() {
        return load(vars).map(|loaded| Validated {
            warnings: loaded.warnings.clone(),
            loaded: Some(loaded),
        });
    }
    let mut warnings: Vec<String> = missing
        .iter()
        .map(|name| {
            let at: Vec<&str> = uses
                .iter()
                .filter(|(_, n)| n == name)
                .map(|(p, _)| p.as_str())
                .collect();
            format!(
                "environment variable `{name}` is not set (used at {}): checked with a \
                 stand-in; a run needs it",
                if at.is_empty() {
                    "a field".into()
                } else {
                    at.join(", ")
                }
            )
        })
        .collect();
    let mut stand_in = vars.clone();
    // A `FLAKESTORM_<SECTION>__…` name would also layer over the file: no stand-in for it
    // (its fields are then reported unchecked, below).
    for name in missing.iter().filter(|n| !layers(n)) {
        stand_in.insert(name.clone(), STAND_IN.into());
    }
    match load(&stand_in) {
        Ok(loaded) => {
            warnings.extend(loaded.warnings.iter().cloned());
            Ok(Validated {
                loaded: Some(loaded),
                warnings,
            })
        }
        Err(errors) => {
            let (soft, hard): (Vec<ConfigError>, Vec<ConfigError>) = errors
                .errors
                .into_iter()
                .partition(|e| uses.iter().any(|(p, _)| covers(p, &e.path)));
            if !hard.is_empty() {
                return Err(ConfigErrors::new(errors.source_name, hard));
            }
            warnings.extend(soft.iter().map(|e| {
                format!(
                    "{}: not checked without its variable's value: {}",
                    e.path, e.message
                )
            }));
            Ok(Validated {
                loaded: None,
                warnings,
            })
        }
    }
}

/// Whether a variable of this name is a `FLAKESTORM_*` layer over a section of the file.
fn layers(name: &str) -> bool {
    let section = name
        .strip_prefix("FLAKESTORM_")
        .and_then(|r| r.split("__").next());
    section.is_some_and(|s| super::sections::SECTIONS.contains(&s.to_ascii_lowercase().as_str()))
}

/// Whether an error at `error_path` is about the field at `use_path` (or inside it).
fn covers(use_path: &str, error_path: &str) -> bool {
    error_path == use_path
        || error_path
            .strip_prefix(use_path)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        || use_path
            .strip_prefix(error_path)
            .is_some_and(|rest| !error_path.is_empty() && rest.starts_with('['))
}

/// Where (dotted paths, as errors name them) the file's values name a variable not in
/// `vars`, and which.
fn uses(text: &str, vars: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let Ok(tree) = Figment::from(Yaml::string(text)).extract::<Value>() else {
        return vec![];
    };
    let mut out = vec![];
    walk(&tree, "", vars, &mut out);
    out
}

fn walk(v: &Value, path: &str, vars: &BTreeMap<String, String>, out: &mut Vec<(String, String)>) {
    let child = |k: &str| match path.is_empty() {
        true => k.to_string(),
        false => format!("{path}.{k}"),
    };
    match v {
        Value::String(s) => {
            for name in referenced_vars(s)
                .into_iter()
                .filter(|n| !vars.contains_key(n))
            {
                out.push((path.to_string(), name));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), vars, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                walk(item, &child(k), vars, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validated(yaml: &str) -> Result<Validated, ConfigErrors> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flakestorm.yaml");
        std::fs::write(&path, yaml).unwrap();
        load_for_validation(Some(&path), &Overrides::default(), &BTreeMap::new())
    }

    /// A v2 file naming a key it has not got: valid, with the variable named as a warning.
    #[test]
    fn a_missing_secret_is_a_warning_naming_where_it_is_used() {
        let v = validated(
            "agent: {endpoint: \"http://127.0.0.1:9/invoke\", headers: {Authorization: \"Bearer ${API_TOKEN}\"}}\n",
        )
        .unwrap();
        assert!(v.loaded.is_some());
        assert_eq!(
            v.warnings
                .iter()
                .filter(
                    |w| w.contains("`API_TOKEN` is not set (used at agent.headers.Authorization)")
                )
                .count(),
            1,
            "{:?}",
            v.warnings
        );
    }

    /// A field that cannot be checked without the value is a warning; another error in the
    /// file is still an error.
    #[test]
    fn only_the_fields_that_use_a_missing_variable_are_spared() {
        let v = validated("advanced: {concurrency: \"${N}\"}\n").unwrap();
        assert!(v.loaded.is_none());
        assert!(
            v.warnings
                .iter()
                .any(|w| w.starts_with("advanced.concurrency: not checked without")),
            "{:?}",
            v.warnings
        );
        // A variable that would layer over a section gets no stand-in (it would override
        // the file): its field is reported unchecked.
        let v = validated("agent: {endpoint: \"${FLAKESTORM_AGENT__ENDPOINT}\"}\n").unwrap();
        assert!(v.loaded.is_none(), "{:?}", v.warnings);
        assert!(
            v.warnings
                .iter()
                .any(|w| w.starts_with("agent.endpoint: not checked without")),
            "{:?}",
            v.warnings
        );
        let e = validated("advanced: {concurrency: \"${N}\"}\nscoring: {min_score: 500}\n")
            .unwrap_err();
        assert_eq!(e.errors.len(), 1, "{e}");
        assert_eq!(e.errors[0].path, "scoring.min_score");
    }
}
