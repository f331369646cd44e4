//! Flakestorm v2 files as they are (docs/v2.md): what v2 set freely and this build has no
//! use for is dropped with a warning (an invariant's `threshold` or `dangerous_prompts` on a
//! type that takes none, `terminal` among the report formats, a dict-form attack's
//! `enabled`), and a v2 field that does not carry over is refused with one line that names
//! it as v2's and says what to write instead, not as an unknown field.

use serde_json::Value;

use super::ConfigError;

/// v2 fields that do not carry over, by path (list indexes left out), and what replaces
/// each.
const GONE: &[(&str, &str)] = &[
    (
        "agent.query_params",
        "Flakestorm v2's `query_params` does not carry over: put the query in agent.endpoint \
         (`http://host/invoke?key=value`)",
    ),
    (
        "agent.parse_structured_input",
        "Flakestorm v2's structured-input parsing does not carry over: request_template \
         fills `{prompt}` only; send the whole prompt in one field and let the agent read it",
    ),
    (
        "output.filename_template",
        "Flakestorm v2's `filename_template` does not carry over: reports are written as \
         <run kind>.<format> under output.path, or where `--report` says",
    ),
    (
        "mutations.templates",
        "not a Flakestorm v2 field either: custom mutations are `mutations.custom_templates` \
         (name -> template with `{prompt}`), with `custom` in `mutations.types`",
    ),
    (
        "advanced.output_dir",
        "Flakestorm v2's `advanced.output_dir` does not carry over: use output.path",
    ),
    (
        "advanced.min_score",
        "Flakestorm v2's `advanced.min_score` does not carry over: the pass mark is \
         scoring.min_score (0..=100)",
    ),
    (
        "invariants.prompt_filter",
        "Flakestorm v2's `prompt_filter` does not carry over: checks apply to every prompt; \
         in a contract, give the invariant its own `probes:` to run it on chosen prompts",
    ),
    (
        "contract.invariants.prompt_filter",
        "Flakestorm v2's `prompt_filter` does not carry over: give the invariant its own \
         `probes:` to run it on chosen prompts",
    ),
    (
        "invariants.case_sensitive",
        "Flakestorm v2's `case_sensitive` does not carry over: `contains` ignores case; for \
         an exact match use `type: regex` with the pattern",
    ),
    (
        "contract.invariants.case_sensitive",
        "Flakestorm v2's `case_sensitive` does not carry over: `contains` ignores case; for \
         an exact match use `type: regex` with the pattern",
    ),
    (
        "chaos.profile",
        "a chaos profile is chosen on the command line (`flakestorm run --chaos-profile \
         NAME`, as in Flakestorm v2), not in the file",
    ),
    (
        "name",
        "a top-level `name` (and `description`) is a Flakestorm v2 chaos profile file, not a \
         config: copy its `chaos:` into your flakestorm.yaml, or pick a built-in profile \
         with `--chaos-profile NAME` (`flakestorm profiles list`)",
    ),
    (
        "description",
        "a top-level `description` (and `name`) is a Flakestorm v2 chaos profile file, not \
         a config: copy its `chaos:` into your flakestorm.yaml, or pick a built-in profile \
         with `--chaos-profile NAME` (`flakestorm profiles list`)",
    ),
];

/// `errors` whose field is a v2 one that does not carry over get the line that says so; a
/// chaos profile file is said once, not for its `name` and its `description`.
pub(super) fn explain(errors: &mut Vec<ConfigError>) {
    let profile = ["name", "description"].iter().all(|p| {
        errors
            .iter()
            .any(|e| e.path == *p && e.message.starts_with("unknown section"))
    });
    if profile {
        errors.retain(|e| e.path != "description");
    }
    for e in errors.iter_mut() {
        let unknown =
            e.message.starts_with("unknown field") || e.message.starts_with("unknown section");
        if !unknown {
            continue;
        }
        let path = without_indexes(&e.path);
        if let Some((_, why)) = GONE.iter().find(|(p, _)| *p == path) {
            e.message = (*why).to_string();
        }
    }
}

/// `contract.invariants[2].x` -> `contract.invariants.x`.
fn without_indexes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Fields v2 allowed on every invariant; each type that has no use for one drops it here.
const V2_INVARIANT_FIELDS: &[&str] = &["threshold", "dangerous_prompts"];

/// Drops from `item` the `fields` that `parse` (its error message, or `None` when it
/// parses) calls unknown, one per pass; their names, in the order dropped.
pub(super) fn drop_unknown(
    item: &mut Value,
    fields: &'static [&'static str],
    parse: impl Fn(Value) -> Option<String>,
) -> Vec<&'static str> {
    let mut dropped = vec![];
    for _ in fields {
        let Some(msg) = parse(item.clone()) else {
            break;
        };
        let field = fields
            .iter()
            .find(|f| msg.starts_with(&format!("unknown field `{f}`")));
        let (Some(field), Some(map)) = (field, item.as_object_mut()) else {
            break;
        };
        map.remove(*field);
        dropped.push(*field);
    }
    dropped
}

/// Drops from the invariant at `path` the v2 fields its type does not take, with a warning
/// each (`parse` gives the error a field left in causes).
pub(super) fn lenient_invariant(
    item: &mut Value,
    path: &str,
    warnings: &mut Vec<String>,
    parse: impl Fn(Value) -> Option<String>,
) {
    for field in drop_unknown(item, V2_INVARIANT_FIELDS, parse) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("?");
        warnings.push(format!(
            "{path}.{field}: not used by type `{kind}`; ignored (Flakestorm v2 allowed it on \
             every invariant)"
        ));
    }
}

/// `output.format` without v2's `terminal`, with a warning: the summary always goes to the
/// terminal.
pub(super) fn lenient_output(output: &mut Value, warnings: &mut Vec<String>) {
    let Some(format) = output.get_mut("format") else {
        return;
    };
    let terminal = |v: &Value| v.as_str() == Some("terminal");
    let said = "output.format: `terminal` dropped: the summary is always printed to the \
                terminal (Flakestorm v2's `terminal` format)";
    let emptied = match format {
        Value::Array(items) if items.iter().any(terminal) => {
            items.retain(|v| !terminal(v));
            items.is_empty()
        }
        Value::String(_) if terminal(format) => true,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => {
            return;
        }
        Value::Object(_) => return,
    };
    warnings.push(said.into());
    // `terminal` alone: the default format (json) is written.
    if emptied && let Some(map) = output.as_object_mut() {
        map.remove("format");
    }
}

#[cfg(test)]
#[path = "v2_tests.rs"]
mod tests;
