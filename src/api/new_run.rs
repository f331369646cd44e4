//! `POST /v1/runs`'s body: read (JSON or YAML), every problem in it found at once (its own
//! fields and its config's, at their paths), the config loaded as a submitted one (never
//! expanded from the daemon's environment), and off loopback refused what such a run may
//! not do (`submitted`). `runs::create` queues what comes out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::ApiError;
use crate::config::{ConfigError, Loaded, Submitted};
use crate::run::RunKind;

/// `POST /v1/runs` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRun {
    /// `contract`, `chaos`, `mutation`, `replay` or `ci`.
    pub(super) kind: String,
    /// The config: YAML or JSON text, or a JSON object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(super) config: Option<Value>,
    /// A config file the daemon reads (loopback control API only).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub(super) config_path: Option<PathBuf>,
    #[serde(default)]
    pub(super) seed: Option<u64>,
    /// A built-in chaos profile instead of `chaos:` (chaos runs, mutations under chaos).
    #[serde(default)]
    pub(super) profile: Option<String>,
    /// Mutations under the `chaos:` rules (`run --chaos`).
    #[serde(default)]
    pub(super) chaos: bool,
    #[serde(default)]
    pub(super) min_score: Option<f64>,
    /// Overrides `advanced.trials`: each case runs this many times (1..=100).
    #[serde(default)]
    pub(super) trials: Option<u32>,
    /// Runs only this trial (1-based) of each case.
    #[serde(default)]
    pub(super) trial: Option<u32>,
    /// Values for the config's `${NAME}`s. A config sent to the daemon is never expanded
    /// from the daemon's own environment (but the names its `control.expose_env` lists).
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
}

/// A `POST /v1/runs` body read into the request, its run kind and its loaded config, or
/// every problem with it at once; off loopback, also what such a run may not do. Blocks
/// (parsing, loading, and on loopback a config file): call it off the async workers.
pub(super) fn submission(
    body: &[u8],
    yaml: bool,
    loopback: bool,
    exposed: &[String],
) -> Result<(NewRun, RunKind, Loaded), ApiError> {
    let value = super::body::parse(body, yaml)?;
    let new: NewRun =
        serde_path_to_error::deserialize(value).map_err(|e| ApiError::BadBody(located(&e)))?;
    let (kind, asked) = asked(&new);
    // Every problem at once: the request's own beside the config's.
    let loaded = match load(&new, loopback, exposed) {
        Err(ApiError::InvalidConfig(mut e)) if !asked.is_empty() => {
            e.errors.splice(0..0, asked);
            return Err(ApiError::InvalidConfig(e));
        }
        other => other?,
    };
    let Some(kind) = kind.filter(|_| asked.is_empty()) else {
        return Err(ApiError::BadBody(crate::config::one_line(asked)));
    };
    if !loopback {
        super::submitted::off_loopback(&loaded.config).map_err(ApiError::NotRunnable)?;
    }
    Ok((new, kind, loaded))
}

/// For the fuzz targets: `submission` as a control API off loopback sees it, which opens no
/// file and starts nothing; a refusal as the JSON the API would answer.
#[doc(hidden)]
pub fn check_submission(body: &[u8], yaml: bool) -> Result<(), String> {
    submission(body, yaml, false, &[])
        .map(drop)
        .map_err(|e| e.body().to_string())
}

/// The run kind asked for, and the problems with the request's own fields (the config
/// aside), each at its field.
fn asked(new: &NewRun) -> (Option<RunKind>, Vec<ConfigError>) {
    let mut problems = vec![];
    for name in new.env.keys().filter(|n| !crate::config::is_var_name(n)) {
        problems.push(ConfigError::new(
            format!("env.{name}"),
            "not an environment variable name (letters, digits and `_`, not first a digit)",
        ));
    }
    let kind = new
        .kind
        .parse::<RunKind>()
        .map_err(|e| problems.push(ConfigError::new("kind", e)))
        .ok();
    if let Some(m) = new.min_score.filter(|m| !(0.0..=100.0).contains(m)) {
        problems.push(ConfigError::new(
            "min_score",
            format!("{m} is outside 0..=100"),
        ));
    }
    (kind, problems)
}

/// What the run's config asks that a run on this daemon does not do, and its load warnings.
pub(super) fn daemon_warnings(loaded: &Loaded) -> Vec<String> {
    let mut out = loaded.warnings.clone();
    for section in ["proxy", "control", "ca", "data_dir", "journal"] {
        if loaded.named.sections.iter().any(|s| s == section) {
            out.push(format!(
                "{section}: not used by a run on a daemon: the daemon's own proxy, control API, \
                 CA and data folder serve every run it drives"
            ));
        }
    }
    out
}

/// The error of a body that does not fit `NewRun`, at its field.
fn located(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    match e.path().to_string().as_str() {
        "." | "" => e.inner().to_string(),
        path => format!("{path}: {}", e.inner()),
    }
}

/// The run's config, inline or from a file; every problem at its path. `${NAME}`s come
/// from the request's `env`, and from the daemon's environment only for `exposed` names.
fn load(new: &NewRun, loopback: bool, exposed: &[String]) -> Result<Loaded, ApiError> {
    let mut vars: BTreeMap<String, String> = exposed
        .iter()
        .filter_map(|name| Some((name.clone(), std::env::var(name).ok()?)))
        .collect();
    vars.extend(new.env.clone());
    let submitted = match (&new.config, &new.config_path) {
        (Some(_), Some(_)) => {
            return Err(ApiError::BadBody(
                "give either config or config_path, not both".into(),
            ));
        }
        (None, None) => {
            return Err(ApiError::BadBody(
                "config: missing; give the config inline (YAML or JSON) or config_path".into(),
            ));
        }
        (Some(v), None) => v,
        (None, Some(_)) if !loopback => {
            return Err(ApiError::NotRunnable(
                "config_path: a control API off loopback reads no file for a client; send the \
                 config inline"
                    .into(),
            ));
        }
        (None, Some(path)) => {
            return crate::config::load_submitted(Submitted::File(path), &vars)
                .map_err(ApiError::InvalidConfig);
        }
    };
    let text = match submitted {
        Value::String(t) => t.clone(),
        Value::Object(_) => submitted.to_string(),
        other @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_)) => {
            return Err(ApiError::BadBody(format!(
                "config: expected YAML or JSON text or an object, found {}",
                super::submitted::kind_of(other)
            )));
        }
    };
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = Submitted::Text {
        text: &text,
        base: &base,
    };
    crate::config::load_submitted(config, &vars).map_err(ApiError::InvalidConfig)
}
