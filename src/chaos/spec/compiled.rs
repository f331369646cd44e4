//! `CompiledChaos`: a `ChaosSpec` checked and compiled once (design.md §8 rule 2; the
//! spec → compiled `TryFrom` of linkerd2-proxy is the model). Every numeric field is
//! checked against its range and every `match_url` glob is built into one `GlobSet` here,
//! and nowhere else: config loading, `PUT /v1/chaos`, profiles and contract scenarios all
//! come through `compile`, and the runtime (`chaos::RuleSet::new`) only adds counters.
//!
//! Checks that need the rest of the config (tool names, duplicate ids, required fields)
//! are `config::compile_chaos`'s; it calls `compile` for the rest.

use std::sync::Arc;

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::{Serialize, Serializer};

use super::{ChaosSpec, Rule, ranges};
use crate::globs;

/// A checked spec and its compiled globs; cheap to clone.
#[derive(Clone)]
pub struct CompiledChaos(Arc<Inner>);

struct Inner {
    spec: ChaosSpec,
    globs: GlobSet,
    /// Each rule's index in `globs`, in the order tool_faults, llm_faults, context_attacks.
    glob_of: Vec<Option<usize>>,
    /// Each rule's MCP selectors, in the same order.
    mcp_of: Vec<McpSelect>,
}

/// A rule's MCP selectors (`mcp_tool`, `mcp_method`), compiled.
#[derive(Debug, Clone, Default)]
pub struct McpSelect {
    pub tool: Option<GlobMatcher>,
    pub method: Option<GlobMatcher>,
}

impl McpSelect {
    /// Whether the rule names an MCP tool or method (and so applies to MCP requests only).
    pub fn any(&self) -> bool {
        self.tool.is_some() || self.method.is_some()
    }
}

/// MCP selectors on a rule that acts on LLM calls (LLM faults, attacks on LLM requests),
/// which carry no MCP message: `why`.
fn no_mcp_select<M>(r: &Rule<M>, why: &str) -> Vec<(&'static str, String)> {
    let set = [
        ("mcp_tool", r.common.mcp_tool.is_some()),
        ("mcp_method", r.common.mcp_method.is_some()),
    ];
    set.into_iter()
        .filter(|(_, s)| *s)
        .map(|(f, _)| (f, why.to_string()))
        .collect()
}

/// MCP selectors on an attack that rewrites LLM requests: none of MCP's messages is its.
fn llm_attack_select(r: &Rule<super::AttackMode>) -> Vec<(&'static str, String)> {
    if !r.mode.on_llm_requests() {
        return vec![];
    }
    let why = format!(
        "`{}` rewrites LLM requests, not MCP messages",
        r.mode.name()
    );
    no_mcp_select(r, &why)
}

/// `mcp_tool` and `mcp_method` of a rule, compiled; problems name the field.
fn mcp_select<M>(r: &Rule<M>) -> (McpSelect, Vec<(&'static str, String)>) {
    let mut problems = vec![];
    let mut glob = |field: &'static str, g: Option<&str>| {
        let g = g?;
        match Glob::new(g) {
            Ok(g) if !g.glob().is_empty() => Some(g.compile_matcher()),
            Ok(_) => {
                problems.push((field, "needs a name or a glob".to_string()));
                None
            }
            Err(e) => {
                problems.push((field, format!("invalid glob: {}", e.kind())));
                None
            }
        }
    };
    let select = McpSelect {
        tool: glob("mcp_tool", r.common.mcp_tool.as_deref()),
        method: glob("mcp_method", r.common.mcp_method.as_deref()),
    };
    (select, problems)
}

/// One problem found by `compile`: the rule (`list[index]`), the field and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", self.path())]
pub struct Problem {
    pub list: &'static str,
    pub index: usize,
    pub field: &'static str,
    pub message: String,
}

impl Problem {
    /// `tool_faults[1].delay_ms` (the path under the `chaos:` section).
    pub fn path(&self) -> String {
        format!("{}[{}].{}", self.list, self.index, self.field)
    }
}

impl CompiledChaos {
    /// Checks and compiles `spec`; on failure, every problem (each rule's bad glob first,
    /// then its numbers out of range), in rule order.
    pub fn compile(spec: ChaosSpec) -> Result<CompiledChaos, Vec<Problem>> {
        let mut problems = vec![];
        let mut builder = GlobSetBuilder::new();
        let mut count = 0;
        let mut glob_of = vec![];
        let mut mcp_of = vec![];
        let mut rule = |list: &'static str, index: usize, match_url: Option<&str>, numbers| {
            let glob = match match_url.map(globs::url_glob) {
                None => None,
                Some(Ok(g)) => {
                    builder.add(g);
                    count += 1;
                    Some(count - 1)
                }
                Some(Err(e)) => {
                    problems.push(Problem {
                        list,
                        index,
                        field: "match_url",
                        message: format!("invalid glob: {e}"),
                    });
                    None
                }
            };
            glob_of.push(glob);
            let numbers: Vec<(&'static str, String)> = numbers;
            problems.extend(numbers.into_iter().map(|(field, message)| Problem {
                list,
                index,
                field,
                message,
            }));
        };
        fn url<M>(r: &Rule<M>) -> Option<&str> {
            r.common.match_url.as_deref()
        }
        for (i, r) in spec.tool_faults.iter().enumerate() {
            let (select, mut found) = mcp_select(r);
            mcp_of.push(select);
            found.extend(ranges::check_rule(r));
            found.extend(super::fit::check_tool_rule(r));
            rule("tool_faults", i, url(r), found);
        }
        for (i, r) in spec.llm_faults.iter().enumerate() {
            let mut found = ranges::check_rule(r);
            found.extend(super::fit::check_llm_rule(r));
            found.extend(no_mcp_select(r, "llm_faults apply to LLM calls, not MCP"));
            mcp_of.push(McpSelect::default());
            rule("llm_faults", i, url(r), found);
        }
        for (i, r) in spec.context_attacks.rules().iter().enumerate() {
            let (select, mut found) = mcp_select(r);
            found.extend(llm_attack_select(r));
            mcp_of.push(select);
            found.extend(ranges::check_rule(r));
            rule("context_attacks", i, url(r), found);
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        // Each glob built above; a set of them fails only past regex size limits.
        let globs = builder.build().map_err(|e| {
            vec![Problem {
                list: "rules",
                index: 0,
                field: "match_url",
                message: format!("the globs do not compile together: {e}"),
            }]
        })?;
        Ok(CompiledChaos(Arc::new(Inner {
            spec,
            globs,
            glob_of,
            mcp_of,
        })))
    }

    /// These rules with `mark_responses` set to `mark` (a flag nothing checks).
    pub fn with_mark_responses(self, mark: bool) -> CompiledChaos {
        let mut inner = Inner {
            spec: self.0.spec.clone(),
            globs: self.0.globs.clone(),
            glob_of: self.0.glob_of.clone(),
            mcp_of: self.0.mcp_of.clone(),
        };
        inner.spec.mark_responses = mark;
        CompiledChaos(Arc::new(inner))
    }

    pub fn spec(&self) -> &ChaosSpec {
        &self.0.spec
    }

    /// Every rule's `match_url`, compiled into one set.
    pub fn globs(&self) -> &GlobSet {
        &self.0.globs
    }

    /// Each rule's index in `globs()`, in the order tool_faults, llm_faults, context_attacks.
    pub fn glob_of(&self) -> &[Option<usize>] {
        &self.0.glob_of
    }

    /// Each rule's MCP selectors, in the same order as `glob_of`.
    pub fn mcp_of(&self) -> &[McpSelect] {
        &self.0.mcp_of
    }
}

/// For specs built in code (tests, embedders): the same single path, first problem only.
impl TryFrom<&ChaosSpec> for CompiledChaos {
    type Error = Problem;

    fn try_from(spec: &ChaosSpec) -> Result<Self, Problem> {
        CompiledChaos::compile(spec.clone()).map_err(|problems| {
            // `compile` fails with at least one problem; never a panic if it did not.
            problems.into_iter().next().unwrap_or_else(|| Problem {
                list: "rules",
                index: 0,
                field: "spec",
                message: "the rules did not compile".into(),
            })
        })
    }
}

impl Default for CompiledChaos {
    fn default() -> Self {
        CompiledChaos(Arc::new(Inner {
            spec: ChaosSpec::default(),
            globs: GlobSet::empty(),
            glob_of: vec![],
            mcp_of: vec![],
        }))
    }
}

impl std::ops::Deref for CompiledChaos {
    type Target = ChaosSpec;

    fn deref(&self) -> &ChaosSpec {
        &self.0.spec
    }
}

impl std::fmt::Debug for CompiledChaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.spec.fmt(f)
    }
}

impl PartialEq for CompiledChaos {
    fn eq(&self, other: &Self) -> bool {
        self.0.spec == other.0.spec
    }
}

/// Serialized as its spec (`GET /v1/chaos`, reports).
impl Serialize for CompiledChaos {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.spec.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{Overrides, load_with_env, parse_chaos};

    fn load(yaml: &str) -> crate::config::Loaded {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flakestorm.yaml");
        std::fs::write(&path, yaml).unwrap();
        load_with_env(Some(&path), &Overrides::default(), &BTreeMap::new()).unwrap()
    }

    const RULES: &str = "
tools: [{name: search, match_url: 'https://s.example/*'}]
chaos:
  tool_faults:
    - {tool: search, mode: error, error_code: 503, match_url: 'https://s.example/v2/*'}
    - {tool: search, mode: timeout}
  llm_faults:
    - {mode: rate_limit, match_url: 'https://api.openai.com/*'}
";

    #[test]
    fn loading_hands_the_runtime_compiled_globs() {
        let loaded = load(RULES);
        let chaos = &loaded.config.chaos;
        assert_eq!(chaos.globs().len(), 2, "one glob per match_url");
        assert_eq!(chaos.glob_of(), [Some(0), None, Some(1)]);
        assert!(
            chaos
                .globs()
                .is_match("https://api.openai.com/v1/chat/completions")
        );
        // The engine installs them as they are: the rule with a glob matches through it.
        let rules = crate::chaos::RuleSet::new(chaos);
        let target = crate::exchange::Target::Tool {
            name: "search".into(),
        };
        let hit = rules
            .decide("https://s.example/v2/q", &target, None, 1)
            .fault;
        assert_eq!(
            hit.map(|f| f.rule_id.to_string()),
            Some("tool_faults[0]".into())
        );
    }

    #[test]
    fn scenarios_and_the_control_api_are_compiled_by_the_same_path() {
        let loaded = load(&format!(
            "{RULES}golden_prompts: [q]\ncontract:\n  name: c\n  invariants: [{{id: fast, type: latency, max_ms: 9}}]\n  chaos_matrix:\n    - {{name: s, llm_faults: [{{mode: empty, match_url: 'https://x/*'}}]}}\n"
        ));
        let scenario = &loaded.config.contract.as_ref().unwrap().chaos_matrix[0].chaos;
        assert_eq!(scenario.glob_of(), [Some(0)]);
        let body = serde_json::to_value(loaded.config.chaos.spec()).unwrap();
        let (api, _) = parse_chaos(body, &loaded.config.tools).unwrap();
        assert_eq!(api, loaded.config.chaos);
        assert_eq!(api.glob_of(), loaded.config.chaos.glob_of());
    }

    #[test]
    fn every_problem_is_found_in_rule_order_and_code_gets_the_first() {
        let spec: ChaosSpec = serde_json::from_value(serde_json::json!({
            "tool_faults": [{"mode": "error", "error_code": 700, "match_url": "a[", "probability": 2}],
            "llm_faults": [{"mode": "response_drift", "factor": 1e12}],
        }))
        .unwrap();
        let paths: Vec<String> = CompiledChaos::compile(spec.clone())
            .unwrap_err()
            .iter()
            .map(Problem::path)
            .collect();
        assert_eq!(
            paths,
            [
                "tool_faults[0].match_url",
                "tool_faults[0].probability",
                "tool_faults[0].error_code",
                "llm_faults[0].factor"
            ]
        );
        let first = CompiledChaos::try_from(&spec).unwrap_err().to_string();
        assert!(
            first.starts_with("tool_faults[0].match_url: invalid glob"),
            "{first}"
        );
    }

    #[test]
    fn data_fault_and_times_problems_are_found_at_their_paths() {
        let spec: ChaosSpec = serde_json::from_value(serde_json::json!({
            "tool_faults": [
                {"tool": "*", "mode": "corrupt", "fields": ["$.ok", "$.a["], "times": 0},
                {"tool": "*", "mode": "stale", "days": 36501},
                {"tool": "*", "mode": "empty", "times": 3}
            ],
            "context_attacks": [{"type": "mcp_rug_pull", "times": 0}],
        }))
        .unwrap();
        let problems: Vec<String> = CompiledChaos::compile(spec)
            .unwrap_err()
            .iter()
            .map(|p| format!("{}: {}", p.path(), p.message))
            .collect();
        assert_eq!(
            problems,
            [
                "tool_faults[0].times: 0 is outside 1..=1000000000 (a rule that must never fire should be removed)",
                "tool_faults[0].fields: `$.a[` (entry 1) is not a JSON path: unclosed `[` at character 4",
                "tool_faults[1].days: 36501 is outside 1..=36500 (up to a hundred years)",
                "context_attacks[0].times: 0 is outside 1..=1000000000 (a rule that must never fire should be removed)",
            ]
        );
    }
}
