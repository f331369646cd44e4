//! A chaos spec's rules (the `chaos:` section, a scenario's, a profile's, a `PUT
//! /v1/chaos` body) checked against the declared tools and compiled, every problem at its
//! path in rule order: the one way a spec becomes rules.

use std::collections::HashSet;

use super::ConfigError;
use super::schema::ToolSpec;
use crate::chaos::spec::{ChaosSpec, Common, CompiledChaos, Problem};

/// The one way a chaos spec becomes rules: checked against the declared tools, then
/// compiled (`CompiledChaos::compile`: ranges, globs); every problem, each with its path
/// starting with `prefix`, in rule order.
pub fn compile_chaos(
    spec: &ChaosSpec,
    tools: &[ToolSpec],
    prefix: &str,
) -> Result<CompiledChaos, Vec<ConfigError>> {
    let (compiled, problems) = match CompiledChaos::compile(spec.clone()) {
        Ok(c) => (Some(c), vec![]),
        Err(p) => (None, p),
    };
    let mut c = Checks {
        problems: &problems,
        prefix,
        names: tools.iter().map(|t| t.name.as_str()).collect(),
        ids: HashSet::new(),
        errors: vec![],
    };
    for (i, r) in spec.tool_faults.iter().enumerate() {
        let at = ("tool_faults", i);
        c.common(at, &r.common);
        if r.common.tool.is_none() {
            c.error(
                at,
                "tool",
                "required: a name from `tools:`, or \"*\" for every tool",
            );
        }
        if r.common.provider.is_some() {
            c.error(
                at,
                "provider",
                "only llm_faults and context_attacks take a provider",
            );
        }
        c.numbers(at);
    }
    for (i, r) in spec.llm_faults.iter().enumerate() {
        let at = ("llm_faults", i);
        c.common(at, &r.common);
        if r.common.tool.is_some() {
            let why = "llm_faults apply to LLM calls; use provider or match_url to narrow them";
            c.error(at, "tool", why);
        }
        c.numbers(at);
    }
    for (i, r) in spec.context_attacks.rules().iter().enumerate() {
        let at = ("context_attacks", i);
        c.common(at, &r.common);
        c.numbers(at);
        if r.mode.lacks_payload() {
            c.error(
                at,
                "",
                format!("`{}` needs a non-empty payload", r.mode.name()),
            );
        }
    }
    let mut errors = c.errors;
    errors.extend(unattributed(&problems, prefix));
    match compiled {
        Some(c) if errors.is_empty() => Ok(c),
        _ => Err(errors),
    }
}

/// The checks of one spec's rules, each error at its rule's path.
struct Checks<'a> {
    /// `compile`'s problems, reported per rule where the checks used to make them, so the
    /// order of errors stays per rule.
    problems: &'a [Problem],
    prefix: &'a str,
    /// The names in `tools:`.
    names: Vec<&'a str>,
    /// Rule ids seen so far.
    ids: HashSet<String>,
    errors: Vec<ConfigError>,
}

/// A rule: its list and index.
type At = (&'static str, usize);

impl Checks<'_> {
    /// `{prefix}.{list}[{i}].{field}` (no prefix for a top-level spec, no field for the rule).
    fn path(&self, (list, i): At, field: &str) -> String {
        let base = match self.prefix {
            "" => format!("{list}[{i}]"),
            p => format!("{p}.{list}[{i}]"),
        };
        match field {
            "" => base,
            f => format!("{base}.{f}"),
        }
    }

    fn error(&mut self, at: At, field: &str, message: impl Into<String>) {
        let path = self.path(at, field);
        self.errors.push(ConfigError::new(path, message));
    }

    /// `compile`'s problems of the rule: its `match_url` (`glob`) or its other fields.
    fn compiled(&mut self, (list, i): At, glob: bool) {
        let problems = self.problems;
        let of_rule =
            |p: &&Problem| p.list == list && p.index == i && (p.field == "match_url") == glob;
        for p in problems.iter().filter(of_rule) {
            self.error((list, i), p.field, p.message.clone());
        }
    }

    /// What every rule has: its glob, a unique id, a tool from `tools:`.
    fn common(&mut self, at: At, c: &Common) {
        self.compiled(at, true);
        if let Some(id) = c.id.as_ref().filter(|id| !self.ids.insert((*id).clone())) {
            self.error(at, "id", format!("duplicate rule id `{id}`"));
        }
        // Without any `tools:` (a Flakestorm v2 file) names cannot be checked; `load` warns.
        let names = &self.names;
        let unknown = c
            .tool
            .as_deref()
            .filter(|t| *t != "*" && !names.is_empty() && !names.contains(t));
        if let Some(t) = unknown {
            let msg = format!(
                "`{t}` is not a name from `tools:` (declared: {}) or \"*\"",
                names.join(", ")
            );
            self.error(at, "tool", msg);
        }
    }

    /// Every numeric field against its range (chaos::spec::ranges), as `compile` found.
    fn numbers(&mut self, at: At) {
        self.compiled(at, false);
    }
}

/// `compile`'s problems that belong to no single rule (the globs of all rules failing to
/// build together), which the per-rule walk above does not report.
fn unattributed(problems: &[crate::chaos::spec::Problem], prefix: &str) -> Vec<ConfigError> {
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
    use crate::chaos::spec::Problem;

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
