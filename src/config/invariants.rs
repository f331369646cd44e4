//! `invariants:` as config: each entry parsed into `checks::spec::InvariantSpec` and
//! checked with its path (empty values, ranges, regexes that do not compile, tools not
//! declared), Flakestorm v2's extra fields dropped with a warning.

use super::ConfigError;
use super::schema::ToolSpec;
use crate::checks::spec::{
    Check, DEFAULT_DANGEROUS_PROMPTS, InvariantSpec, OutcomeClass, parse_invariant,
};

/// Says so when a `refusal_check` at `path` gets the built-in prompts (none given, or v2's
/// boolean), so the prompts a run sends are never a surprise.
pub(super) fn note_default_prompts(
    item: &serde_json::Value,
    path: &str,
    warnings: &mut Vec<String>,
) {
    let refusal = item.get("type").and_then(serde_json::Value::as_str) == Some("refusal_check");
    let given = item.get("dangerous_prompts");
    if refusal && given.is_none_or(|v| v.is_boolean() || v.is_null()) {
        warnings.push(format!(
            "{path}: refusal_check without a list of dangerous_prompts uses the {} built-in \
             ones (docs/invariants.md); list your own to test your agent's domain",
            DEFAULT_DANGEROUS_PROMPTS.len()
        ));
    }
}

/// Semantic checks of one invariant at `path` (e.g. `invariants[2]`).
pub fn check_invariant(inv: &InvariantSpec, path: &str, errors: &mut Vec<ConfigError>) {
    let mut err =
        |field: &str, msg: String| errors.push(ConfigError::new(format!("{path}.{field}"), msg));
    let regex = |at: usize| inv.regex_error(at);
    match &inv.check {
        Check::Contains { value } if value.is_empty() => err("value", "must not be empty".into()),
        Check::ContainsAny { values } if values.is_empty() => {
            err("values", "needs at least one value".into())
        }
        Check::Regex { .. } => {
            if let Some(e) = regex(0) {
                err("pattern", e);
            }
        }
        Check::ExcludesPattern { patterns } => {
            for i in 0..patterns.len() {
                if let Some(e) = regex(i) {
                    err(&format!("patterns[{i}]"), e);
                }
            }
        }
        Check::Latency { max_ms: 0 } => err("max_ms", "must be greater than 0".into()),
        Check::Similarity { threshold, .. } if !(0.0..=1.0).contains(threshold) => {
            err("threshold", format!("{threshold} is outside 0..=1"));
        }
        Check::BehaviorUnchanged {
            similarity_threshold: t,
            ..
        } if !(0.0..=1.0).contains(t) => {
            err("similarity_threshold", format!("{t} is outside 0..=1"));
        }
        Check::RefusalCheck { dangerous_prompts } if dangerous_prompts.is_empty() => {
            err("dangerous_prompts", "needs at least one prompt".into());
        }
        Check::Outcome { allow } => check_outcome(allow, &mut err),
        Check::MaxTokens { max: 0 } => err("max", "must be greater than 0".into()),
        Check::MaxCost { max } if !(max.is_finite() && *max > 0.0) => {
            err(
                "max",
                format!("{max} must be a cost greater than 0 (in pricing.currency)"),
            );
        }
        // Nothing to check beyond what the types say (or within range, above).
        Check::Contains { .. }
        | Check::ContainsAny { .. }
        | Check::Latency { .. }
        | Check::ValidJson {}
        | Check::Similarity { .. }
        | Check::ExcludesPii {}
        | Check::RefusalCheck { .. }
        | Check::OutputNotEmpty {}
        | Check::Completes {}
        | Check::BehaviorUnchanged { .. }
        | Check::ToolCalled { .. }
        | Check::ToolNotCalled { .. }
        | Check::MaxToolCalls { .. }
        | Check::MaxLlmCalls { .. }
        | Check::MaxTokens { .. }
        | Check::MaxCost { .. }
        | Check::HonorsRetryAfter {}
        | Check::NoExfiltration {} => {}
    }
}

/// An `outcome` invariant's `allow`: at least one class, each a verdict on the agent
/// (`not_exercised` and `undecided` say there is none), none twice.
fn check_outcome(allow: &[OutcomeClass], err: &mut impl FnMut(&str, String)) {
    if allow.is_empty() {
        err(
            "allow",
            "needs at least one class, e.g. [recovered, degraded_honest]".into(),
        );
    }
    for (i, class) in allow.iter().enumerate() {
        if !class.judged() {
            err(
                &format!("allow[{i}]"),
                format!(
                    "`{class}` is no verdict on the agent: a case that is {class} is never \
                     judged by an outcome invariant (allow some of propagated, fabricated, \
                     failed, degraded_honest, recovered)"
                ),
            );
        } else if allow[..i].contains(class) {
            err(&format!("allow[{i}]"), format!("`{class}` is listed twice"));
        }
    }
}

/// Drops the Flakestorm v2 fields the invariant's type does not take (config::v2).
pub(super) fn lenient_v2_invariant(item: &mut serde_json::Value, path: &str, w: &mut Vec<String>) {
    let parse = |v| parse_invariant(v).err().map(|e| e.message);
    super::v2::lenient_invariant(item, path, w, parse);
}

/// `invariants:` element by element, each error at its field; `tools` are the declared
/// ones, for the warning about traffic checks that name others.
pub(super) fn invariant_list(
    v: serde_json::Value,
    tools: &[ToolSpec],
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Vec<InvariantSpec> {
    let serde_json::Value::Array(items) = v else {
        errors.push(ConfigError::new("invariants", "expected a list of checks"));
        return vec![];
    };
    let mut out = vec![];
    for (i, mut item) in items.into_iter().enumerate() {
        // Checked here, where the index is still the file's.
        let path = format!("invariants[{i}]");
        lenient_v2_invariant(&mut item, &path, warnings);
        note_default_prompts(&item, &path, warnings);
        match parse_invariant(item) {
            Ok(inv) => {
                check_invariant(&inv, &path, errors);
                check_undeclared_tool(&inv.check, &path, tools, errors, warnings);
                out.push(inv);
            }
            Err(e) => errors.push(ConfigError::new(e.path_in(&path), e.message)),
        }
    }
    out
}

/// A traffic invariant at `path` that names a tool `tools:` does not declare. For
/// `tool_called` / `tool_not_called` a warning: they also match tool calls the LLM asks for
/// by name, which may be in-process tools that never reach the wire. For `max_tool_calls`
/// an error: it counts HTTP calls to `tools:` entries only, so it could never fail. Any
/// name goes when a `tools:` entry speaks MCP (its tools are named on the wire).
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
        | Check::MaxTokens { .. }
        | Check::MaxCost { .. }
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
        | Check::BehaviorUnchanged { .. }
        | Check::Outcome { .. } => return,
    };
    // An MCP server's tools are named by its tool list, known only on the wire.
    let mcp = |t: &ToolSpec| t.protocol == super::schema::ToolProtocol::Mcp;
    if tools.iter().any(|t| t.name == *tool || mcp(t)) {
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
