//! Loading: read the file, layer env and flags over it with figment, expand `${VAR}`,
//! deserialize section by section (so one bad section does not hide the others), then
//! validate. Every problem is collected and returned together.

// Matches serde_json values: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Serialized};

use super::Yaml;
use serde_json::{Map, Value};

use super::chaos_load::{remap_chaos_paths, warn_tools};
use super::de::kind;
use super::expand::expand_value;
use super::schema::*;
use super::sections::{SECTIONS, sections};
use super::validate::validate;
use super::{ConfigError, ConfigErrors};

/// Values from command-line flags; they win over file and environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub proxy_listen: Option<String>,
    pub control_listen: Option<String>,
    pub ca_dir: Option<PathBuf>,
}

/// A loaded, validated configuration.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// What loads but deserves the user's attention (e.g. v2 fields that do not apply).
    pub warnings: Vec<String>,
    /// The file it came from, if any.
    pub file: Option<PathBuf>,
    /// `sha256:<hex>` of that file's bytes, so a report names the config that produced it.
    pub digest: Option<String>,
    /// Which listen addresses the file, the environment or a flag named (the others are
    /// defaults, which a run that starts its own agent may replace with free ports).
    pub named: Named,
    /// The config as it ran, credentials out, as a shard's report carries it
    /// (`carried::carry`).
    pub carried: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    pub proxy_listen: bool,
    pub control_listen: bool,
    /// The top-level sections the config names.
    pub sections: Vec<String>,
}

impl Named {
    fn of(root: &Map<String, Value>) -> Named {
        let has = |section: &str| {
            root.get(section)
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key("listen"))
        };
        Named {
            proxy_listen: has("proxy"),
            control_listen: has("control"),
            sections: root.keys().cloned().collect(),
        }
    }
}

/// `sha256:` and the hex SHA-256 of `bytes` (ring is already linked for TLS).
pub fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Loads `file` (or defaults alone), layered with `FLAKESTORM_*` env and `overrides`.
pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Loaded, ConfigErrors> {
    load_with_env(file, overrides, &std::env::vars().collect())
}

/// `load` with an explicit environment (used for both `FLAKESTORM_*` layering and
/// `${VAR}` expansion), so tests need not touch the process environment.
pub fn load_with_env(
    file: Option<&Path>,
    overrides: &Overrides,
    vars: &BTreeMap<String, String>,
) -> Result<Loaded, ConfigErrors> {
    let source_name = file.map_or_else(
        || "configuration (defaults)".to_string(),
        |f| f.display().to_string(),
    );
    let text = match file {
        Some(path) => read_limited(path).map_err(|e| {
            let why = ConfigError::new("", format!("cannot read config file: {e}"));
            ConfigErrors::new(source_name.clone(), vec![why])
        })?,
        None => String::new(),
    };
    let base = file
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let source = Source {
        name: source_name,
        text: &text,
        file,
        base: &base,
    };
    load_source(&source, overrides, vars, &Policy::USER)
}

/// Loads a config sent as text (YAML, or JSON, which is YAML), e.g. over the runs API:
/// relative paths in it are relative to `base`, and errors name `source_name`.
pub fn load_text(
    text: &str,
    source_name: &str,
    base: &Path,
    overrides: &Overrides,
    vars: &BTreeMap<String, String>,
) -> Result<Loaded, ConfigErrors> {
    let source = Source {
        name: source_name.to_string(),
        text,
        file: None,
        base,
    };
    load_source(&source, overrides, vars, &Policy::USER)
}

/// Where a config's `${VAR}`s come from and what it may say.
pub(super) struct Policy {
    /// `FLAKESTORM_*` variables layer over the file (the user's own environment).
    pub layers: bool,
    /// The error for a `${NAME}` with no value.
    pub unset: fn(&str) -> String,
    /// Sections removed unread (still named in `Named::sections`).
    pub set_aside: &'static [&'static str],
    /// Why a file the config names (a pricing table) may not be opened, if it may not.
    pub refused: fn(&Path) -> Option<&'static str>,
}

impl Policy {
    const USER: Policy = Policy {
        layers: true,
        unset: |name| format!("environment variable `{name}` is not set"),
        set_aside: &[],
        refused: |_| None,
    };
}

/// A config's text and where it came from.
pub(super) struct Source<'a> {
    pub name: String,
    pub text: &'a str,
    /// The file it was read from.
    pub file: Option<&'a Path>,
    /// What relative paths in it are relative to.
    pub base: &'a Path,
}

pub(super) fn load_source(
    source: &Source,
    overrides: &Overrides,
    vars: &BTreeMap<String, String>,
    policy: &Policy,
) -> Result<Loaded, ConfigErrors> {
    let env = |name: &str| vars.get(name).cloned().ok_or_else(|| (policy.unset)(name));
    let fail = |errors| ConfigErrors::new(source.name.clone(), errors);
    let text = source.text;
    super::untrusted::check_yaml(text)
        .map_err(|found| ConfigErrors::found(source.name.clone(), found))?;
    let layers = if policy.layers {
        vars
    } else {
        &BTreeMap::new()
    };
    let (mut root, file_value) = layered(text, layers, overrides).map_err(|e| fail(vec![e]))?;
    let named = Named::of(&root);
    root.retain(|section, _| !policy.set_aside.contains(&section.as_str()));
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    super::literal_secrets::check(&file_value, &mut warnings, &mut errors);
    // Strings that may be credentials, as written and as expanded: no error may quote them.
    let mut secrets = vec![];
    let mut expanded = Value::Object(root.clone());
    expand_value(&mut expanded, "", &env, &mut vec![]);
    super::redact::collect(&expanded, &mut secrets);
    super::redact::collect(&Value::Object(root.clone()), &mut secrets);
    let carried = super::carried::carry(&expanded);
    let (mut config, chaos, chaos_index) = sections(root, &env, &mut errors, &mut warnings);
    super::paths::resolve_paths(&mut config, source.base);
    // A config sent to the daemon (no environment layers) opens no pricing file.
    config.pricing = super::pricing::compile(
        &config.pricing_spec,
        source.base,
        policy.refused,
        &mut errors,
    );
    let parsed = errors.len();
    validate(&mut config, &chaos, &mut errors);
    remap_chaos_paths(&mut errors[parsed..], &chaos_index, "chaos");
    warn_tools(&config, &mut warnings);
    super::crosscheck::warn_config(&config, &mut warnings);
    super::v2::explain(&mut errors);
    for e in &mut errors {
        super::redact::scrub(&mut e.message, &secrets);
    }
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    // A config with no text at all (defaults alone) has nothing to digest.
    let digest = (source.file.is_some() || !text.is_empty()).then(|| digest(text.as_bytes()));
    Ok(Loaded {
        config,
        warnings,
        file: source.file.map(Path::to_path_buf),
        digest,
        named,
        carried,
    })
}

/// The config file, if it is a regular file of at most 1 MiB (`files`: a FIFO or device is
/// refused at once, a larger file before it is read). The error names the file once: the
/// caller's error already starts with its path.
pub(super) fn read_limited(path: &Path) -> std::io::Result<String> {
    crate::files::read_to_string(path, crate::files::Limit::Config).map_err(|e| match e {
        crate::files::FileError::Io { source, .. } => source,
        other => std::io::Error::other(other.reason()),
    })
}

/// file < env < flags, merged into one JSON value; also the file's own value (before env
/// and flags), for checks on what the file itself says.
fn layered(
    text: &str,
    vars: &BTreeMap<String, String>,
    o: &Overrides,
) -> Result<(Map<String, Value>, Value), ConfigError> {
    let located = |e: figment::Error| {
        let path = e.path.join(".");
        let message = super::redact::serde_message(&e.to_string());
        ConfigError::new(path, message)
    };
    // A JSON object (a config sent to `/v1/runs` as an object, a JSON file) is read as
    // JSON: the YAML parser would refuse a DEL in a string and fold a U+0085 into a space.
    let json = serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object);
    let base = || match &json {
        Some(v) => Figment::new().merge(Serialized::defaults(v)),
        None => Figment::new().merge(Yaml::string(text)),
    };
    let file: Value = base().extract().map_err(located)?;
    // A value set under a section the file spells as a scalar (`proxy: "x"` plus
    // `--listen`) would replace that section whole and hide its error: such layers are
    // skipped, so the file's error is reported as it is without them.
    let fits = |path: &str| {
        let parts: Vec<&str> = path.split('.').collect();
        let mut node = &file;
        for part in &parts[..parts.len() - 1] {
            match node.get(part) {
                None | Some(Value::Null) => return true,
                Some(next @ Value::Object(_)) => node = next,
                Some(_) => return false,
            }
        }
        true
    };
    let mut fig = env_layers(base(), vars, &fits);
    let flags = [
        (
            "proxy.listen",
            o.proxy_listen.as_ref().map(|v| Value::from(v.as_str())),
        ),
        (
            "control.listen",
            o.control_listen.as_ref().map(|v| Value::from(v.as_str())),
        ),
        (
            "ca.dir",
            o.ca_dir
                .as_ref()
                .map(|v| Value::from(v.display().to_string())),
        ),
    ];
    for (path, value) in flags {
        if let Some(v) = value.filter(|_| fits(path)) {
            fig = fig.merge(Serialized::default(path, v));
        }
    }
    // Keeps `.nan`/`.inf` visible (as strings no number field accepts) so they are refused.
    let value: Value = super::finite::extract(&fig).map_err(|e| located(*e))?;
    match value {
        Value::Object(map) => Ok((map, file)),
        Value::Null => Ok((Map::new(), file)),
        other => Err(ConfigError::new(
            "",
            format!(
                "the top level must be a mapping of sections, found {}",
                kind(&other)
            ),
        )),
    }
}

/// `FLAKESTORM_PROXY__LISTEN` -> `proxy.listen`, over `fig`, where the file's shape
/// `fits` the path. Only names of sections count, so secrets such as FLAKESTORM_API_TOKEN
/// (meant for `${…}`) are not mistaken for config.
fn env_layers(
    mut fig: Figment,
    vars: &BTreeMap<String, String>,
    fits: &dyn Fn(&str) -> bool,
) -> Figment {
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("FLAKESTORM_") else {
            continue;
        };
        let path = rest
            .split("__")
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join(".");
        let top = path.split('.').next().unwrap_or_default();
        if SECTIONS.contains(&top) && fits(&path) {
            let parsed: figment::value::Value =
                value.parse().unwrap_or_else(|never| match never {});
            fig = fig.merge(Serialized::default(&path, parsed));
        }
    }
    fig
}

#[cfg(test)]
#[allow(clippy::wildcard_enum_match_arm)] // a test fails on any value but the one it expects
#[path = "load_tests.rs"]
mod tests;
