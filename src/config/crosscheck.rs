//! Warnings about a loaded config that read more than one section: `agent.reset_endpoint`
//! against `advanced.concurrency`. (The
//! checks of one invariant against `tools:` and the prompts live with the invariants, in
//! `invariants.rs` and `contract.rs`, so this module imports neither.) Owns no types and
//! never changes the config.

use super::schema::{Attribution, Config};

/// Warnings about a config that loads: things it asks for that a run will not do as the
/// user may expect.
pub(super) fn warn_config(c: &Config, warnings: &mut Vec<String>) {
    if let Some(a) = &c.agent {
        warn_agent(a, warnings);
    }
    warn_reset_with_concurrency(c, warnings);
    warn_serial_cases(c, warnings);
    warn_outcome_without_faults(c, warnings);
    super::settle::warn(c, warnings);
}

/// An `outcome` invariant judges what the agent did with a fault (docs/outcomes.md): one
/// that no scenario with a fault reaches (by its `when`) will be not tested.
fn warn_outcome_without_faults(c: &Config, warnings: &mut Vec<String>) {
    use crate::checks::spec::Check;
    let is_outcome = |check: &Check| matches!(check, Check::Outcome { .. });
    if let Some(k) = &c.contract {
        for (i, inv) in k.invariants.iter().enumerate() {
            let reached =
                |s: &&super::Scenario| !s.chaos.is_empty() && inv.when.holds_under(&s.chaos);
            if is_outcome(&inv.invariant.check) && !k.chaos_matrix.iter().any(|s| reached(&s)) {
                warnings.push(format!(
                    "contract.invariants[{i}] (`{}`): an outcome invariant judges what the agent \
                     did with a fault, but no scenario of chaos_matrix that `when: {}` takes has \
                     one: it will be not tested",
                    inv.id, inv.when
                ));
            }
        }
    }
    for (i, inv) in c.invariants.iter().enumerate() {
        if is_outcome(&inv.check) && c.chaos.is_empty() {
            warnings.push(format!(
                "invariants[{i}]: an outcome invariant judges what the agent did with a fault, \
                 but `chaos:` has none: a chaos run will not test it (mutation runs never \
                 classify outcomes)"
            ));
        }
    }
}

/// Says how cases will be told apart when that costs concurrency the user set: one agent
/// process under exclusive attribution runs the cases of a scenario with chaos one at a
/// time. Unset, the default fits such an agent and nothing is said.
fn warn_serial_cases(c: &Config, warnings: &mut Vec<String>) {
    let Some(n) = c.advanced.concurrency else {
        return;
    };
    let Some(a) = &c.agent else { return };
    let chaos = c
        .contract
        .as_ref()
        .is_some_and(|k| !k.chaos_matrix.is_empty())
        || !c.chaos.is_empty();
    if !a.pooled() && c.advanced.attribution == Attribution::Exclusive && n > 1 && chaos {
        warnings.push(format!(
            "advanced.concurrency {n} with one agent process (attribution: exclusive): cases \
             under chaos run one at a time, so that each exchange is its own case's; put \
             `{{port}}` in agent.command and agent.endpoint for a pool of {n} instances, or \
             use attribution: header with an agent that propagates traceparent"
        ));
    }
}

/// Cases run `concurrency` at a time, so one case's reset can land while another runs.
fn warn_reset_with_concurrency(c: &Config, warnings: &mut Vec<String>) {
    let n = c.concurrency();
    // A pool resets each instance before its own case only.
    let reset = c
        .agent
        .as_ref()
        .is_some_and(|a| a.reset_endpoint.is_some() && a.per_port.is_none());
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

/// Warnings for an agent section that loads but defeats the run: `agent.env` replacing
/// the proxy or CA variables flakestorm sets.
fn warn_agent(a: &super::AgentTarget, warnings: &mut Vec<String>) {
    // Flakestorm v2's guides wrote `timeout: 30` meaning seconds (v2 itself refused it).
    let ms = a.timeout.as_millis();
    if ms < 1000 {
        warnings.push(format!(
            "agent.timeout: {ms} is milliseconds, so each call to the agent may take {ms} ms; \
             for {ms} seconds write {}",
            ms * 1000
        ));
    }
    for name in a
        .env
        .keys()
        .filter(|n| super::PROXY_VARS.contains(&n.as_str()))
    {
        warnings.push(format!(
            "agent.env.{name}: replaces the value flakestorm sets for agent.command; if the \
             agent's traffic no longer crosses this run's proxy, the run tests nothing"
        ));
    }
}
