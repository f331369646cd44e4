//! Configs that are not the user's own file, loaded with less trust: one sent to the
//! daemon's `/v1/runs` (`load_submitted`) and one a shard's report carries
//! (`load_carried`, for `report merge` without a config file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::load::{Loaded, Overrides, Policy, Source, load_source, read_limited};
use super::{ConfigError, ConfigErrors};

/// Loads the config a shard's report carries (`carried::carry`), for `report merge` with no
/// config file. A report is anyone's file: no variable of the environment expands in it
/// (it could name any), no `FLAKESTORM_*` variable layers over it (it is already layered),
/// and the files it names must lie below the working directory, which its relative paths
/// are relative to (`carried::confine`). The digest is the shards' own (`digest`).
pub fn load_carried(
    carried: &Value,
    source_name: &str,
    digest: Option<String>,
) -> Result<Loaded, ConfigErrors> {
    let policy = Policy {
        layers: false,
        unset: |name| {
            format!(
                "`${{{name}}}` is not expanded: a config carried by a shard report takes no \
                 value from the environment (a report could name any variable); merge with the \
                 config file (-c FILE)"
            )
        },
        set_aside: &[],
        refused: |p| super::carried::escapes(p).then_some(super::carried::OUTSIDE),
    };
    let text = carried.to_string();
    let source = Source {
        name: source_name.to_string(),
        text: &text,
        file: None,
        base: Path::new("."),
    };
    let mut loaded = load_source(&source, &Overrides::default(), &BTreeMap::new(), &policy)?;
    let outside = super::carried::confine(&loaded.config);
    if !outside.is_empty() {
        return Err(ConfigErrors::new(source_name.to_string(), outside));
    }
    loaded.digest = digest;
    Ok(loaded)
}

/// Sections a run on the daemon does not use: the daemon's own serve every run.
pub const DAEMON_SECTIONS: &[&str] = &["proxy", "control", "ca", "data_dir", "journal"];

/// A config sent to `/v1/runs`: its text, or (on a loopback control API) a file of the
/// daemon's host that the request names.
pub enum Submitted<'a> {
    Text { text: &'a str, base: &'a Path },
    File(&'a Path),
}

/// Loads a config sent to the daemon's `/v1/runs`: `${VAR}` takes its value from `vars`
/// only (the request's `env` and the names in the daemon's `control.expose_env`), never
/// from the daemon's environment; no `FLAKESTORM_*` variable layers over it; and the
/// sections the daemon does not use (`DAEMON_SECTIONS`, still named in `Loaded::named`)
/// are set aside unread, so nothing in them (`proxy.upstream_ca_file`) opens a file.
pub fn load_submitted(
    config: Submitted,
    vars: &BTreeMap<String, String>,
) -> Result<Loaded, ConfigErrors> {
    let policy = Policy {
        layers: false,
        unset: |name| {
            format!(
                "`${{{name}}}` has no value: a config sent to the daemon is expanded only from \
                 the request's `env` (never from the daemon's own environment, unless its \
                 control.expose_env lists the name)"
            )
        },
        set_aside: DAEMON_SECTIONS,
        refused: |_| {
            Some(
                "a config sent to the daemon opens no file of its host: give the prices inline \
                 under pricing.models",
            )
        },
    };
    let overrides = Overrides::default();
    let mut loaded = match config {
        Submitted::Text { text, base } => {
            let source = Source {
                name: "config (request body)".into(),
                text,
                file: None,
                base,
            };
            load_source(&source, &overrides, vars, &policy)
        }
        Submitted::File(path) => {
            let name = path.display().to_string();
            let text = read_limited(path).map_err(|e| {
                let why = ConfigError::new("", format!("cannot read config file: {e}"));
                ConfigErrors::new(name.clone(), vec![why])
            })?;
            let base = path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let source = Source {
                name,
                text: &text,
                file: Some(path),
                base: &base,
            };
            load_source(&source, &overrides, vars, &policy)
        }
    }?;
    loaded.config.replays.submitted_vars = Some(vars.clone());
    Ok(loaded)
}
