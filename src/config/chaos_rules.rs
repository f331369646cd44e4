//! A chaos spec's rules (the `chaos:` section, a scenario's, a profile's, a `PUT
//! /v1/chaos` body) checked against the declared tools and compiled, every problem at its
//! path in rule order: the one way a spec becomes rules.

use std::collections::HashSet;

use super::ConfigError;
use super::chaos::{ChaosSpec, Common, CompiledChaos};
use super::schema::ToolSpec;

/// The one way a chaos spec becomes rules: checked against the declared tools, then
/// compiled (`CompiledChaos::compile`: ranges, globs); every problem, each with its path
/// starting with `prefix`, in rule order.
pub fn compile_chaos(
    spec: &ChaosSpec,
    tools: &[ToolSpec],
    prefix: &str,
) -> Result<CompiledChaos, Vec<ConfigError>> {
    let mut errors = vec![];
    let (compiled, problems) = match CompiledChaos::compile(spec.clone()) {
        Ok(c) => (Some(c), vec![]),
        Err(p) => (None, p),
    };
    // `compile`'s problems of one rule field, reported where the checks below used to
    // make them, so the order of errors stays per rule.
    let of = |list: &str, i: usize, glob: bool| -> Vec<(&'static str, String)> {
        problems
            .iter()
            .filter(|p| p.list == list && p.index == i && (p.field == "match_url") == glob)
            .map(|p| (p.field, p.message.clone()))
            .collect()
    };
    let at = |list: &str, i: usize, field: &str| {
        let base = if prefix.is_empty() {
            format!("{list}[{i}]")
        } else {
            format!("{prefix}.{list}[{i}]")
        };
        if field.is_empty() {
            base
        } else {
            format!("{base}.{field}")
        }
    };
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut ids = HashSet::new();
    let mut common = |list: &str, i: usize, c: &Common, errors: &mut Vec<ConfigError>| {
        for (field, msg) in of(list, i, true) {
            errors.push(ConfigError::new(at(list, i, field), msg));
        }
        if let Some(id) = c.id.as_ref().filter(|id| !ids.insert((*id).clone())) {
            errors.push(ConfigError::new(
                at(list, i, "id"),
                format!("duplicate rule id `{id}`"),
            ));
        }
        // Without any `tools:` (a Flakestorm v2 file) names cannot be checked; `load` warns.
        if let Some(t) = c
            .tool
            .as_deref()
            .filter(|t| *t != "*" && !names.is_empty() && !names.contains(t))
        {
            let msg = format!(
                "`{t}` is not a name from `tools:` (declared: {}) or \"*\"",
                names.join(", ")
            );
            errors.push(ConfigError::new(at(list, i, "tool"), msg));
        }
    };
    // Every numeric field against its range (config::chaos::ranges), as `compile` found.
    let numbers = |list: &str, i: usize, errors: &mut Vec<_>| {
        for (field, msg) in of(list, i, false) {
            errors.push(ConfigError::new(at(list, i, field), msg));
        }
    };
    for (i, r) in spec.tool_faults.iter().enumerate() {
        common("tool_faults", i, &r.common, &mut errors);
        if r.common.tool.is_none() {
            errors.push(ConfigError::new(
                at("tool_faults", i, "tool"),
                "required: a name from `tools:`, or \"*\" for every tool",
            ));
        }
        if r.common.provider.is_some() {
            errors.push(ConfigError::new(
                at("tool_faults", i, "provider"),
                "only llm_faults and context_attacks take a provider",
            ));
        }
        numbers("tool_faults", i, &mut errors);
    }
    for (i, r) in spec.llm_faults.iter().enumerate() {
        common("llm_faults", i, &r.common, &mut errors);
        if r.common.tool.is_some() {
            errors.push(ConfigError::new(
                at("llm_faults", i, "tool"),
                "llm_faults apply to LLM calls; use provider or match_url to narrow them",
            ));
        }
        numbers("llm_faults", i, &mut errors);
    }
    for (i, r) in spec.context_attacks.rules().iter().enumerate() {
        common("context_attacks", i, &r.common, &mut errors);
        numbers("context_attacks", i, &mut errors);
        let empty = r.mode.lacks_payload();
        if empty {
            errors.push(ConfigError::new(
                at("context_attacks", i, ""),
                format!("`{}` needs a non-empty payload", r.mode.name()),
            ));
        }
    }
    errors.extend(unattributed(&problems, prefix));
    match compiled {
        Some(c) if errors.is_empty() => Ok(c),
        _ => Err(errors),
    }
}

/// `compile`'s problems that belong to no single rule (the globs of all rules failing to
/// build together), which the per-rule walk above does not report.
fn unattributed(problems: &[super::chaos::Problem], prefix: &str) -> Vec<ConfigError> {
    let path = if prefix.is_empty() { "chaos" } else { prefix };
    let rule_lists = ["tool_faults", "llm_faults", "context_attacks"];
    problems
        .iter()
        .filter(|p| !rule_lists.contains(&p.list))
        .map(|p| ConfigError::new(path, p.message.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::chaos::Problem;

    #[test]
    fn a_problem_of_no_single_rule_is_still_reported() {
        let problems = [
            Problem {
                list: "tool_faults",
                index: 0,
                field: "delay_ms",
                message: "out of range".into(),
            },
            Problem {
                list: "rules",
                index: 0,
                field: "match_url",
                message: "the globs do not compile together: too big".into(),
            },
        ];
        let errors = unattributed(&problems, "contract.chaos_matrix[1]");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "contract.chaos_matrix[1]: the globs do not compile together: too big"
        );
    }
}
