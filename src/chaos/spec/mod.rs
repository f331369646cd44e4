//! The `chaos:` section (config.md): tool faults, LLM faults and context attacks, as closed
//! serde enums tagged by `mode` / `type`. These enums are the schema and the registry of
//! faults: adding a mode means adding a variant, and every `match` on them is exhaustive.
//!
//! Each rule has common fields (`id`, `tool`, `provider`, `match_url`, `probability`,
//! `after_calls`, `times`) and mode fields. `Rule<M>` splits the two so that both halves keep
//! `deny_unknown_fields`: a misspelt field is an error, never ignored.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};

use crate::exchange::Provider as LlmProvider;

mod compiled;
mod fit;
mod kinds;
mod modes;
pub mod ranges;

pub use compiled::{CompiledChaos, McpSelect, Problem};
pub use modes::*;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChaosSpec {
    pub tool_faults: Vec<Rule<ToolMode>>,
    pub llm_faults: Vec<Rule<LlmMode>>,
    pub context_attacks: ContextAttacks,
    /// Add `x-flakestorm-fault: <rule id>` to faulted responses (off: faults look real).
    pub mark_responses: bool,
}

impl ChaosSpec {
    pub fn is_empty(&self) -> bool {
        self.tool_faults.is_empty()
            && self.llm_faults.is_empty()
            && self.context_attacks.rules().is_empty()
    }
}

/// Fields every rule may have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Common {
    /// Stable name for journals, metrics and `mark_responses`; default `<list>[<index>]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool faults: a name from `tools:`, or `*` for every non-LLM request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// LLM faults: only this provider's calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<LlmProvider>,
    /// Glob on the full URL that narrows the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_url: Option<String>,
    /// 0..=1, default 1. Context attacks also accept `trigger_probability`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "trigger_probability"
    )]
    pub probability: Option<f64>,
    /// Fire only after this many matching calls went through untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_calls: Option<u64>,
    /// Fire at most this many times per installed rule set (a run's case, a trial), then
    /// let matching calls through: with `after_calls`, "fail the first N calls, then
    /// succeed".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// MCP: a glob on the MCP tool's name. A `tools/call` of another tool is not matched;
    /// a tool list's edits touch only the tools it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool: Option<String>,
    /// MCP: a glob on the JSON-RPC method (default: `tools/call`, and `tools/list` for the
    /// attacks on tool lists), so `initialize` and listings are left alone unless asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_method: Option<String>,
}

const COMMON_FIELDS: &[&str] = &[
    "id",
    "tool",
    "provider",
    "match_url",
    "probability",
    "trigger_probability",
    "after_calls",
    "times",
    "mcp_tool",
    "mcp_method",
];

/// One rule: common fields plus a closed mode enum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule<M> {
    #[serde(flatten)]
    pub common: Common,
    #[serde(flatten)]
    pub mode: M,
}

impl<'de, M: DeserializeOwned> Deserialize<'de> for Rule<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_rule(serde_json::Value::deserialize(d)?).map_err(|(field, msg)| {
            D::Error::custom(if field.is_empty() {
                msg
            } else {
                format!("{field}: {msg}")
            })
        })
    }
}

/// Parses one rule; an error says which field (`mode`, `delay_ms`, …) and what is wrong.
pub fn parse_rule<M: DeserializeOwned>(v: serde_json::Value) -> Result<Rule<M>, (String, String)> {
    let serde_json::Value::Object(mut all) = v else {
        return Err((String::new(), "expected a mapping of rule fields".into()));
    };
    let original = all.clone();
    let mut common = serde_json::Map::new();
    for key in COMMON_FIELDS {
        if let Some(v) = all.remove(*key) {
            common.insert((*key).to_string(), v);
        }
    }
    let located = |e: serde_path_to_error::Error<serde_json::Error>| {
        let msg = e.inner().to_string();
        let path = e.path().to_string();
        let field = if path != "." {
            path
        } else {
            field_named_in(&msg, &original)
        };
        let msg = match modes::taken_only_by(&field) {
            Some(hint) if msg.starts_with("unknown field") => format!("{msg}; {hint}"),
            Some(_) | None => msg,
        };
        (field, msg)
    };
    let common: Common =
        serde_path_to_error::deserialize(serde_json::Value::Object(common)).map_err(located)?;
    let mode: M =
        serde_path_to_error::deserialize(serde_json::Value::Object(all)).map_err(located)?;
    Ok(Rule { common, mode })
}

/// The field an error message is about: the one it names (`unknown field `x``), or the one
/// holding the value it rejects (`unknown variant `x``), since tagged enums lose paths.
pub(crate) fn field_named_in(
    msg: &str,
    rule: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let quoted = |prefix: &str| {
        msg.strip_prefix(prefix)
            .and_then(|r| r.split('`').next())
            .map(str::to_string)
    };
    if let Some(f) = quoted("unknown field `").or_else(|| quoted("missing field `")) {
        return f;
    }
    if let Some(v) = quoted("unknown variant `")
        && let Some((k, _)) = rule
            .iter()
            .find(|(_, val)| val.as_str() == Some(v.as_str()))
    {
        return k.clone();
    }
    // A number of the wrong kind (`-1` for a u64, 2^32 for a u32) or a non-finite marker
    // (`config::finite`): the field holding that value.
    let number = ["invalid value: integer `", "invalid type: integer `"]
        .iter()
        .chain(&[
            "invalid value: floating point `",
            "invalid type: floating point `",
        ])
        .find_map(|p| quoted(p));
    if let Some(n) = number
        && let Some((k, _)) = rule
            .iter()
            .find(|(_, val)| val.is_number() && val.to_string() == n)
    {
        return k.clone();
    }
    if let Some(rest) = msg.strip_prefix("invalid type: string \"")
        && let Some(s) = rest.split('"').next()
        && let Some((k, _)) = rule
            .iter()
            .find(|(_, val)| val.as_str() == Some(s) && ranges::is_marker(s))
    {
        return k.clone();
    }
    String::new()
}

/// `context_attacks` as a list of rules or as a map `{type: {fields}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ContextAttacks(Vec<Rule<AttackMode>>);

impl ContextAttacks {
    pub fn new(rules: Vec<Rule<AttackMode>>) -> Self {
        ContextAttacks(rules)
    }

    pub fn rules(&self) -> &[Rule<AttackMode>] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ContextAttacks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = attack_list(serde_json::Value::deserialize(d)?).map_err(D::Error::custom)?;
        items
            .into_iter()
            .map(|v| Rule::<AttackMode>::deserialize(v).map_err(D::Error::custom))
            .collect::<Result<_, _>>()
            .map(ContextAttacks)
    }
}

/// `context_attacks` in list form: the map form `{type: {fields}}` becomes a list in type
/// name order.
pub fn attack_list(v: serde_json::Value) -> Result<Vec<serde_json::Value>, String> {
    match v {
        serde_json::Value::Null => Ok(vec![]),
        serde_json::Value::Array(items) => Ok(items),
        serde_json::Value::Object(map) => {
            let map: BTreeMap<String, serde_json::Value> = map.into_iter().collect();
            let mut items = vec![];
            for (kind, fields) in map {
                let mut fields = match fields {
                    serde_json::Value::Object(f) => f,
                    serde_json::Value::Null => serde_json::Map::new(),
                    serde_json::Value::Bool(_)
                    | serde_json::Value::Number(_)
                    | serde_json::Value::String(_)
                    | serde_json::Value::Array(_) => {
                        return Err(format!("{kind}: expected a mapping of fields"));
                    }
                };
                // Flakestorm v2's profiles switch an attack with `enabled`.
                match fields.remove("enabled") {
                    None | Some(serde_json::Value::Bool(true)) => {}
                    Some(serde_json::Value::Bool(false)) => continue,
                    Some(_) => return Err(format!("{kind}.enabled: expected true or false")),
                }
                fields.insert("type".into(), serde_json::Value::String(kind));
                items.push(serde_json::Value::Object(fields));
            }
            Ok(items)
        }
        serde_json::Value::Bool(_)
        | serde_json::Value::Number(_)
        | serde_json::Value::String(_) => {
            Err("expected a list of attacks or a mapping of type -> fields".into())
        }
    }
}
