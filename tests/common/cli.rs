//! Running the built binary as a user does: in a folder, with arguments, reading its
//! exit code, stdout and stderr; and a Python agent with its search tool for run commands.

use std::process::Command;

pub fn flakestorm(args: &[&str], dir: &std::path::Path) -> (i32, String, String) {
    flakestorm_env(args, dir, &[])
}

/// `flakestorm` with extra environment variables.
pub fn flakestorm_env(
    args: &[&str],
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

// Ports named in configs before anything listens on them (`common::ports`).
#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use super::ports::{agent_port, closed_port};

/// Writes `flakestorm.yaml` in `dir`: ephemeral proxy and control listeners, then `rest`.
pub fn write_config(dir: &std::path::Path, rest: &str) {
    let base = "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\n";
    std::fs::write(dir.join("flakestorm.yaml"), format!("{base}{rest}")).unwrap();
}

/// A Python search tool and a Python agent (tests/fixtures/agent) in `dir`'s config: the
/// tool runs now (killed by the guard), the agent is started by flakestorm itself (so the
/// run's proxy and control API take free ports: the config names none).
pub struct PythonAgent {
    pub tool: SearchTool,
    pub yaml: String,
}

/// The fixtures' search tool (tests/fixtures/agent/tool.py), running until dropped.
pub struct SearchTool {
    child: std::process::Child,
    pub port: u16,
}

impl Drop for SearchTool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn search_tool() -> SearchTool {
    use std::io::BufRead;
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent");
    let mut child = Command::new("python3")
        .arg(fixtures.join("tool.py"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().unwrap();
    SearchTool { child, port }
}

pub fn python_agent() -> PythonAgent {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent");
    let tool = search_tool();
    let tool_port = tool.port;
    let agent_port = agent_port();
    let yaml = format!(
        r#"
advanced: {{concurrency: 1, seed: 1}}
tools: [{{name: web_search, match_url: "http://127.0.0.1:{tool_port}/*"}}]
agent:
  endpoint: "http://127.0.0.1:{agent_port}/invoke"
  command: "exec python3 {agent} {agent_port}"
  env: {{TOOL_URL: "http://127.0.0.1:{tool_port}/search"}}
  ready_url: "http://127.0.0.1:{agent_port}/health"
golden_prompts: ["What was ACME's Q3 revenue?"]
"#,
        agent = fixtures.join("agent.py").display()
    );
    PythonAgent { tool, yaml }
}

/// Writes `dir/flakestorm.yaml`: the incident agent (tests/fixtures/agent/incident_agent.py,
/// fixed or not, started by flakestorm) with its search tool at `tool`, then `extra`.
pub fn incident_config(
    dir: &std::path::Path,
    tool: std::net::SocketAddr,
    fixed: bool,
    extra: &str,
) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent");
    let port = agent_port();
    let yaml = format!(
        r#"proxy: {{listen: '127.0.0.1:0'}}
control: {{listen: '127.0.0.1:0'}}
advanced: {{concurrency: 1, seed: 1}}
tools: [{{name: web_search, match_url: "http://{tool}/*"}}]
agent:
  endpoint: "http://127.0.0.1:{port}/invoke"
  command: "exec python3 {agent} {port}"
  env: {{TOOL_URL: "http://{tool}/search", FIXED: "{fixed}"}}
  ready_url: "http://127.0.0.1:{port}/health"
{extra}"#,
        agent = fixtures.join("incident_agent.py").display(),
        fixed = u8::from(fixed),
    );
    std::fs::write(dir.join("flakestorm.yaml"), yaml).unwrap();
}
