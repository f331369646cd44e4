//! The config a run ran with, as a shard's report carries it so that `report merge DIR`
//! needs no config file (docs/scale.md): the file layered with `FLAKESTORM_*` variables and
//! flags, `${VAR}`s expanded, less what a merge never reads and with every credential
//! taken out. What the report already shows (prompts, invariants, scenarios, rules) is
//! kept word for word, so the merge judges exactly what the shards ran.
//!
//! Taken out: the daemon's own sections (`proxy` but `max_rewrite_bytes`, `control`, `ca`,
//! `journal`, `telemetry`); every field named like a credential (`api_key`, `token`,
//! `password`…: left out, as if unset); every value of a `headers` mapping and of
//! `agent.env` but the proxy variables (`(redacted)`); the user and password of the URLs
//! in `agent`, `model` and `advanced`, and their credential query values; and in `agent`,
//! token-like URL path segments and the words of its command line that are keys (`scrub`).
//!
//! A carried config is a report's, which anyone may have written: what it may make a merge
//! open is confined to the working directory (`escapes`, `confine`).

use std::path::{Component, Path};

use serde_json::{Map, Value};

use super::scrub::{self, REDACTED, credential_name};

/// Sections a merge never reads: the daemon's listeners, CA, journal and exports.
const DROPPED: &[&str] = &["control", "ca", "journal", "telemetry"];

/// Sections whose URLs are an endpoint's (a provider, the embeddings service): cleaned of
/// credentials. Every other section but `agent` is what a report shows: kept as written.
const ENDPOINTS: &[&str] = &["model", "advanced"];

/// What may differ between the shards of one run (each pod's own agent, folders and
/// pace): not compared by `comparable`, never read by a merge.
const PER_SHARD: &[&[&str]] = &[
    &["output"],
    &["data_dir"],
    &["agent", "endpoint"],
    &["agent", "ready_url"],
    &["agent", "settle_url"],
    &["agent", "reset_endpoint"],
    &["agent", "instances"],
    &["advanced", "concurrency"],
];

/// The config to carry, from the layered root with its `${VAR}`s expanded.
pub fn carry(expanded: &Value) -> Value {
    let mut out = Map::new();
    let Some(expanded) = expanded.as_object() else {
        return Value::Object(out);
    };
    for (section, value) in expanded {
        if DROPPED.contains(&section.as_str()) {
            continue;
        }
        let value = match section.as_str() {
            "proxy" => match value.get("max_rewrite_bytes") {
                Some(v) => serde_json::json!({ "max_rewrite_bytes": v }),
                None => continue,
            },
            _ => value.clone(),
        };
        let at = Walk {
            path: vec![section.clone()],
        };
        out.insert(section.clone(), at.clean(value));
    }
    Value::Object(out)
}

/// `carried` without what may differ between the shards of one run (`PER_SHARD`).
pub fn comparable(carried: &Value) -> Value {
    let mut v = carried.clone();
    for path in PER_SHARD {
        let (last, parents) = path.split_last().unwrap_or((&"", &[]));
        let parent = parents.iter().try_fold(&mut v, |v, k| v.get_mut(*k));
        if let Some(Value::Object(map)) = parent {
            map.remove(*last);
        }
    }
    v
}

/// Where in the config a value is.
struct Walk {
    path: Vec<String>,
}

impl Walk {
    fn child(&self, key: &str) -> Walk {
        let mut path = self.path.clone();
        path.push(key.to_string());
        Walk { path }
    }

    /// `value` cleaned of credentials.
    fn clean(&self, value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let cleaned = map.into_iter().filter_map(|(k, v)| {
                    let at = self.child(&k);
                    // Left out whole: a placeholder would load as a literal key.
                    let credential = !at.redacted_whole() && credential_name(&k);
                    (!(credential && v.is_string())).then(|| (k, at.clean(v)))
                });
                Value::Object(cleaned.collect())
            }
            Value::Array(items) => {
                let cleaned = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| self.child(&i.to_string()).clean(v));
                Value::Array(cleaned.collect())
            }
            Value::String(s) => Value::String(self.string(&s)),
            v @ (Value::Null | Value::Bool(_) | Value::Number(_)) => v,
        }
    }

    fn parent(&self) -> Option<&str> {
        let i = self.path.len().checked_sub(2)?;
        Some(self.path[i].as_str())
    }

    /// `agent.env`'s variable here, if this is one.
    fn agent_env(&self) -> Option<&str> {
        let env = self.path.len() == 3 && self.path[0] == "agent" && self.parent() == Some("env");
        env.then(|| self.path[2].as_str())
    }

    /// A value of a `headers` mapping, or of `agent.env` but for the proxy variables.
    fn redacted_whole(&self) -> bool {
        self.parent() == Some("headers")
            || self
                .agent_env()
                .is_some_and(|name| !super::PROXY_VARS.contains(&name))
    }

    fn string(&self, s: &str) -> String {
        if self.redacted_whole() {
            return REDACTED.into();
        }
        let section = self.path[0].as_str();
        let out = match section {
            // The proxy variables are read by the verdict (`NO_PROXY`'s hosts).
            "agent" if self.agent_env().is_some() => scrub::urls(s, false),
            "agent" if s.contains("://") => scrub::urls(s, true),
            "agent" => scrub::words(s),
            _ if ENDPOINTS.contains(&section) => scrub::urls(s, false),
            _ => s.to_string(),
        };
        // Carried expanded: a `$` it holds is literal when the merge loads it again.
        out.replace('$', "$$")
    }
}

/// Whether `p`, a path a carried config names, reaches outside the working directory:
/// absolute, through `..`, or through a symbolic link below it that leads out (a folder of
/// shard reports unpacked from an archive may hold one).
pub fn escapes(p: &Path) -> bool {
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return true;
    }
    let Ok(here) = std::path::Path::new(".").canonicalize() else {
        return true;
    };
    // The deepest part of `p` that exists, resolved: a file or folder to be made is
    // inside when its closest existing folder is.
    let mut probe = here.join(p);
    loop {
        if let Ok(real) = probe.canonicalize() {
            return !real.starts_with(&here);
        }
        if !probe.pop() {
            return true;
        }
    }
}

/// Why a carried config may not open a file that `escapes` the working directory.
pub const OUTSIDE: &str = "outside the working directory: a merge without a config file opens \
                           only files below it (a shard report names them); merge with the \
                           config file (-c FILE)";

/// What a carried config `c` names that a merge would open outside the working directory
/// (its session files and tapes; its pricing file: `load`'s policy), each an error naming
/// its field, and its embeddings endpoint, which a merge would send the cases' answers to.
pub(super) fn confine(c: &super::schema::Config) -> Vec<super::ConfigError> {
    let mut named: Vec<(String, &Path)> = vec![];
    for (i, s) in c.replays.sessions.iter().enumerate() {
        match s {
            super::replays::SessionEntry::File(p) => {
                named.push((format!("replays.sessions[{i}]"), p))
            }
            super::replays::SessionEntry::Inline(s) => {
                if let Some(t) = &s.tape {
                    named.push((format!("replays.sessions[{i}].tape"), t));
                }
            }
        }
    }
    let mut errors: Vec<super::ConfigError> = named
        .into_iter()
        .filter(|(_, p)| escapes(p))
        .map(|(at, p)| super::ConfigError::new(at, format!("`{}`: {OUTSIDE}", p.display())))
        .collect();
    if c.advanced.embeddings.is_some() && c.compares_answers() {
        errors.push(super::ConfigError::new(
            "advanced.embeddings",
            "the shards' checks compare answers through an embeddings endpoint, which a merge \
             asks again: a merge without a config file sends nothing to an endpoint a shard \
             report names; merge with the config file (-c FILE)",
        ));
    }
    errors
}

#[cfg(test)]
#[path = "carried_tests.rs"]
mod tests;
