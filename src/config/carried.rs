//! The config a run ran with, as a shard's report carries it so that `report merge DIR`
//! needs no config file (docs/scale.md): the file layered with `FLAKESTORM_*` variables and
//! flags, `${VAR}`s expanded, less what a merge never reads and with every credential
//! taken out. What the report already shows (prompts, invariants, scenarios, rules) is
//! kept as it ran, so the merge judges exactly what the shards ran.
//!
//! Taken out: the daemon's own sections (`proxy` but `max_rewrite_bytes`, `control`, `ca`,
//! `journal`, `telemetry`); every value of a `headers` mapping and of `agent.env` (the
//! proxy variables aside); every field named like a credential (`token`, `password`,
//! `api_key`…), kept only as a bare `${VAR}` reference (never its value), which the merge
//! expands from its own environment, else left out as if unset; the user and password of any URL and its query values
//! that look like credentials; and, in the `agent` section (its command line, URLs,
//! template), any word that looks like one.

use serde_json::{Map, Value};

use super::redact::looks_secret;

/// What stands where a credential was.
pub const REDACTED: &str = "(redacted)";

/// Sections a merge never reads: the daemon's listeners, CA, journal and exports.
const DROPPED: &[&str] = &["control", "ca", "journal", "telemetry"];

/// Field names whose values are credentials, wherever they are.
const CREDENTIAL_FIELDS: &[&str] = &[
    "token",
    "password",
    "secret",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
];

/// The config to carry: `written` is the layered root before `${VAR}` expansion (to keep a
/// credential field's bare reference), `expanded` the same after it.
pub fn carry(written: &Map<String, Value>, expanded: &Value) -> Value {
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
            // The agent's fields are the only ones a report does not show.
            judged: section != "agent",
            path: vec![section.clone()],
        };
        out.insert(section.clone(), at.clean(value, written.get(section)));
    }
    Value::Object(out)
}

/// Where in the config a value is, and whether its section is judged.
struct Walk {
    judged: bool,
    path: Vec<String>,
}

impl Walk {
    fn child(&self, key: &str) -> Walk {
        let mut path = self.path.clone();
        path.push(key.to_string());
        Walk {
            judged: self.judged,
            path,
        }
    }

    /// `value` cleaned of credentials; `written` is what the file (or a layer) said there.
    fn clean(&self, value: Value, written: Option<&Value>) -> Value {
        match value {
            Value::Object(map) => {
                let cleaned = map.into_iter().filter_map(|(k, v)| {
                    let at = self.child(&k);
                    let w = written.and_then(|w| w.get(&k));
                    // A credential field goes whole (as if unset) unless it is a bare
                    // reference: a placeholder would load as a literal key.
                    let bare = w.and_then(Value::as_str).is_some_and(bare_reference);
                    if v.is_string() && at.credential() && !bare {
                        return None;
                    }
                    Some((k, at.clean(v, w)))
                });
                Value::Object(cleaned.collect())
            }
            Value::Array(items) => {
                let cleaned = items.into_iter().enumerate().map(|(i, v)| {
                    let w = written.and_then(|w| w.get(i));
                    self.child(&i.to_string()).clean(v, w)
                });
                Value::Array(cleaned.collect())
            }
            Value::String(s) => Value::String(self.string(&s, written.and_then(Value::as_str))),
            v @ (Value::Null | Value::Bool(_) | Value::Number(_)) => v,
        }
    }

    /// Whether the value here is a credential: named like one, outside the mappings whose
    /// every value goes.
    fn credential(&self) -> bool {
        let name = self
            .path
            .last()
            .map_or(String::new(), |k| k.to_ascii_lowercase());
        !self.redacted_whole() && CREDENTIAL_FIELDS.iter().any(|f| name.contains(f))
    }

    /// A value of a `headers` mapping, or of `agent.env` but for the proxy variables.
    fn redacted_whole(&self) -> bool {
        let parent = self
            .path
            .len()
            .checked_sub(2)
            .map(|i| self.path[i].as_str());
        let agent_env = self.path.len() == 3 && self.path[0] == "agent" && parent == Some("env");
        parent == Some("headers")
            || (agent_env && !super::PROXY_VARS.contains(&self.path[2].as_str()))
    }

    fn string(&self, s: &str, written: Option<&str>) -> String {
        if self.redacted_whole() {
            return REDACTED.into();
        }
        if self.credential() {
            // Only a bare reference reaches here: it names a variable, the merge expands it.
            return written.unwrap_or(REDACTED).to_string();
        }
        let mut out = without_url_credentials(s);
        if !self.judged {
            out = without_secret_words(&out);
        }
        // Carried expanded: a `$` it holds is literal when the merge loads it again.
        out.replace('$', "$$")
    }
}

/// Whether `p` (as the config wrote it) reaches outside the working directory: absolute,
/// or through `..`. A carried config is a report's, which anyone may have written: it may
/// only name files below where the merge runs.
pub fn outside(p: &std::path::Path) -> bool {
    p.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    })
}

/// Why a carried config may not open a file `outside` the working directory.
pub const OUTSIDE: &str = "outside the working directory: a merge without a config file opens \
                           only files below it (a shard report names them); merge with the \
                           config file (-c FILE)";

/// The session files and tapes a carried config names outside the working directory
/// (`outside`), each an error naming its field (its pricing file: `load`'s policy).
pub(super) fn confine(c: &super::schema::Config) -> Vec<super::ConfigError> {
    let mut named: Vec<(String, &std::path::Path)> = vec![];
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
    named
        .into_iter()
        .filter(|(_, p)| outside(p))
        .map(|(at, p)| super::ConfigError::new(at, format!("`{}`: {OUTSIDE}", p.display())))
        .collect()
}

/// `${NAME}` and nothing else.
fn bare_reference(s: &str) -> bool {
    s.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(super::is_var_name)
}

/// `s` with the user and password of each URL in it, and each query value that looks like
/// a credential, replaced by `REDACTED`.
fn without_url_credentials(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        out.push_str(&url_cleaned(url));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A URL after its `scheme://`: userinfo and secret-looking query values replaced.
fn url_cleaned(url: &str) -> String {
    let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let (authority, path) = url.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    let Some((before, query)) = path.split_once('?') else {
        return format!("{authority}{path}");
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, format!("#{f}")),
        None => (query, String::new()),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if secret_pair(k, v) => format!("{k}={REDACTED}"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{authority}{before}?{}{fragment}", pairs.join("&"))
}

fn secret_pair(key: &str, value: &str) -> bool {
    let key = key.to_ascii_lowercase();
    looks_secret(value) || key == "key" || CREDENTIAL_FIELDS.iter().any(|f| key.contains(f))
}

/// Each whitespace-separated word of `s` that looks like a credential replaced (a key
/// passed on `agent.command`'s line), the spacing kept.
fn without_secret_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        // `--api-key=sk-…`: the value after `=` is judged alone.
        let shown = match word.split_once('=') {
            Some((k, v)) if looks_secret(v) => format!("{k}={REDACTED}"),
            _ if looks_secret(word) => REDACTED.to_string(),
            _ => word.clone(),
        };
        out.push_str(&shown);
        word.clear();
    };
    for c in s.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
#[path = "carried_tests.rs"]
mod tests;
