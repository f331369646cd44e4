//! `ci`: the phases this build can run (contract, chaos), once each, combined into one
//! score: the `scoring` weights of the phases that ran, renormalised to sum to 1. Phases
//! that did not run say why; a critical contract failure fails the whole run.

use serde::Serialize;

use super::{ChaosReport, ContractReport};
use crate::config::ScoringSpec;

pub const SCHEMA: &str = "flakestorm.ci/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    pub name: &'static str,
    /// 0–100 when the phase ran.
    pub score: Option<f64>,
    /// Why it did not run.
    pub skipped: Option<String>,
    pub weight: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CiReport {
    pub schema: &'static str,
    /// `sha256:` digest of the config file (null without a file).
    pub config_digest: Option<String>,
    pub phases: Vec<Phase>,
    /// Weighted mean over the phases that ran.
    pub overall: f64,
    /// No critical contract failure (and, when given, `overall ≥ --min-score`).
    pub passed: bool,
    pub contract: Option<ContractReport>,
    pub chaos: Option<ChaosReport>,
}

/// Combines phase results. `skipped` lists phases that could not run, with the reason.
pub fn combine(
    scoring: &ScoringSpec,
    contract: Option<ContractReport>,
    chaos: Option<ChaosReport>,
    skipped: &[(&'static str, String)],
    min_score: Option<f64>,
) -> CiReport {
    let ran = [
        (
            "contract",
            contract.as_ref().map(|c| c.score.value),
            scoring.contract,
        ),
        ("chaos", chaos.as_ref().map(|c| c.score), scoring.chaos),
    ];
    let mut phases = vec![];
    for (name, score, weight) in ran {
        let why = skipped
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| w.clone());
        phases.push(Phase {
            name,
            score,
            skipped: if score.is_none() { why } else { None },
            weight,
        });
    }
    for (name, why) in skipped
        .iter()
        .filter(|(n, _)| !matches!(*n, "contract" | "chaos"))
    {
        let weight = match *name {
            "mutation" => scoring.mutation,
            _ => scoring.replay,
        };
        phases.push(Phase {
            name,
            score: None,
            skipped: Some(why.clone()),
            weight,
        });
    }
    let (sum, weights) = phases
        .iter()
        .filter_map(|p| p.score.map(|s| (s * p.weight, p.weight)))
        .fold((0.0, 0.0), |(a, b), (s, w)| (a + s, b + w));
    let overall = if weights > 0.0 { sum / weights } else { 0.0 };
    let critical_ok = contract.as_ref().is_none_or(|c| c.score.passed);
    let passed = critical_ok && min_score.is_none_or(|m| overall >= m) && weights > 0.0;
    // The phases ran on one config: theirs is the run's.
    let config_digest = contract
        .as_ref()
        .and_then(|c| c.config_digest.clone())
        .or_else(|| chaos.as_ref().and_then(|c| c.config_digest.clone()));
    CiReport {
        schema: SCHEMA,
        config_digest,
        phases,
        overall,
        passed,
        contract,
        chaos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_renormalise_over_the_phases_that_ran() {
        let chaos = ChaosReport {
            schema: super::super::chaos::SCHEMA,
            config_digest: None,
            chaos: "chaos".into(),
            seed: 1,
            cases: vec![],
            prompts: vec![],
            score: 50.0,
            agent_calls: 0,
            warnings: vec![],
        };
        let skipped = [
            ("mutation", "needs the mutation engine".to_string()),
            ("contract", "no contract".to_string()),
        ];
        let r = combine(
            &ScoringSpec::default(),
            None,
            Some(chaos),
            &skipped,
            Some(40.0),
        );
        assert_eq!(r.overall, 50.0, "only chaos ran: its weight becomes 1");
        assert!(r.passed);
        let mutation = r.phases.iter().find(|p| p.name == "mutation").unwrap();
        assert_eq!(
            mutation.skipped.as_deref(),
            Some("needs the mutation engine")
        );
        let r = combine(&ScoringSpec::default(), None, None, &skipped, None);
        assert!(!r.passed, "nothing ran: not a pass");
    }
}
