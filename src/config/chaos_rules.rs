//! A chaos spec's rules (the `chaos:` section, a scenario's, a profile's, a `PUT
//! /v1/chaos` body) checked against the declared tools and compiled, every problem at its
//! path in rule order: the one way a spec becomes rules.

use std::collections::HashSet;

use super::ConfigError;
use super::schema::ToolSpec;
use crate::chaos::spec::{ChaosSpec, Common, CompiledChaos, Problem, Rule, ToolMode};

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
        if let Some(why) = binary_only(r, tools) {
            c.error(at, "mode", why);
        }
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

/// File types whose bodies are never JSON or text.
const BINARY: &[&str] = &[
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".zip", ".gz", ".tgz", ".tar", ".mp3",
    ".mp4", ".wav", ".ogg", ".bin", ".exe", ".woff", ".woff2", ".ico",
];

/// Why a data fault (`corrupt`, `empty`, `stale`) could never apply: every URL glob of its
/// scope (its `match_url`, else its tool's) ends in a binary file type.
fn binary_only(r: &Rule<ToolMode>, tools: &[ToolSpec]) -> Option<String> {
    if !r.mode.is_data_fault() {
        return None;
    }
    let globs: Vec<&str> = match (&r.common.match_url, r.common.tool.as_deref()) {
        (Some(url), _) => vec![url.as_str()],
        (None, Some(name)) => tools
            .iter()
            .find(|t| t.name == name)?
            .match_url
            .iter()
            .map(String::as_str)
            .collect(),
        (None, None) => return None,
    };
    let binary = |g: &&str| {
        let g = g.to_ascii_lowercase();
        BINARY.iter().any(|ext| g.ends_with(ext))
    };
    (!globs.is_empty() && globs.iter().all(binary)).then(|| {
        format!(
            "`{}` changes JSON or text bodies, and every URL this rule takes ends in a binary \
             file type ({}): it could never apply",
            r.mode.name(),
            globs.join(", ")
        )
    })
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

    use crate::config::load_errors;

    const TOOLS: &str = "tools:\n  - {name: api, match_url: 'https://api.example/*'}\n  - {name: cdn, match_url: ['https://cdn.example/*.png', 'https://cdn.example/*.JPG']}\n";

    /// The errors of one `tool_faults` rule (or several lists' `rules`) with the tools above.
    fn errors_of(rules: &str) -> Vec<String> {
        load_errors(&format!("{TOOLS}chaos:\n{rules}"))
    }

    #[test]
    fn times_zero_is_refused_on_every_kind_of_rule_saying_to_remove_it() {
        let errors = errors_of(
            "  tool_faults: [{tool: api, mode: error, times: 0}]\n  llm_faults: [{mode: rate_limit, times: 0}]\n  context_attacks: [{type: memory_poisoning, payload: x, times: 0}]\n",
        );
        let want =
            "times: 0 is outside 1..=1000000000 (a rule that must never fire should be removed)";
        assert_eq!(
            errors,
            [
                format!("chaos.tool_faults[0].{want}"),
                format!("chaos.llm_faults[0].{want}"),
                format!("chaos.context_attacks[0].{want}"),
            ]
        );
        assert!(
            errors_of("  tool_faults: [{tool: api, mode: error, times: 2, after_calls: 1}]\n")
                .is_empty()
        );
        let big = errors_of("  tool_faults: [{tool: api, mode: error, times: 1000000001}]\n");
        assert_eq!(big.len(), 1);
        assert!(
            big[0].starts_with("chaos.tool_faults[0].times: 1000000001 is outside"),
            "{big:?}"
        );
    }

    #[test]
    fn a_fields_entry_that_is_no_json_path_is_named_with_its_index() {
        let errors = errors_of(
            "  tool_faults: [{tool: api, mode: corrupt, fields: ['$.a', '$.b[*]', '$.a[']}]\n",
        );
        assert_eq!(
            errors,
            [
                "chaos.tool_faults[0].fields: `$.a[` (entry 2) is not a JSON path: unclosed `[` at character 4"
            ]
        );
        assert!(errors_of("  tool_faults: [{tool: api, mode: corrupt, fields: ['$..price', \"$['a b'][0]\"]}]\n").is_empty());
    }

    #[test]
    fn days_out_of_range_or_missing_is_refused() {
        for (days, want) in [
            (
                "0",
                "chaos.tool_faults[0].days: 0 is outside 1..=36500 (up to a hundred years)",
            ),
            (
                "36501",
                "chaos.tool_faults[0].days: 36501 is outside 1..=36500",
            ),
            ("-3", "chaos.tool_faults[0].days: -3 is outside 1..=36500"),
        ] {
            let errors = errors_of(&format!(
                "  tool_faults: [{{tool: api, mode: stale, days: {days}}}]\n"
            ));
            assert!(
                errors.len() == 1 && errors[0].starts_with(want),
                "{days}: {errors:?}"
            );
        }
        let missing = errors_of("  tool_faults: [{tool: api, mode: stale}]\n");
        assert!(
            missing[0].starts_with("chaos.tool_faults[0].days: missing field `days`"),
            "{missing:?}"
        );
    }

    #[test]
    fn a_data_fault_on_a_tool_whose_urls_are_all_binary_files_is_refused() {
        for rule in [
            "{tool: cdn, mode: corrupt}",
            "{tool: api, mode: stale, days: 3, match_url: 'https://api.example/logo.PNG'}",
            "{tool: '*', mode: empty, match_url: 'https://x.example/*.woff2'}",
        ] {
            let errors = errors_of(&format!("  tool_faults: [{rule}]\n"));
            assert_eq!(errors.len(), 1, "{rule}: {errors:?}");
            assert!(
                errors[0].starts_with("chaos.tool_faults[0].mode: `"),
                "{errors:?}"
            );
            assert!(
                errors[0].contains("ends in a binary file type"),
                "{errors:?}"
            );
        }
        for fine in [
            "{tool: api, mode: corrupt}",
            "{tool: cdn, mode: corrupt, match_url: 'https://cdn.example/meta.json'}",
            "{tool: cdn, mode: malformed}",
            "{tool: '*', mode: empty}",
        ] {
            assert!(
                errors_of(&format!("  tool_faults: [{fine}]\n")).is_empty(),
                "{fine}"
            );
        }
    }

    #[test]
    fn options_of_another_mode_say_whose_they_are() {
        let errors = errors_of("  tool_faults: [{tool: api, mode: empty, fields: ['$.a']}]\n");
        assert_eq!(
            errors,
            [
                "chaos.tool_faults[0].fields: unknown field `fields`, there are no fields; `fields` \
              chooses the values of `corrupt` (`empty` empties the whole body, `stale` moves \
              every date)"
            ]
        );
        let errors = errors_of("  tool_faults: [{tool: api, mode: error, days: 3}]\n");
        assert_eq!(
            errors,
            [
                "chaos.tool_faults[0].days: unknown field `days`, expected `error_code` or \
              `message`; `days` is how far `stale` moves dates back"
            ]
        );
    }

    #[test]
    fn scenarios_and_the_control_api_refuse_the_same_with_their_paths() {
        let errors = load_errors(&format!(
            "{TOOLS}golden_prompts: [q]\ncontract:\n  name: c\n  invariants: [{{id: fast, type: latency, max_ms: 9}}]\n  chaos_matrix:\n    - name: s\n      tool_faults: [{{tool: api, mode: corrupt, times: 0, fields: ['x']}}]\n"
        ));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("contract.chaos_matrix[0].tool_faults[0].times: 0 is outside")
        );
        assert!(
            errors[1].starts_with("contract.chaos_matrix[0].tool_faults[0].fields: `x` (entry 0)")
        );
        let body = serde_json::json!({"tool_faults": [{"tool": "*", "mode": "stale", "days": 0}]});
        let errors = crate::config::parse_chaos(body, &[]).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .to_string()
                .starts_with("chaos.tool_faults[0].days: 0 is outside")
        );
    }

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
