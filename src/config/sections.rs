//! The config's top-level sections, each read on its own into `Config`, with v2 fields
//! that no longer apply as warnings and unknown sections as errors.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::ConfigError;
use super::chaos_load::{ChaosIndex, chaos_section, lenient_v2_fields};
use super::de::{list, section};
use super::expand::{Lookup, expand_value};
use super::schema::*;
use crate::chaos::spec::ChaosSpec;

/// Sections this build reads.
pub(super) const SECTIONS: &[&str] = &[
    "proxy",
    "control",
    "ca",
    "data_dir",
    "tools",
    "llm",
    "journal",
    "advanced",
    "chaos",
    "agent",
    "invariants",
    "golden_prompts",
    "mutations",
    "model",
    "contract",
    "chaos_matrix",
    "scoring",
    "output",
    "replays",
    "pricing",
    "telemetry",
];

/// The top-level sections read one by one (so one bad section hides none of the others),
/// `${VAR}` expanded in each as it is taken; the chaos spec is compiled later by
/// `validate`, once the tools are known.
pub(super) fn sections(
    root: Map<String, Value>,
    env: &Lookup,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> (Config, ChaosSpec, ChaosIndex) {
    if let Some(why) = session_file(&root) {
        errors.push(ConfigError::new("", why));
        return (Config::default(), ChaosSpec::default(), ChaosIndex::new());
    }
    // Sections are taken in a fixed order (not the file's), so errors always come in it.
    let mut root = Root { root, env };
    let mut c = Config::default();
    platform_sections(&mut root, &mut c, errors);
    // Parsed here, compiled into `c.chaos` by `validate` once the tools are known.
    let (chaos, chaos_index) = match root.take("chaos", errors) {
        Some(mut v) => {
            lenient_v2_fields(&mut v, "chaos", warnings);
            chaos_section(v, "chaos", errors)
        }
        None => (ChaosSpec::default(), ChaosIndex::new()),
    };
    run_sections(&mut root, &mut c, errors, warnings);
    if let Some(v) = root.take("scoring", errors) {
        c.scoring = section(v, "scoring", errors).unwrap_or_default();
        super::output::check_scoring(&c.scoring, errors);
    }
    if let Some(mut v) = root.take("output", errors) {
        super::v2::lenient_output(&mut v, warnings);
        c.output = super::output::output_section(v, errors);
    }
    if let Some(v) = root.take("advanced", errors) {
        c.advanced = advanced(v, warnings, errors).unwrap_or_default();
    }
    if let Some(v) = root.take("replays", errors) {
        c.replays = super::replays::replays_section(v, errors);
        super::replays::check_sources(&c.replays, warnings, errors);
    }
    if let Some(v) = root.take("pricing", errors) {
        c.pricing_spec = super::pricing::pricing_section(v, errors);
    }
    if let Some(v) = root.take("telemetry", errors) {
        c.telemetry = super::telemetry::telemetry_section(v, errors);
    }
    unknown_sections(root.root, errors);
    (c, chaos, chaos_index)
}

/// The file's root mapping, handing out its sections one by one, `${VAR}`s expanded.
struct Root<'a> {
    root: Map<String, Value>,
    env: &'a Lookup<'a>,
}

impl Root<'_> {
    fn take(&mut self, name: &str, errors: &mut Vec<ConfigError>) -> Option<Value> {
        let mut v = self.root.remove(name)?;
        expand_value(&mut v, name, self.env, errors);
        Some(v)
    }
}

/// The daemon's own sections: listeners, CA, data, what is a tool or an LLM, the journal.
fn platform_sections(root: &mut Root, c: &mut Config, errors: &mut Vec<ConfigError>) {
    if let Some(v) = root.take("proxy", errors) {
        c.proxy = section(v, "proxy", errors).unwrap_or_default();
    }
    if let Some(v) = root.take("control", errors) {
        c.control = section(v, "control", errors).unwrap_or_default();
    }
    if let Some(v) = root.take("ca", errors) {
        c.ca = section(v, "ca", errors).unwrap_or_default();
    }
    c.data_dir = root
        .take("data_dir", errors)
        .and_then(|v| section(v, "data_dir", errors))
        .unwrap_or_else(|| PathBuf::from(".flakestorm"));
    if let Some(v) = root.take("tools", errors) {
        c.tools = list(v, "tools", errors);
    }
    if let Some(v) = root.take("llm", errors) {
        c.llm = list(v, "llm", errors);
    }
    if let Some(v) = root.take("journal", errors) {
        c.journal = section(v, "journal", errors).unwrap_or_default();
    }
}

/// What runs test: invariants, the agent, prompts, the `model:` LLM, mutations, contract.
fn run_sections(
    root: &mut Root,
    c: &mut Config,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) {
    if let Some(v) = root.take("invariants", errors) {
        c.invariants = super::invariants::invariant_list(v, &c.tools, errors, warnings);
    }
    if let Some(v) = root.take("agent", errors) {
        let spec: Option<super::AgentSpec> = section(v, "agent", errors);
        c.agent = spec.and_then(|s| {
            super::agent_script::compile(&s)
                .map_err(|e| errors.extend(e))
                .ok()
        });
    }
    // Prompts to run, or a broken `golden_prompts:` already reported.
    let mut golden = false;
    if let Some(v) = root.take("golden_prompts", errors) {
        let before = errors.len();
        c.golden_prompts = super::contract::prompts_section(v, errors);
        golden = !c.golden_prompts.is_empty() || errors.len() > before;
    }
    if let Some(v) = root.take("model", errors) {
        c.model = super::model::model_section(v, errors);
    }
    if let Some(v) = root.take("mutations", errors) {
        c.mutations = super::mutations::mutations_section(v, c.model.is_some(), errors);
    }
    if c.agent.as_ref().is_some_and(|a| a.script) {
        super::agent_script::check_mutations(&c.mutations, errors);
    }
    let top_matrix = root.take("chaos_matrix", errors);
    match root.take("contract", errors) {
        Some(v) => {
            let ctx = super::contract::Context {
                tools: &c.tools,
                golden,
            };
            c.contract = super::contract::contract_section(v, top_matrix, ctx, errors, warnings)
        }
        None if top_matrix.is_some() => {
            errors.push(ConfigError::new(
                "chaos_matrix",
                "needs a `contract:` section, whose invariants it runs under each scenario",
            ));
        }
        None => {}
    }
}

/// What is left of the root once every section was taken: unknown sections.
fn unknown_sections(mut root: Map<String, Value>, errors: &mut Vec<ConfigError>) {
    root.remove("version");
    for (key, _) in root {
        errors.push(ConfigError::new(
            key.as_str(),
            format!(
                "unknown section; expected one of {}, version",
                SECTIONS.join(", ")
            ),
        ));
    }
}

/// A replay session file given where a config goes (Flakestorm v2 users keep them side by
/// side): one error saying so, instead of one "unknown section" per field.
fn session_file(root: &Map<String, Value>) -> Option<String> {
    let has = |k: &str| root.contains_key(k);
    let config_like = SECTIONS.iter().any(|s| *s != "contract" && has(s));
    (has("input") && (has("id") || has("tool_responses")) && !config_like).then(|| {
        "this is a replay session file (it has `id`, `input`, `tool_responses`), not a \
         flakestorm config: replay it with `flakestorm replay run FILE` (and your config \
         with -c), or list it under `replays.sessions`"
            .to_string()
    })
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
