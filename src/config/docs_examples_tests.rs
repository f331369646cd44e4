//! Every ```yaml block in README.md and docs/*.md loads through the real loader, so the
//! docs cannot drift from what the code accepts. A block that is a list of chaos rules
//! (faults.md) is loaded inside the list its rules belong to; a block whose info string is
//! `yaml fragment` is a deliberate excerpt and is skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Overrides, load_with_env};

/// (line, info string, body) of each fenced yaml block of `file`.
fn yaml_blocks(file: &Path) -> Vec<(usize, String, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = vec![];
    let mut open: Option<(usize, String, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut open {
            None => {
                if let Some(info) = line.trim_start().strip_prefix("```yaml") {
                    open = Some((i + 1, format!("yaml{info}"), String::new()));
                }
            }
            Some(_) if line.trim_start().starts_with("```") => out.extend(open.take()),
            Some((_, _, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    out
}

/// A rule list becomes a `chaos:` section; its rules say which list they are.
fn as_config(body: &str) -> String {
    if !body.trim_start().starts_with("- ") {
        return body.to_string();
    }
    let list = if body.contains("{type:") || body.contains(" type:") {
        "context_attacks"
    } else if body.contains("tool:") {
        "tool_faults"
    } else {
        "llm_faults"
    };
    let rules: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "tools:\n  - {{name: web_search, match_url: \"https://search.example/*\"}}\nchaos:\n  {list}:\n{rules}"
    )
}

#[test]
fn every_yaml_example_in_the_docs_loads() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let dir = tempfile::tempdir().unwrap();
    let mut loaded = 0;
    let mut failures = vec![];
    for file in &files {
        for (line, info, body) in yaml_blocks(file) {
            if info.split_whitespace().any(|w| w == "fragment") {
                continue;
            }
            let config = as_config(&body);
            // Any `${VAR}` the example uses is set, as its reader would have it (as long as
            // a token off loopback must be).
            let vars: BTreeMap<String, String> = config
                .split("${")
                .skip(1)
                .filter_map(|s| s.split('}').next())
                .map(|name| (name.to_string(), "x".repeat(40)))
                .collect();
            let path = dir.path().join("example.yaml");
            std::fs::write(&path, &config).unwrap();
            let name = format!("{}:{line}", file.strip_prefix(&root).unwrap().display());
            match load_with_env(Some(&path), &Overrides::default(), &vars) {
                Ok(_) => loaded += 1,
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(loaded >= 20, "only {loaded} examples found");
}
