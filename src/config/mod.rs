//! The `flakestorm.yaml` schema (config.md) and its loading: figment layers
//! (defaults < file < `FLAKESTORM_*` env < CLI flags), `${VAR}` expansion, and validation
//! that reports every problem at once, each with its path.
//!
//! It assembles the schema from the domain's spec types, which live with the modules that
//! act on them (`chaos::spec`, `mutate::kind`, `checks::spec`; it owns no domain enum), and
//! compiles them once, as they load (design.md §8 rule 2): chaos rules into
//! `chaos::spec::CompiledChaos` (by `compile_chaos`, the one path for files, scenarios,
//! profiles and `PUT /v1/chaos`), invariant regexes inside `checks::spec::InvariantSpec`,
//! `proxy.intercept`/`passthrough` into `globs::HostGlobs`, `agent:` into
//! `AgentTarget`, addresses and URLs into `Parsed<T>`, the upstream CA bundle into
//! `ProxySpec::upstream_ca`. The runtime uses those as they are; the hot path never sees
//! unvalidated config.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod agent;
mod agent_fields;
mod agent_script;
mod carried;
mod chaos_load;
mod chaos_rules;
mod concurrency;
mod contract;
mod crosscheck;
mod de;
mod embeddings;
mod error;
mod expand;
pub(crate) mod finite;
mod invariants;
mod literal_secrets;
mod load;
mod load_sent;
pub mod migrate;
mod model;
mod mutations;
mod output;
mod parsed;
mod paths;
mod pricing;
pub mod redact;
pub mod replays;
mod response_path;
mod schema;
mod scrub;
mod sections;
pub mod session_file;
mod settle;
mod targets;
mod telemetry;
mod trials;
mod unset;
pub mod untrusted;
mod v2;
mod validate;
mod yaml;
mod yaml_keys;

pub use agent::{AgentSpec, AgentTarget, MAX_INSTANCES, PROMPT as AGENT_PROMPT, PROXY_VARS};
pub use carried::{OUTSIDE, comparable as comparable_carried, escapes};
pub use chaos_load::parse_chaos;
pub use chaos_rules::compile_chaos;
pub use concurrency::DEFAULT_CONCURRENCY;
pub use contract::{ContractInvariant, ContractSpec, Scenario, Severity, When};
pub use embeddings::EmbeddingsSpec;
pub use error::{ConfigError, ConfigErrors, Found, MAX_LISTED, capped, one_line};
pub use expand::{is_var_name, referenced as referenced_vars};
pub use load::{Loaded, Named, Overrides, digest, load, load_text, load_with_env};
pub use load_sent::{DAEMON_SECTIONS, Submitted, load_carried, load_submitted};
pub use model::ModelSpec;
pub use mutations::{MAX_COUNT, MAX_PER_RUN, MutationsSpec};
pub use output::{
    ConsistencyScore, DEFAULT_MIN_SCORE, OutputSpec, ReportFormat, ScoringSpec, Tapes,
};
pub use parsed::{FromText, HttpUrl, Parsed, TargetRules};
pub use pricing::PricingSpec;
pub use replays::ReplaysSpec;
pub use response_path::{ResponsePath, ResponsePathError};
pub use schema::*;
pub use settle::PoolSize;
pub use targets::{TargetRule, parse_target_rule};
pub use trials::override_trials;
pub use unset::{Validated, load_for_validation, validate_text};
pub use yaml::Yaml;

#[cfg(test)]
#[path = "docs_examples_tests.rs"]
mod docs_examples_tests;

/// The errors loading `yaml` as a config file gives, as `path: message` (none: it loads).
#[cfg(test)]
pub(crate) fn load_errors(yaml: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(&path, yaml).unwrap();
    match load_with_env(Some(&path), &Overrides::default(), &Default::default()) {
        Ok(_) => vec![],
        Err(e) => e.errors.iter().map(ToString::to_string).collect(),
    }
}
