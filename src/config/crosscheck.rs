//! Warnings about a loaded config that read more than one section: `agent.reset_endpoint`
//! against `advanced.concurrency`. (The
//! checks of one invariant against `tools:` and the prompts live with the invariants, in
//! `invariants.rs` and `contract.rs`, so this module imports neither.) Owns no types and
//! never changes the config.

use super::schema::Config;

/// Warnings about a config that loads: things it asks for that a run will not do as the
/// user may expect.
pub(super) fn warn_config(c: &Config, warnings: &mut Vec<String>) {
    if let Some(a) = &c.agent {
        super::agent::warn_agent(a, warnings);
    }
    warn_reset_with_concurrency(c, warnings);
}

/// Cases run `concurrency` at a time, so one case's reset can land while another runs.
fn warn_reset_with_concurrency(c: &Config, warnings: &mut Vec<String>) {
    let n = c.advanced.concurrency;
    let reset = c.agent.as_ref().is_some_and(|a| a.reset_endpoint.is_some());
    if reset && n > 1 {
        warnings.push(format!(
            "agent.reset_endpoint with advanced.concurrency {n}: a reset before one case can \
             wipe the state of another case still running; set concurrency: 1 if the agent \
             keeps state per process"
        ));
    }
}

#[cfg(test)]
#[path = "crosscheck_tests.rs"]
mod tests;
