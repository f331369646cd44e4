//! Built-in chaos profiles: `profiles/*.yaml`, embedded in the binary. A profile is a
//! `chaos:` section; its first comment line is its description.

use crate::chaos::spec::{ChaosSpec, CompiledChaos};

/// `(name, yaml)` of every built-in profile.
pub const PROFILES: &[(&str, &str)] = &[
    ("api_outage", include_str!("../../profiles/api_outage.yaml")),
    (
        "cascading_failure",
        include_str!("../../profiles/cascading_failure.yaml"),
    ),
    (
        "degraded_llm",
        include_str!("../../profiles/degraded_llm.yaml"),
    ),
    (
        "high_latency",
        include_str!("../../profiles/high_latency.yaml"),
    ),
    (
        "hostile_tools",
        include_str!("../../profiles/hostile_tools.yaml"),
    ),
    (
        "indirect_injection",
        include_str!("../../profiles/indirect_injection.yaml"),
    ),
    (
        "model_version_drift",
        include_str!("../../profiles/model_version_drift.yaml"),
    ),
];

pub fn names() -> impl Iterator<Item = &'static str> {
    PROFILES.iter().map(|(n, _)| *n)
}

pub fn yaml(name: &str) -> Option<&'static str> {
    PROFILES.iter().find(|(n, _)| *n == name).map(|(_, y)| *y)
}

/// The first comment line of a profile.
pub fn description(yaml: &str) -> &str {
    yaml.lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .unwrap_or("")
}

/// Why a profile could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown chaos profile `{name}`; built-in profiles: {}", names().collect::<Vec<_>>().join(", "))]
    Unknown { name: String },
    /// A built-in profile that does not read or compile (a bug the tests catch).
    #[error("profile `{name}`: {why}")]
    Invalid { name: String, why: String },
}

/// A profile's rules, compiled; the error lists the profiles there are.
pub fn load(name: &str) -> Result<CompiledChaos, ProfileError> {
    let text = yaml(name).ok_or_else(|| ProfileError::Unknown { name: name.into() })?;
    use crate::config::Yaml;
    use figment::providers::Format;
    let invalid = |why: String| ProfileError::Invalid {
        name: name.into(),
        why,
    };
    let spec: ChaosSpec = figment::Figment::from(Yaml::string(text))
        .extract()
        .map_err(|e| invalid(e.to_string()))?;
    CompiledChaos::try_from(&spec).map_err(|p| invalid(p.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_parses_compiles_and_describes_itself() {
        for name in names() {
            let spec = load(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!spec.is_empty(), "{name} has rules");
            crate::chaos::RuleSet::new(&spec);
            assert!(
                !description(yaml(name).unwrap()).is_empty(),
                "{name} has a description"
            );
        }
        assert!(load("nope").unwrap_err().to_string().contains("api_outage"));
    }
}
