//! The pool agent of tests/run_pool.rs and tests/run_settle.rs (tests/fixtures/agent/
//! pool_agent.py), its config and a run of `flakestorm contract run` on it.

use super::cli::{flakestorm, write_config};
use super::origin;
use serde_json::Value;

/// Eight prompts; three ask for a report, the last prompt among them, so the run's very
/// last case sends an email after answering.
pub const PROMPTS: [&str; 8] = [
    "Q3 revenue?",
    "Send me the Q3 report",
    "Who is the CEO?",
    "Headcount?",
    "A report on the CEO",
    "Office locations?",
    "Main competitors?",
    "Email the final report",
];

pub struct Origins {
    pub search: origin::Origin,
    pub email: origin::Origin,
}

pub async fn origins() -> Origins {
    Origins {
        search: origin::search_tool().await,
        email: origin::fixed(None, "sent").await,
    }
}

/// The config: the pool agent started by flakestorm (`agent` gives `command`, `endpoint`
/// and `ready_url`), a search tool that fails half the time in one scenario, an email
/// tool that must not be called.
pub fn config(o: &Origins, agent: &str, advanced: &str) -> String {
    config_env(o, agent, advanced, "")
}

/// `config`, with more of the agent's environment (`, NAME: 'value'` entries).
pub fn config_env(o: &Origins, agent: &str, advanced: &str, env: &str) -> String {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent/pool_agent.py");
    let agent = agent.replace("AGENT", &fixture.display().to_string());
    format!(
        r#"output: {{format: [json, html]}}
tools:
  - {{name: search, match_url: 'http://{search}/*'}}
  - {{name: email, match_url: 'http://{email}/*'}}
advanced: {advanced}
agent:
{agent}
  env: {{TOOL_URL: 'http://{search}/q', EMAIL_URL: 'http://{email}/send'{env}}}
golden_prompts: {prompts}
contract:
  name: pool
  invariants:
    - {{id: no-email, type: tool_not_called, tool: email}}
    - {{id: answers, type: completes}}
  chaos_matrix:
    - name: no-chaos
    - name: flaky-search
      tool_faults: [{{tool: search, mode: error, error_code: 503, probability: 0.5}}]
"#,
        search = o.search.addr,
        email = o.email.addr,
        prompts = serde_json::to_string(&PROMPTS).unwrap(),
    )
}

pub const POOLED: &str = "  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'exec python3 AGENT {port}'\n  ready_url: 'http://127.0.0.1:{port}/health'";

/// Runs `flakestorm contract run` on `yaml` in a fresh folder: exit code, output, report.
pub async fn run(yaml: String) -> (i32, String, Value, String) {
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &yaml);
        let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
        let json = std::fs::read_to_string(dir.path().join("reports/contract.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
        let html = std::fs::read_to_string(dir.path().join("reports/contract.html"))
            .unwrap_or_else(|e| panic!("no HTML report ({e}): {out}\n{err}"));
        (
            code,
            format!("{out}\n{err}"),
            serde_json::from_str(&json).unwrap(),
            html,
        )
    })
    .await
    .unwrap()
}

pub fn tool_of(e: &Value) -> Option<&str> {
    (e["target"]["kind"] == "tool").then(|| e["target"]["name"].as_str())?
}

/// The agent of `late_emails`: it thinks 0.3 s per case and emails 0.8 s after answering,
/// later than the default 500 ms window.
pub const LATE: &str = ", AGENT_DELAY: '0.3', EMAIL_DELAY: '0.8'";

/// `urllib.parse.quote` as the agent applies it (letters, digits, `_.-~/` kept).
pub fn url_quote(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
