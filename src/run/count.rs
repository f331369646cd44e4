//! How many cases a run makes, known before its agent starts (`Prepared::cases`): an agent
//! pool starts no more instances than the run has cases (`config::PoolSize`).

use super::RunKind;
use super::execute::Prepared;
use crate::config::Config;

impl Prepared {
    /// The most cases the run makes, when known before it runs: a contract's scenarios
    /// (and its baseline pass) × its prompts × trials, a chaos run's prompts × trials;
    /// `None` for mutation runs (their variants are made as they run), replays and `ci`.
    /// `trial`: `--trial`, one trial of each case.
    pub fn cases(&self, config: &Config, trial: Option<u32>) -> Option<usize> {
        let trials = match trial {
            Some(_) => 1,
            None => config.advanced.trials.max(1) as usize,
        };
        let golden = &config.golden_prompts;
        match self.kind {
            RunKind::Contract => {
                let plan = super::contract::Plan::of(config.contract.as_ref()?, golden).ok()?;
                let scenarios = plan.scenarios.len() + usize::from(plan.baseline);
                Some(scenarios * plan.prompts.len() * trials)
            }
            RunKind::Chaos => Some(golden.len() * trials),
            RunKind::Mutation | RunKind::Replay | RunKind::Ci => None,
        }
    }
}
