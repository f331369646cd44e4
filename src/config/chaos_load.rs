//! Loading the `chaos:` section (and chaos rules sent to the control API): rule by rule,
//! so every bad rule is reported with its path, with Flakestorm v2 leniency for fields a
//! mode does not use.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ConfigError;
use super::de::section;
use super::schema::{Config, ToolSpec};
use crate::chaos::spec::{
    ChaosSpec, CompiledChaos, ContextAttacks, Rule, attack_list, parse_rule, ranges,
};

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

/// Removes them, with a warning each; returns what it removed (list, rule index, field) for
/// `flakestorm migrate`.
pub(super) fn lenient_v2_fields(
    chaos: &mut Value,
    prefix: &str,
    warnings: &mut Vec<String>,
) -> Vec<(&'static str, usize, &'static str)> {
    use crate::chaos::spec::{LlmMode, ToolMode};
    let mut removed = vec![];
    for list in ["tool_faults", "llm_faults"] {
        let Some(Value::Array(rules)) = chaos.get_mut(list) else {
            continue;
        };
        for (i, rule) in rules.iter_mut().enumerate() {
            let parse = |r: Value| match list {
                "tool_faults" => parse_rule::<ToolMode>(r).err().map(|(_, e)| e),
                _ => parse_rule::<LlmMode>(r).err().map(|(_, e)| e),
            };
            for field in super::v2::drop_unknown(rule, V2_FAULT_FIELDS, parse) {
                let mode = rule.get("mode").and_then(Value::as_str).unwrap_or("?");
                warnings.push(format!(
                    "{prefix}.{list}[{i}].{field}: not used by mode `{mode}`; ignored"
                ));
                removed.push((list, i, field));
            }
        }
    }
    removed
}

/// What the chaos rules say of tools that cannot hold: see the two below.
pub(super) fn warn_tools(c: &Config, warnings: &mut Vec<String>) {
    warn_unroutable_tools(c, warnings);
    warn_mcp_rules_on_http_tools(c, warnings);
}

/// An MCP mode or selector on a tool declared without `protocol: mcp`: it acts only if MCP
/// traffic is recognised on that tool's URLs (by the transport's headers).
fn warn_mcp_rules_on_http_tools(c: &Config, warnings: &mut Vec<String>) {
    use super::schema::ToolProtocol;
    let http = |name: &str| {
        c.tools
            .iter()
            .any(|t| t.name == name && t.protocol == ToolProtocol::Http)
    };
    let scenarios = c.contract.iter().flat_map(|k| k.chaos_matrix.iter());
    let specs = std::iter::once(("chaos".to_string(), &c.chaos)).chain(
        scenarios
            .enumerate()
            .map(|(i, s)| (format!("contract.chaos_matrix[{i}]"), &s.chaos)),
    );
    let mcp = |c: &crate::chaos::spec::Common, only: bool| {
        only || c.mcp_tool.is_some() || c.mcp_method.is_some()
    };
    for (at, spec) in specs {
        let faults = spec.tool_faults.iter().enumerate().map(|(i, r)| {
            let path = format!("{at}.tool_faults[{i}]");
            (
                path,
                &r.common,
                mcp(&r.common, r.mode.mcp_only()),
                r.mode.name(),
            )
        });
        let attacks = spec
            .context_attacks
            .rules()
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let path = format!("{at}.context_attacks[{i}]");
                (
                    path,
                    &r.common,
                    mcp(&r.common, r.mode.mcp_only()),
                    r.mode.name(),
                )
            });
        for (path, common, is_mcp, mode) in faults.chain(attacks) {
            if let Some(t) = common.tool.as_deref().filter(|t| is_mcp && http(t)) {
                warnings.push(format!(
                    "{path}: `{mode}` acts on MCP messages and tool `{t}` is not declared \
                     `protocol: mcp`: it applies only where MCP traffic is recognised on its URLs"
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
    let scenarios = c
        .contract
        .iter()
        .flat_map(|k| k.chaos_matrix.iter().map(|s| &s.chaos));
    let mut seen = std::collections::BTreeSet::new();
    let mut any_tool = false;
    for spec in std::iter::once(&c.chaos).chain(scenarios) {
        any_tool |= spec
            .tool_faults
            .iter()
            .any(|r| r.common.tool.as_deref().is_none_or(|t| t == "*"));
        let named = spec
            .tool_faults
            .iter()
            .map(|r| &r.common)
            .chain(spec.context_attacks.rules().iter().map(|r| &r.common));
        for t in named
            .filter_map(|c| c.tool.as_deref())
            .filter(|t| *t != "*")
        {
            if seen.insert(t.to_string()) {
                warnings.push(format!(
                    "chaos: tool `{t}` has no `tools:` entry, so its faults match no request; add \
                     `tools: [{{name: {t}, match_url: [\"https://…/*\"]}}]`"
                ));
            }
        }
    }
    if any_tool {
        warnings.push(
            "chaos: `tool: \"*\"` tool faults with no `tools:` declared: in Flakestorm v2 they \
             faulted the call to the agent endpoint; here they hit the agent's own calls to its \
             tools (every non-LLM request crossing the proxy), never the endpoint. Declare the \
             tools under `tools:` (name and match_url) so faults and reports can name them"
                .into(),
        );
    }
}

/// Parses a chaos spec sent at runtime (control API), with the same checks, paths and v2
/// leniency as the `chaos:` section of a file. Ok carries the warnings.
pub fn parse_chaos(
    v: Value,
    tools: &[ToolSpec],
) -> Result<(CompiledChaos, Vec<String>), Vec<ConfigError>> {
    let mut v = v;
    let mut warnings = vec![];
    let mut errors = vec![];
    lenient_v2_fields(&mut v, "chaos", &mut warnings);
    let (spec, index) = chaos_section(v, "chaos", &mut errors);
    let parsed = errors.len();
    let compiled = super::chaos_rules::compile_chaos(&spec, tools, "chaos");
    if let Err(e) = &compiled {
        errors.extend(e.iter().cloned());
    }
    remap_chaos_paths(&mut errors[parsed..], &index, "chaos");
    match compiled {
        Ok(compiled) if errors.is_empty() => Ok((compiled, warnings)),
        _ => Err(errors),
    }
}

/// The chaos section rule by rule, so every bad rule is reported with its path.
/// `prefix` is the section's path (`chaos`, `contract.chaos_matrix[2]`).
pub(super) fn chaos_section(
    v: Value,
    prefix: &str,
    errors: &mut Vec<ConfigError>,
) -> (ChaosSpec, ChaosIndex) {
    let Value::Object(mut map) = v else {
        errors.push(ConfigError::new(
            prefix,
            "expected a mapping with tool_faults, llm_faults, context_attacks",
        ));
        return (ChaosSpec::default(), ChaosIndex::new());
    };
    fn rules<M: DeserializeOwned>(
        items: Vec<Value>,
        list: &'static str,
        prefix: &str,
        errors: &mut Vec<ConfigError>,
        index: &mut ChaosIndex,
    ) -> Vec<Rule<M>> {
        let mut out = vec![];
        for (i, item) in items.into_iter().enumerate() {
            match parse_rule::<M>(item.clone()) {
                Ok(r) => {
                    index.push((list, out.len(), i));
                    out.push(r);
                }
                Err((field, msg)) => {
                    // A number serde refused (`.nan`, `-1`, past u32) still gets its range.
                    let msg = ranges::explain(&field, item.get(&field), msg);
                    let path = if field.is_empty() {
                        format!("{prefix}.{list}[{i}]")
                    } else {
                        format!("{prefix}.{list}[{i}].{field}")
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
            errors.push(ConfigError::new(format!("{prefix}.{key}"), e));
            vec![]
        }),
        Some(other) => {
            errors.push(ConfigError::new(
                format!("{prefix}.{key}"),
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
        tool_faults: rules(tool_faults, "tool_faults", prefix, errors, &mut index),
        llm_faults: rules(llm_faults, "llm_faults", prefix, errors, &mut index),
        context_attacks: ContextAttacks::new(rules(
            attacks,
            "context_attacks",
            prefix,
            errors,
            &mut index,
        )),
        mark_responses: map
            .remove("mark_responses")
            .and_then(|v| section(v, &format!("{prefix}.mark_responses"), errors))
            .unwrap_or(false),
    };
    for key in map.keys() {
        let msg = "unknown field; expected one of tool_faults, llm_faults, context_attacks, mark_responses";
        errors.push(ConfigError::new(format!("{prefix}.{key}"), msg));
    }
    (spec, index)
}

/// `(list, index among parsed rules, index in the file)`: rules that failed to parse are
/// left out of the spec, so later checks must map their indices back.
pub(super) type ChaosIndex = Vec<(&'static str, usize, usize)>;

pub(super) fn remap_chaos_paths(errors: &mut [ConfigError], index: &ChaosIndex, prefix: &str) {
    for e in errors.iter_mut() {
        for (list, parsed, original) in index {
            let from = format!("{prefix}.{list}[{parsed}]");
            if parsed != original && (e.path == from || e.path.starts_with(&format!("{from}."))) {
                e.path = format!("{prefix}.{list}[{original}]{}", &e.path[from.len()..]);
                break;
            }
        }
    }
}
