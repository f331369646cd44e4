//! Loading: read the file, layer env and flags over it with figment, expand `${VAR}`,
//! deserialize section by section (so one bad section does not hide the others), then
//! validate. Every problem is collected and returned together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Serialized, Yaml};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::chaos::{ChaosSpec, Rule};
use super::expand::expand_value;
use super::schema::*;
use super::validate::validate;
use super::{ConfigError, ConfigErrors};

/// Sections this build reads.
const SECTIONS: &[&str] = &[
    "proxy", "control", "ca", "data_dir", "tools", "llm", "journal", "advanced",
];

/// Flakestorm v2 sections owned by capabilities not built yet: loaded, reported, not applied.
const PENDING: &[(&str, &str)] = &[
    ("agent", "the run engine"),
    ("model", "the mutation engine"),
    ("golden_prompts", "the run engine"),
    ("mutations", "the mutation engine"),
    ("invariants", "the run engine"),
    ("contract", "the run engine"),
    ("chaos_matrix", "the run engine"),
    ("replays", "replay"),
    ("scoring", "the run engine"),
    ("output", "reports"),
];

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
    /// Things that load but deserve the user's attention (sections not applied yet).
    pub warnings: Vec<String>,
    /// The file it came from, if any.
    pub file: Option<PathBuf>,
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
    let env = |name: &str| vars.get(name).cloned();
    let source_name = file.map_or_else(
        || "configuration (defaults)".to_string(),
        |f| f.display().to_string(),
    );
    let fail = |errors| ConfigErrors {
        source_name: source_name.clone(),
        errors,
    };
    let text = match file {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            fail(vec![ConfigError::new(
                "",
                format!("cannot read config file: {e}"),
            )])
        })?,
        None => String::new(),
    };
    let root = layered(&text, vars, overrides).map_err(|e| fail(vec![e]))?;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let (mut config, chaos_index) = sections(root, &env, &mut errors, &mut warnings);
    let base = file
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    resolve_paths(&mut config, &base);
    let parsed = errors.len();
    validate(&config, &mut errors);
    remap_chaos_paths(&mut errors[parsed..], &chaos_index);
    warn_unroutable_tools(&config, &mut warnings);
    if errors.is_empty() {
        Ok(Loaded {
            config,
            warnings,
            file: file.map(Path::to_path_buf),
        })
    } else {
        Err(fail(errors))
    }
}

/// file < env < flags, merged into one JSON value.
fn layered(
    text: &str,
    vars: &BTreeMap<String, String>,
    o: &Overrides,
) -> Result<Map<String, Value>, ConfigError> {
    let mut fig = Figment::new().merge(Yaml::string(text));
    // `FLAKESTORM_PROXY__LISTEN` -> `proxy.listen`. Only names of sections count, so
    // secrets such as FLAKESTORM_API_TOKEN (meant for `${…}`) are not mistaken for config.
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
        if SECTIONS
            .iter()
            .chain(PENDING.iter().map(|(s, _)| s))
            .any(|s| *s == top)
        {
            let parsed: figment::value::Value =
                value.parse().unwrap_or_else(|never| match never {});
            fig = fig.merge(Serialized::default(&path, parsed));
        }
    }
    if let Some(v) = &o.proxy_listen {
        fig = fig.merge(Serialized::default("proxy.listen", v));
    }
    if let Some(v) = &o.control_listen {
        fig = fig.merge(Serialized::default("control.listen", v));
    }
    if let Some(v) = &o.ca_dir {
        fig = fig.merge(Serialized::default("ca.dir", v));
    }
    let value: Value = fig.extract().map_err(|e| {
        let path = e.path.join(".");
        let message = e.to_string();
        ConfigError::new(path, message)
    })?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(ConfigError::new(
            "",
            format!("the top level must be a mapping of sections, found {other}"),
        )),
    }
}

fn sections(
    mut root: Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> (Config, ChaosIndex) {
    let mut take = |name: &str, errors: &mut Vec<ConfigError>| -> Option<Value> {
        let mut v = root.remove(name)?;
        expand_value(&mut v, name, env, errors);
        Some(v)
    };
    let mut c = Config::default();
    let mut chaos_index = ChaosIndex::new();
    if let Some(v) = take("proxy", errors) {
        c.proxy = section(v, "proxy", errors).unwrap_or_default();
    }
    if let Some(v) = take("control", errors) {
        c.control = section(v, "control", errors).unwrap_or_default();
    }
    if let Some(v) = take("ca", errors) {
        c.ca = section(v, "ca", errors).unwrap_or_default();
    }
    c.data_dir = take("data_dir", errors)
        .and_then(|v| section(v, "data_dir", errors))
        .unwrap_or_else(|| PathBuf::from(".flakestorm"));
    if let Some(v) = take("tools", errors) {
        c.tools = list(v, "tools", errors);
    }
    if let Some(v) = take("llm", errors) {
        c.llm = list(v, "llm", errors);
    }
    if let Some(v) = take("journal", errors) {
        c.journal = section(v, "journal", errors).unwrap_or_default();
    }
    if let Some(mut v) = take("chaos", errors) {
        lenient_v2_fields(&mut v, warnings);
        let (spec, index) = chaos_section(v, errors);
        c.chaos = spec;
        chaos_index = index;
    }
    if let Some(v) = take("advanced", errors) {
        c.advanced = advanced(v, warnings, errors).unwrap_or_default();
    }
    root.remove("version");
    for (key, _) in root {
        match PENDING.iter().find(|(name, _)| *name == key) {
            Some((name, owner)) => warnings.push(format!(
                "`{name}` is loaded but not applied yet: it needs {owner}, which this build does not have"
            )),
            None => {
                let known: Vec<&str> = SECTIONS.iter().copied().chain(PENDING.iter().map(|(s, _)| *s)).collect();
                errors.push(ConfigError::new(
                    key.as_str(),
                    format!("unknown section; expected one of {}, version", known.join(", ")),
                ));
            }
        }
    }
    (c, chaos_index)
}

/// `advanced` mixes fields this build applies with run-engine ones.
fn advanced(
    mut v: Value,
    warnings: &mut Vec<String>,
    errors: &mut Vec<ConfigError>,
) -> Option<AdvancedSpec> {
    // Accepted for v2 compatibility; flakestorm has no use for them.
    if let Some(map) = v.as_object_mut() {
        for old in ["parallel", "verbose"] {
            if map.remove(old).is_some() {
                warnings.push(format!(
                    "advanced.{old}: not used by flakestorm (use advanced.concurrency / RUST_LOG)"
                ));
            }
        }
    }
    section(v, "advanced", errors)
}

/// Flakestorm v2 fields that some modes do not use. v2 files set them freely (its rules
/// were flat), so where a mode has no use for one it is dropped with a warning instead of
/// failing the load; any other unknown field is still an error.
const V2_FAULT_FIELDS: &[&str] = &[
    "delay_ms",
    "error_code",
    "message",
    "payload",
    "max_tokens",
    "drift_type",
    "severity",
    "direction",
    "factor",
];

fn lenient_v2_fields(chaos: &mut Value, warnings: &mut Vec<String>) {
    use super::chaos::{LlmMode, ToolMode, parse_rule};
    for list in ["tool_faults", "llm_faults"] {
        let Some(Value::Array(rules)) = chaos.get_mut(list) else {
            continue;
        };
        for (i, rule) in rules.iter_mut().enumerate() {
            // Each pass removes one offending field; a rule has few.
            for _ in 0..V2_FAULT_FIELDS.len() {
                let err = if list == "tool_faults" {
                    parse_rule::<ToolMode>(rule.clone()).err()
                } else {
                    parse_rule::<LlmMode>(rule.clone()).err()
                };
                let Some((_, err)) = err else { break };
                let field = V2_FAULT_FIELDS
                    .iter()
                    .find(|f| err.starts_with(&format!("unknown field `{f}`")));
                let (Some(field), Some(map)) = (field, rule.as_object_mut()) else {
                    break;
                };
                map.remove(*field);
                let mode = map.get("mode").and_then(Value::as_str).unwrap_or("?");
                warnings.push(format!(
                    "chaos.{list}[{i}].{field}: not used by mode `{mode}`; ignored"
                ));
            }
        }
    }
}

/// A v2 file names tools without saying where they live: such rules cannot match yet.
fn warn_unroutable_tools(c: &Config, warnings: &mut Vec<String>) {
    if !c.tools.is_empty() {
        return;
    }
    let named = c
        .chaos
        .tool_faults
        .iter()
        .map(|r| &r.common)
        .chain(c.chaos.context_attacks.rules().iter().map(|r| &r.common));
    let mut seen = std::collections::BTreeSet::new();
    for t in named
        .filter_map(|c| c.tool.as_deref())
        .filter(|t| *t != "*")
    {
        if seen.insert(t) {
            warnings.push(format!(
                "chaos: tool `{t}` has no `tools:` entry, so its faults match no request; add \
                 `tools: [{{name: {t}, match_url: [\"https://…/*\"]}}]`"
            ));
        }
    }
}

/// Parses a chaos spec sent at runtime (control API), with the same checks, paths and v2
/// leniency as the `chaos:` section of a file. Ok carries the warnings.
pub fn parse_chaos(
    v: Value,
    tools: &[ToolSpec],
) -> Result<(ChaosSpec, Vec<String>), Vec<ConfigError>> {
    let mut v = v;
    let mut warnings = vec![];
    let mut errors = vec![];
    lenient_v2_fields(&mut v, &mut warnings);
    let (spec, index) = chaos_section(v, &mut errors);
    let parsed = errors.len();
    errors.extend(super::validate::check_chaos(&spec, tools, "chaos"));
    remap_chaos_paths(&mut errors[parsed..], &index);
    if errors.is_empty() {
        Ok((spec, warnings))
    } else {
        Err(errors)
    }
}

/// The chaos section rule by rule, so every bad rule is reported with its path.
fn chaos_section(v: Value, errors: &mut Vec<ConfigError>) -> (ChaosSpec, ChaosIndex) {
    use super::chaos::{ContextAttacks, attack_list, parse_rule};
    let Value::Object(mut map) = v else {
        errors.push(ConfigError::new(
            "chaos",
            "expected a mapping with tool_faults, llm_faults, context_attacks",
        ));
        return (ChaosSpec::default(), ChaosIndex::new());
    };
    fn rules<M: DeserializeOwned>(
        items: Vec<Value>,
        list: &'static str,
        errors: &mut Vec<ConfigError>,
        index: &mut ChaosIndex,
    ) -> Vec<Rule<M>> {
        let mut out = vec![];
        for (i, item) in items.into_iter().enumerate() {
            match parse_rule::<M>(item) {
                Ok(r) => {
                    index.push((list, out.len(), i));
                    out.push(r);
                }
                Err((field, msg)) => {
                    let path = if field.is_empty() {
                        format!("chaos.{list}[{i}]")
                    } else {
                        format!("chaos.{list}[{i}].{field}")
                    };
                    errors.push(ConfigError::new(path, msg));
                }
            }
        }
        out
    }
    let mut as_list = |key: &str, errors: &mut Vec<ConfigError>| match map.remove(key) {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(items)) => items,
        Some(other) if key == "context_attacks" => attack_list(other).unwrap_or_else(|e| {
            errors.push(ConfigError::new(format!("chaos.{key}"), e));
            vec![]
        }),
        Some(other) => {
            errors.push(ConfigError::new(
                format!("chaos.{key}"),
                format!("expected a list, found {other}"),
            ));
            vec![]
        }
    };
    let tool_faults = as_list("tool_faults", errors);
    let llm_faults = as_list("llm_faults", errors);
    let attacks = as_list("context_attacks", errors);
    let mut index = vec![];
    let spec = ChaosSpec {
        tool_faults: rules(tool_faults, "tool_faults", errors, &mut index),
        llm_faults: rules(llm_faults, "llm_faults", errors, &mut index),
        context_attacks: ContextAttacks::new(rules(attacks, "context_attacks", errors, &mut index)),
        mark_responses: map
            .remove("mark_responses")
            .and_then(|v| section(v, "chaos.mark_responses", errors))
            .unwrap_or(false),
    };
    for key in map.keys() {
        let msg = "unknown field; expected one of tool_faults, llm_faults, context_attacks, mark_responses";
        errors.push(ConfigError::new(format!("chaos.{key}"), msg));
    }
    (spec, index)
}

/// `(list, index among parsed rules, index in the file)`: rules that failed to parse are
/// left out of the spec, so later checks must map their indices back.
type ChaosIndex = Vec<(&'static str, usize, usize)>;

fn remap_chaos_paths(errors: &mut [ConfigError], index: &ChaosIndex) {
    for e in errors.iter_mut() {
        for (list, parsed, original) in index {
            let from = format!("chaos.{list}[{parsed}]");
            if parsed != original && (e.path == from || e.path.starts_with(&format!("{from}."))) {
                e.path = format!("chaos.{list}[{original}]{}", &e.path[from.len()..]);
                break;
            }
        }
    }
}

/// Deserializes one section; on failure records the error with its full path.
fn section<T: DeserializeOwned>(v: Value, name: &str, errors: &mut Vec<ConfigError>) -> Option<T> {
    match serde_path_to_error::deserialize::<_, T>(v) {
        Ok(t) => Some(t),
        Err(e) => {
            let inner = e.path().to_string();
            let path = if inner == "." {
                name.to_string()
            } else {
                join_path(name, &inner)
            };
            errors.push(ConfigError::new(path, e.into_inner().to_string()));
            None
        }
    }
}

/// Deserializes a list element by element, so every bad element is reported.
fn list<T: DeserializeOwned>(v: Value, name: &str, errors: &mut Vec<ConfigError>) -> Vec<T> {
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
                format!("expected a list, found {other}"),
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

/// Relative paths are relative to the config file's folder (like compose files).
fn resolve_paths(c: &mut Config, base: &Path) {
    let fix = |p: &mut PathBuf| {
        if p.is_relative() {
            *p = base.join(&*p);
        }
    };
    fix(&mut c.ca.dir);
    fix(&mut c.data_dir);
    if let Some(p) = c.proxy.upstream_ca_file.as_mut() {
        fix(p);
    }
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
