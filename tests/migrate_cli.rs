//! `flakestorm migrate` as a Flakestorm v2 user runs it: the v2 reference config
//! (tests/fixtures/v2-research-agent.yaml) migrated to a new file, never over an existing
//! one; the comments it adds filled in as the user would (where the agent and its search
//! tool are, how to start the agent); then `validate` accepts it and a contract run with
//! the agent gives a tested verdict, the tool fault fired on the agent's real calls.

mod common;

use common::cli::{agent_port, flakestorm, flakestorm_env, search_tool};

const V2: &str = include_str!("fixtures/v2-research-agent.yaml");

/// The migrated file's added comments, filled in: the agent started by flakestorm on
/// `agent` with its tool at `tool`, and the `tools:` entry uncommented with its glob.
fn fill_in(migrated: &str, agent: u16, tool: u16) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent/agent.py")
        .display()
        .to_string();
    let mut out = vec![];
    for line in migrated
        .replace("localhost:8790", &format!("127.0.0.1:{agent}"))
        .lines()
    {
        let line = if line.starts_with("  # command:") {
            out.push(format!("  command: \"exec python3 {script} {agent}\""));
            format!("  env: {{TOOL_URL: \"http://127.0.0.1:{tool}/search\"}}")
        } else if line.starts_with("  # ready_url:") {
            format!("  ready_url: \"http://127.0.0.1:{agent}/health\"")
        } else if line.starts_with("#     match_url:") {
            format!("    match_url: [\"http://127.0.0.1:{tool}/*\"]")
        } else if line == "# tools:" || line == "#   - name: web_search" {
            line.replacen("# ", "", 1).replacen("#   ", "  ", 1)
        } else {
            line.to_string()
        };
        out.push(line);
    }
    out.join("\n")
}

#[test]
fn the_v2_reference_config_migrated_and_filled_in_gives_a_tested_verdict() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v2.yaml"), V2).unwrap();
    let migrate = ["migrate", "v2.yaml", "-o", "flakestorm.yaml"];
    let (code, out, err) = flakestorm(&migrate, dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "the file goes to -o, not stdout: {out}");
    for said in [
        "migrate: agent.command, agent.ready_url: added as comments",
        "migrate: tools: web_search added as comments",
        "migrate: wrote flakestorm.yaml",
    ] {
        assert!(err.contains(said), "{said} not in:\n{err}");
    }
    let migrated = std::fs::read_to_string(dir.path().join("flakestorm.yaml")).unwrap();
    // The v2 text is all there, in its order: migrate only adds comments to this file.
    let kept: Vec<&str> = migrated
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let v2: Vec<&str> = V2
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(kept[..v2.len()], v2[..]);

    // Never over a file: a second migrate to the same path is refused, the file untouched.
    let (code, _, err) = flakestorm(&migrate, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("flakestorm.yaml: exists; migrate never writes over a file"),
        "{err}"
    );
    let again = std::fs::read_to_string(dir.path().join("flakestorm.yaml")).unwrap();
    assert_eq!(again, migrated);

    let tool = search_tool();
    let filled = fill_in(&migrated, agent_port(), tool.port);
    std::fs::write(dir.path().join("flakestorm.yaml"), &filled).unwrap();
    let env = [
        ("OPENAI_API_KEY", "sk-not-used-by-contract-runs"),
        ("FLAKESTORM_PROXY__LISTEN", "127.0.0.1:0"),
        ("FLAKESTORM_CONTROL__LISTEN", "127.0.0.1:0"),
    ];
    let (code, out, err) = flakestorm_env(&["validate", "-c", "flakestorm.yaml"], dir.path(), &env);
    assert_eq!(
        (code, out.trim()),
        (0, "flakestorm.yaml: ok"),
        "{err}\n{filled}"
    );
    assert!(!err.contains("match no request"), "{err}");

    let run = ["contract", "run", "-c", "flakestorm.yaml"];
    let (code, out, err) = flakestorm_env(&run, dir.path(), &env);
    // The agent answers from its search tool; with the tool down (503, the scenario's fault,
    // on its real calls) it cannot cite a source: the critical check fails, a verdict.
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("search-down  2 of 2 cases judged"), "{out}");
    assert!(out.contains("faults: tool_faults[0] (error) ×2"), "{out}");
    assert!(
        out.contains("✗ always-cite-source under search-down (critical)"),
        "{out}"
    );
    assert!(!out.contains("NOT TESTED"), "{out}");
}

#[test]
fn a_file_that_does_not_load_is_not_migrated_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = V2.replace(
        "  type: http\n",
        "  type: http\n  reset_function: \"agent:reset\"\n",
    );
    std::fs::write(dir.path().join("v2.yaml"), v2).unwrap();
    let (code, out, err) = flakestorm(&["migrate", "v2.yaml", "-o", "new.yaml"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("agent.reset_function: Python reset hooks are not supported"),
        "{err}"
    );
    assert!(
        err.contains("migrate: nothing written: v2.yaml must load"),
        "{err}"
    );
    assert!(!dir.path().join("new.yaml").exists());
}

#[test]
fn without_output_the_migrated_file_goes_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v2.yaml"), V2).unwrap();
    let (code, out, err) = flakestorm(&["migrate", "v2.yaml"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("# A Flakestorm v2 config"), "{out}");
    assert!(out.contains("#   - name: web_search\n"), "{out}");
    assert!(!err.contains("wrote"), "{err}");
    let (code, out, err) = flakestorm(&["migrate", "missing.yaml"], dir.path());
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.starts_with("flakestorm: cannot read missing.yaml"),
        "{err}"
    );
}
