//! `flakestorm migrate`: a Flakestorm v2 file brought to the current form by edits to the
//! user's own text, so their comments, order and layout stay. Fields v2 rules set freely
//! that a mode does not use (which the loader drops with a warning) are commented out,
//! or taken out of a `{…}` mapping; the proxy-era fields no value can be inferred for
//! (`agent.command`, `agent.ready_url`, a `tools:` entry with its URL glob for each tool the
//! rules name) are added as comments to fill in. Nothing else changes: a v2 file already
//! loads, and what it means is kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use figment::Figment;
use figment::providers::Format;

use super::Yaml;
use serde_json::Value;

use super::ConfigError;
use super::chaos_load::lenient_v2_fields;
use super::yaml_keys::{Edit, KeyAt, Path, apply, comment_out, flow_cuts, line_starts, locate};

/// The migrated text and what changed, one line per change.
#[derive(Debug)]
pub struct Migrated {
    pub text: String,
    pub changes: Vec<String>,
}

/// `text` (a config that loads) migrated; an error if it is not YAML.
pub fn migrate(text: &str) -> Result<Migrated, ConfigError> {
    let file: Value = Figment::from(Yaml::string(text))
        .extract()
        .map_err(|e| ConfigError::new(e.path.join("."), e.to_string()))?;
    let chars: Vec<char> = text.chars().collect();
    let keys = locate(&chars).map_err(|e| ConfigError::new("", e))?;
    let mut edits = Vec::new();
    let mut changes = Vec::new();
    // Keys cut from `{…}` rules, by rule: cut together, so that neighbours' commas agree.
    let mut flow: BTreeMap<Path, BTreeSet<Path>> = BTreeMap::new();
    for (path, mode) in dropped(&file) {
        let Some(at) = keys.get(&path) else { continue };
        if at.flow {
            flow.entry(path[..path.len() - 1].to_vec())
                .or_default()
                .insert(path.clone());
        } else {
            edits.extend(comment_out(
                &chars,
                at,
                &format!("mode `{mode}` does not use it"),
            ));
        }
        changes.push(format!(
            "{}: {} (mode `{mode}` does not use it; v2 ignored it too)",
            dotted(&path),
            if at.flow { "removed" } else { "commented out" }
        ));
    }
    for (parent, cut) in &flow {
        edits.extend(flow_cuts(&chars, &keys, parent, cut));
    }
    let mut tail = String::new();
    agent_lines(&file, &chars, &keys, &mut edits, &mut tail, &mut changes);
    timeout_line(&file, &chars, &keys, &mut edits, &mut changes);
    tool_lines(&file, &mut tail, &mut changes);
    every_tool_lines(&file, &mut tail, &mut changes);
    let mut out = apply(&chars, edits);
    if !tail.is_empty() {
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str("\n# --- added by `flakestorm migrate`: proxy-era fields to fill in ---\n");
        out.push_str(&tail);
    }
    Ok(Migrated { text: out, changes })
}

/// `a.b[0].c`, as the loader names paths.
fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// The v2 fields the loader would drop, with their rule's mode: in `chaos:` and in every
/// scenario of the contract's (or the top level's) `chaos_matrix`.
fn dropped(file: &Value) -> Vec<(Path, String)> {
    let mut places: Vec<(Path, &Value)> = vec![];
    if let Some(chaos) = file.get("chaos") {
        places.push((vec!["chaos".into()], chaos));
    }
    let matrices = [
        file.get("contract").and_then(|c| c.get("chaos_matrix")),
        file.get("chaos_matrix"),
    ];
    for (base, matrix) in [vec!["contract", "chaos_matrix"], vec!["chaos_matrix"]]
        .into_iter()
        .zip(matrices)
    {
        let Some(Value::Array(items)) = matrix else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let mut path: Path = base.iter().map(|s| s.to_string()).collect();
            path.push(i.to_string());
            places.push((path, item));
        }
    }
    let mut out = vec![];
    for (base, rules) in places {
        let mut copy = rules.clone();
        for (list, i, field) in lenient_v2_fields(&mut copy, "", &mut vec![]) {
            let mode = rules[list][i]["mode"].as_str().unwrap_or("?").to_string();
            let mut path = base.clone();
            path.extend([list.to_string(), i.to_string(), field.to_string()]);
            out.push((path, mode));
        }
    }
    out
}

/// `agent.command` and `agent.ready_url` as comments, inside a block `agent:` (else at
/// the end), when the agent has no command.
fn agent_lines(
    file: &Value,
    chars: &[char],
    keys: &HashMap<Path, KeyAt>,
    edits: &mut Vec<Edit>,
    tail: &mut String,
    changes: &mut Vec<String>,
) {
    let Some(agent) = file.get("agent").and_then(Value::as_object) else {
        return;
    };
    if agent.contains_key("command") {
        return;
    }
    let lines = [
        "command: \"python agent.py\"   # how to start the agent: flakestorm sets HTTPS_PROXY, \
         HTTP_PROXY and its CA for it, and stops it after the run",
        "ready_url: \"http://localhost:8790/health\"   # polled until 2xx before the run starts",
    ];
    let first_child = agent
        .keys()
        .filter_map(|k| keys.get(&vec!["agent".to_string(), k.clone()]))
        .filter(|k| !k.flow)
        .min_by_key(|k| k.index);
    match (keys.get(&vec!["agent".to_string()]), first_child) {
        (Some(key), Some(child)) if child.line > key.line => {
            let starts = line_starts(chars);
            let indent = " ".repeat(child.col);
            let mut put = String::new();
            for l in lines {
                put.push_str(&format!("{indent}# {l}\n"));
            }
            edits.push(Edit {
                at: starts[child.line - 1],
                cut: 0,
                put,
            });
        }
        _ => {
            tail.push_str("# agent:\n");
            for l in lines {
                tail.push_str(&format!("#   {l}\n"));
            }
        }
    }
    changes.push(
        "agent.command, agent.ready_url: added as comments (v2 had no way to start the agent; \
         fill them in to let flakestorm start it with the proxy set, or start it yourself)"
            .into(),
    );
}

/// A comment above a v2 `agent.timeout` under a second: v2's guides meant seconds, and
/// here it is milliseconds (the loader warns too, but only on stderr, once).
fn timeout_line(
    file: &Value,
    chars: &[char],
    keys: &HashMap<Path, KeyAt>,
    edits: &mut Vec<Edit>,
    changes: &mut Vec<String>,
) {
    let Some(ms) = file.pointer("/agent/timeout").and_then(Value::as_u64) else {
        return;
    };
    let Some(at) = keys.get(&vec!["agent".to_string(), "timeout".to_string()]) else {
        return;
    };
    if ms >= 1000 || at.flow {
        return;
    }
    let indent = " ".repeat(at.col);
    edits.push(Edit {
        at: line_starts(chars)[at.line - 1],
        cut: 0,
        put: format!(
            "{indent}# CHANGE-ME: timeout is in milliseconds here, so {ms} lets each call take \
             {ms} ms; for {ms} seconds write {}\n",
            ms * 1000
        ),
    });
    changes.push(format!(
        "agent.timeout: {ms} is milliseconds ({ms} ms per call to the agent): a comment above \
         it says so; write {} for {ms} seconds",
        ms * 1000
    ));
}

/// The tools the chaos rules and replay sessions name without a `tools:` entry, each with
/// the URL globs its rules' own `match_url` give (which only narrow a tool's requests).
fn named_tools(file: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let declared: BTreeSet<&str> = file
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let mut named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut from_rules = |rules: Option<&Value>| {
        for rule in rules.and_then(Value::as_array).into_iter().flatten() {
            let Some(tool) = rule.get("tool").and_then(Value::as_str) else {
                continue;
            };
            if tool == "*" || declared.contains(tool) {
                continue;
            }
            let globs = named.entry(tool.to_string()).or_default();
            match rule.get("match_url") {
                Some(Value::String(g)) => drop(globs.insert(g.clone())),
                Some(Value::Array(gs)) => {
                    globs.extend(gs.iter().filter_map(Value::as_str).map(str::to_string));
                }
                _ => {}
            }
        }
    };
    from_rules(file.pointer("/chaos/tool_faults"));
    let scenarios = [
        file.pointer("/contract/chaos_matrix"),
        file.get("chaos_matrix"),
    ];
    for s in scenarios
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
    {
        from_rules(s.get("tool_faults"));
    }
    let sessions = file.pointer("/replays/sessions").and_then(Value::as_array);
    for s in sessions.into_iter().flatten() {
        from_rules(s.get("tool_responses"));
    }
    named
}

/// A `tools:` entry for each named tool: written out when its rules gave its URLs and the
/// file has no `tools:` yet, else as comments to fill in and uncomment.
fn tool_lines(file: &Value, tail: &mut String, changes: &mut Vec<String>) {
    let named = named_tools(file);
    if named.is_empty() {
        return;
    }
    let has_tools = file.get("tools").is_some();
    let globs = |g: &BTreeSet<String>| {
        let quoted: Vec<String> = g
            .iter()
            .map(|s| Value::String(s.clone()).to_string())
            .collect();
        format!("[{}]", quoted.join(", "))
    };
    let (known, unknown): (Vec<_>, Vec<_>) =
        named.iter().partition(|(_, g)| !g.is_empty() && !has_tools);
    if !known.is_empty() {
        tail.push_str("# Each tool your rules name, with the URLs those rules gave it.\ntools:\n");
        for (tool, g) in &known {
            tail.push_str(&format!("  - name: {tool}\n    match_url: {}\n", globs(g)));
        }
        let list: Vec<&str> = known.iter().map(|(t, _)| t.as_str()).collect();
        changes.push(format!(
            "tools: {} added with the match_url their rules give (a rule's own match_url only \
             narrows a tool's requests; the tools: entry names them)",
            list.join(", ")
        ));
    }
    if unknown.is_empty() {
        return;
    }
    tail.push_str(
        "# The tools your rules name, for flakestorm to know their calls on the wire: set each\n\
         # match_url to the glob of that tool's URLs, then uncomment (under your `tools:` if you\n\
         # have one). Until then their faults match no request and their scenarios are not tested.\n",
    );
    if !has_tools && known.is_empty() {
        tail.push_str("# tools:\n");
    }
    for (tool, g) in &unknown {
        let g = if g.is_empty() {
            "[\"https://CHANGE-ME.example/*\"]".into()
        } else {
            globs(g)
        };
        tail.push_str(&format!("#   - name: {tool}\n#     match_url: {g}\n"));
    }
    let list: Vec<&str> = unknown.iter().map(|(t, _)| t.as_str()).collect();
    changes.push(format!(
        "tools: {} added as comments: each needs its URL glob (v2 named tools but never saw \
         their traffic)",
        list.join(", ")
    ));
}

/// A commented `tools:` skeleton when rules fault every tool (`tool: "*"`) and the file
/// declares none: such rules hit every non-LLM call, which reports can name only by a
/// `tools:` entry.
fn every_tool_lines(file: &Value, tail: &mut String, changes: &mut Vec<String>) {
    if file.get("tools").is_some() || !named_tools(file).is_empty() {
        return;
    }
    let star = |rules: Option<&Value>| {
        rules
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|r| r.get("tool").and_then(Value::as_str) == Some("*"))
    };
    let scenarios = [
        file.pointer("/contract/chaos_matrix"),
        file.get("chaos_matrix"),
    ];
    let in_scenarios = scenarios
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .any(|s| star(s.get("tool_faults")));
    if !star(file.pointer("/chaos/tool_faults")) && !in_scenarios {
        return;
    }
    tail.push_str(
        "# Your rules fault every tool (`tool: \"*\"`): they hit each call the agent makes that\n\
         # is not to its LLM. Name each tool with the glob of its URLs, so that faults, coverage\n\
         # and reports say which tool was hit, then uncomment.\n\
         # tools:\n\
         #   - name: CHANGE-ME\n\
         #     match_url: [\"https://CHANGE-ME.example/*\"]\n",
    );
    changes.push(
        "tools: a skeleton added as comments (`tool: \"*\"` rules name no tool: fill in each \
         tool's name and URL glob)"
            .into(),
    );
}

#[cfg(test)]
#[path = "migrate_tests.rs"]
mod tests;
