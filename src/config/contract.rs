//! `golden_prompts` and `contract` (invariants with id, severity, `when` and probes, and the
//! `chaos_matrix` of scenarios) (config.md): what runs check. Parsed element by element so
//! every problem is reported with its path.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ConfigError;
use super::chaos_load::{chaos_section, lenient_v2_fields, remap_chaos_paths};
use super::de::section;
use super::invariants::{check_invariant, check_undeclared_tool};
use super::schema::ToolSpec;
use crate::chaos::spec::CompiledChaos;
use crate::checks::spec::{Check, InvariantSpec, parse_invariant};

/// How much a failed invariant weighs; its name (serde's, strum's: one rule, a test checks)
/// is also how the run store keeps it.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Severity {
    Critical,
    High,
    #[default]
    Medium,
    Low,
}

impl Severity {
    /// Weight in the contract score (design.md §7).
    pub fn weight(self) -> u32 {
        match self {
            Severity::Critical => 3,
            Severity::High => 2,
            Severity::Medium | Severity::Low => 1,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for Severity {
    type Err = String;

    fn from_str(s: &str) -> Result<Severity, String> {
        use strum::IntoEnumIterator;
        Severity::iter().find(|v| v.as_str() == s).ok_or_else(|| {
            let all: Vec<&str> = Severity::iter().map(Severity::as_str).collect();
            format!("unknown severity `{s}` (one of {})", all.join(", "))
        })
    }
}

/// Under which scenarios an invariant is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    #[default]
    Always,
    ToolFaultsActive,
    LlmFaultsActive,
    AnyChaosActive,
    NoChaos,
}

impl std::fmt::Display for When {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            When::Always => "always",
            When::ToolFaultsActive => "tool_faults_active",
            When::LlmFaultsActive => "llm_faults_active",
            When::AnyChaosActive => "any_chaos_active",
            When::NoChaos => "no_chaos",
        })
    }
}

impl When {
    /// Whether a scenario with `chaos` is one this `when` takes. The scenario decides
    /// first; a case of it then by the faults that reached it (`run::when`).
    pub fn holds_under(self, chaos: &crate::chaos::spec::ChaosSpec) -> bool {
        let any = !chaos.is_empty();
        match self {
            When::Always => true,
            When::ToolFaultsActive => !chaos.tool_faults.is_empty(),
            When::LlmFaultsActive => !chaos.llm_faults.is_empty(),
            When::AnyChaosActive => any,
            When::NoChaos => !any,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractInvariant {
    pub id: String,
    pub severity: Severity,
    pub when: When,
    /// Prompts to run instead of the golden prompts for this invariant.
    pub probes: Vec<String>,
    #[serde(flatten)]
    pub invariant: InvariantSpec,
}

/// One entry of the chaos matrix: a named set of faults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub name: String,
    /// Compiled at load (`compile_chaos`); serialized as its spec.
    #[serde(flatten)]
    pub chaos: CompiledChaos,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractSpec {
    pub name: String,
    pub description: Option<String>,
    pub invariants: Vec<ContractInvariant>,
    pub chaos_matrix: Vec<Scenario>,
}

pub(super) fn prompts_section(v: Value, errors: &mut Vec<ConfigError>) -> Vec<String> {
    let prompts: Vec<String> = section(v, "golden_prompts", errors).unwrap_or_default();
    for (i, p) in prompts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.trim().is_empty())
    {
        let _ = p;
        errors.push(ConfigError::new(
            format!("golden_prompts[{i}]"),
            "must not be empty",
        ));
    }
    prompts
}

/// `contract:`; `top_matrix` is a top-level `chaos_matrix:` (accepted there too).
pub(super) fn contract_section(
    v: Value,
    top_matrix: Option<Value>,
    ctx: Context<'_>,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Option<ContractSpec> {
    let tools = ctx.tools;
    let Value::Object(mut map) = v else {
        errors.push(ConfigError::new(
            "contract",
            "expected a mapping with name, invariants, chaos_matrix",
        ));
        return None;
    };
    let name = match map.remove("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n,
        _ => {
            errors.push(ConfigError::new(
                "contract.name",
                "required: a non-empty name",
            ));
            String::new()
        }
    };
    let description = map
        .remove("description")
        .and_then(|d| d.as_str().map(str::to_string));
    let invariants = match map.remove("invariants") {
        Some(Value::Array(items)) if !items.is_empty() => {
            contract_invariants(items, ctx, errors, warnings)
        }
        None | Some(Value::Null | Value::Array(_)) => {
            errors.push(ConfigError::new(
                "contract.invariants",
                "needs at least one invariant",
            ));
            vec![]
        }
        Some(_) => {
            errors.push(ConfigError::new("contract.invariants", "expected a list"));
            vec![]
        }
    };
    let inner = map.remove("chaos_matrix");
    let matrix = match (inner, top_matrix) {
        (Some(_), Some(_)) => {
            errors.push(ConfigError::new(
                "chaos_matrix",
                "given both at the top level and in contract; keep one",
            ));
            vec![]
        }
        (Some(m), None) => scenarios(m, "contract.chaos_matrix", tools, errors, warnings),
        (None, Some(m)) => scenarios(m, "chaos_matrix", tools, errors, warnings),
        (None, None) => vec![],
    };
    for key in map.keys() {
        let msg = "unknown field; expected one of name, description, invariants, chaos_matrix";
        errors.push(ConfigError::new(format!("contract.{key}"), msg));
    }
    Some(ContractSpec {
        name,
        description,
        invariants,
        chaos_matrix: matrix,
    })
}

fn contract_invariants(
    items: Vec<Value>,
    ctx: Context<'_>,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Vec<ContractInvariant> {
    let mut ids = HashSet::new();
    let mut out = vec![];
    for (i, item) in items.into_iter().enumerate() {
        // Checked here, where the index is still the file's.
        let path = format!("contract.invariants[{i}]");
        super::invariants::note_default_prompts(&item, &path, warnings);
        let Some(inv) = contract_invariant(item, &path, &mut ids, errors, warnings) else {
            continue;
        };
        check_invariant(&inv.invariant, &path, errors);
        check_undeclared_tool(&inv.invariant.check, &path, ctx.tools, errors, warnings);
        check_has_prompts(&inv, &path, ctx.golden, errors);
        out.push(inv);
    }
    out
}

/// One contract invariant at `path`; `None` (with the errors recorded) when it does not parse.
fn contract_invariant(
    item: Value,
    path: &str,
    ids: &mut HashSet<String>,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Option<ContractInvariant> {
    let Value::Object(mut map) = item else {
        errors.push(ConfigError::new(
            path,
            "expected a mapping with id and type",
        ));
        return None;
    };
    let mut field = |key: &str| map.remove(key);
    let id = match field("id") {
        Some(Value::String(id)) if !id.is_empty() => id,
        _ => {
            errors.push(ConfigError::new(
                format!("{path}.id"),
                "required: a unique name for this invariant",
            ));
            return None;
        }
    };
    if !ids.insert(id.clone()) {
        errors.push(ConfigError::new(
            format!("{path}.id"),
            format!("duplicate invariant id `{id}`"),
        ));
    }
    let severity = field("severity")
        .and_then(|v| section(v, &format!("{path}.severity"), errors))
        .unwrap_or_default();
    let when = field("when")
        .and_then(|v| section(v, &format!("{path}.when"), errors))
        .unwrap_or_default();
    let probes = field("probes")
        .and_then(|v| section(v, &format!("{path}.probes"), errors))
        .unwrap_or_default();
    let mut item = Value::Object(map);
    super::invariants::lenient_v2_invariant(&mut item, path, warnings);
    match parse_invariant(item) {
        Ok(invariant) => Some(ContractInvariant {
            id,
            severity,
            when,
            probes,
            invariant,
        }),
        Err(e) => {
            errors.push(ConfigError::new(e.path_in(path), e.message));
            None
        }
    }
}

fn scenarios(
    v: Value,
    prefix: &str,
    tools: &[ToolSpec],
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Vec<Scenario> {
    let Value::Array(items) = v else {
        errors.push(ConfigError::new(prefix, "expected a list of scenarios"));
        return vec![];
    };
    let mut names = HashSet::new();
    let mut out = vec![];
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{prefix}[{i}]");
        let Value::Object(mut map) = item else {
            errors.push(ConfigError::new(&path, "expected a mapping with a name"));
            continue;
        };
        let name = match map.remove("name") {
            Some(Value::String(n)) if !n.is_empty() => n,
            _ => {
                errors.push(ConfigError::new(format!("{path}.name"), "required"));
                continue;
            }
        };
        if !names.insert(name.clone()) {
            errors.push(ConfigError::new(
                format!("{path}.name"),
                format!("duplicate scenario `{name}`"),
            ));
        }
        let mut rules = Value::Object(map);
        lenient_v2_fields(&mut rules, &path, warnings);
        let (chaos, index) = chaos_section(rules, &path, errors);
        let parsed = errors.len();
        let chaos = super::chaos_rules::compile_chaos(&chaos, tools, &path).unwrap_or_else(|e| {
            errors.extend(e);
            CompiledChaos::default()
        });
        remap_chaos_paths(&mut errors[parsed..], &index, &path);
        out.push(Scenario { name, chaos });
    }
    out
}

/// What the contract is checked against from the rest of the file.
#[derive(Clone, Copy)]
pub(super) struct Context<'a> {
    pub tools: &'a [ToolSpec],
    /// `golden_prompts` gives prompts (or is broken and already reported).
    pub golden: bool,
}

/// A contract invariant at `path` with nothing to run: no `probes` and no golden prompts.
/// `refusal_check` runs its own `dangerous_prompts`.
pub(super) fn check_has_prompts(
    inv: &ContractInvariant,
    path: &str,
    golden: bool,
    errors: &mut Vec<ConfigError>,
) {
    let own_prompts = matches!(inv.invariant.check, Check::RefusalCheck { .. });
    if !golden && inv.probes.is_empty() && !own_prompts {
        errors.push(ConfigError::new(
            path,
            "no prompts to run: add golden_prompts or probes",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::Severity;
    use strum::IntoEnumIterator;

    #[test]
    fn a_severitys_name_is_serdes_and_reads_back() {
        for s in Severity::iter() {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(s.as_str().parse::<Severity>(), Ok(s));
            assert_eq!(format!("{s:<9}|").len(), 10, "padded as a column");
        }
        let e = "urgent".parse::<Severity>().unwrap_err();
        assert_eq!(
            e,
            "unknown severity `urgent` (one of critical, high, medium, low)"
        );
    }
}
