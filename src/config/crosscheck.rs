//! Load checks that read more than one section: invariants that name tools against
//! `tools:`, contract invariants against the prompts they can run, `agent.reset_endpoint`
//! against `advanced.concurrency`, `output.format` against what this build renders.
//! What makes a run meaningless is an error; what a run can live with is a warning.
//! Owns no types and never changes the config.

use super::contract::ContractInvariant;
use super::invariants::Check;
use super::schema::{Config, ToolSpec};
use super::{ConfigError, ReportFormat};

/// What the contract is checked against from the rest of the file.
#[derive(Clone, Copy)]
pub(super) struct Context<'a> {
    pub tools: &'a [ToolSpec],
    /// `golden_prompts` gives prompts (or is broken and already reported).
    pub golden: bool,
}

/// A traffic invariant at `path` that names a tool `tools:` does not declare. For
/// `tool_called` / `tool_not_called` a warning: they also match tool calls the LLM asks for
/// by name, which may be in-process tools that never reach the wire. For `max_tool_calls`
/// an error: it counts HTTP calls to `tools:` entries only, so it could never fail.
pub(super) fn check_undeclared_tool(
    check: &Check,
    path: &str,
    tools: &[ToolSpec],
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) {
    let (tool, counted) = match check {
        Check::ToolCalled { tool } | Check::ToolNotCalled { tool } => (tool, false),
        Check::MaxToolCalls {
            tool: Some(tool), ..
        } => (tool, true),
        Check::MaxToolCalls { tool: None, .. }
        | Check::MaxLlmCalls { .. }
        | Check::HonorsRetryAfter {}
        | Check::NoExfiltration {}
        | Check::Contains { .. }
        | Check::ContainsAny { .. }
        | Check::Regex { .. }
        | Check::ExcludesPattern { .. }
        | Check::Latency { .. }
        | Check::ValidJson {}
        | Check::Similarity { .. }
        | Check::ExcludesPii {}
        | Check::RefusalCheck { .. }
        | Check::OutputNotEmpty {}
        | Check::Completes {}
        | Check::BehaviorUnchanged { .. } => return,
    };
    if tools.iter().any(|t| t.name == *tool) {
        return;
    }
    let at = format!("{path}.tool");
    if counted {
        errors.push(ConfigError::new(
            at,
            format!(
                "`{tool}` is not a name from `tools:`; max_tool_calls counts HTTP calls to \
                 `tools:` entries, so it would count none"
            ),
        ));
    } else {
        warnings.push(format!(
            "{at}: `{tool}` is not a name from `tools:`; only tool calls the LLM asks for by \
             that name can match"
        ));
    }
}

/// A contract invariant at `path` with nothing to run: no `probes` and no golden prompts.
/// `refusal_check` runs its own `dangerous_prompts`.
pub(super) fn check_has_prompts(
    inv: &ContractInvariant,
    path: &str,
    golden: bool,
    errors: &mut Vec<ConfigError>,
) {
    let own_prompts = matches!(inv.invariant.check, Check::RefusalCheck { .. });
    if !golden && inv.probes.is_empty() && !own_prompts {
        errors.push(ConfigError::new(
            path,
            "no prompts to run: add golden_prompts or probes",
        ));
    }
}

/// Warnings about a config that loads: things it asks for that a run will not do as the
/// user may expect.
pub(super) fn warn_config(c: &Config, warnings: &mut Vec<String>) {
    if let Some(a) = &c.agent {
        super::agent::warn_agent(a, warnings);
    }
    warn_reset_with_concurrency(c, warnings);
    warn_unrendered_formats(c, warnings);
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

/// Only JSON reports are written so far: say so rather than ignore the other formats.
fn warn_unrendered_formats(c: &Config, warnings: &mut Vec<String>) {
    let other: Vec<String> = c
        .output
        .format
        .iter()
        .filter(|f| **f != ReportFormat::Json)
        .map(|f| format!("{f:?}").to_lowercase())
        .collect();
    if !other.is_empty() {
        warnings.push(format!(
            "output.format: {} reports are not rendered in this build; the JSON report is written",
            other.join(", ")
        ));
    }
}

#[cfg(test)]
#[path = "crosscheck_tests.rs"]
mod tests;
