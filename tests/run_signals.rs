//! A run command that ends abnormally leaves no agent behind: `replay run` killed with
//! SIGKILL (alone, or with its whole process group), SIGTERM or SIGHUP while its agent
//! (started from `agent.command`, the shell's child) holds a case, and `flakestorm serve`
//! SIGKILLed while a run it started holds one.
//! Each time the agent's whole process group is gone, and the next run starts and passes.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli::{agent_port, closed_port, flakestorm};
use common::procs::{assert_group_gone, eventually};
use serde_json::json;

/// flakestorm's startup and the agent's, on a loaded machine.
const STARTS: Duration = Duration::from_secs(90);

/// A folder with the held agent's config (its agent on a free port, its search tool's
/// calls answered 504 from the session), a replay session, and the agent's state folder,
/// holding calls until `release`.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new(stubborn: bool) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let b = Bench { dir };
        std::fs::create_dir(b.state()).unwrap();
        std::fs::write(b.state().join("hold"), "").unwrap();
        if stubborn {
            std::fs::write(b.state().join("ignore-term"), "").unwrap();
        }
        std::fs::write(b.path().join("flakestorm.yaml"), b.config()).unwrap();
        std::fs::create_dir(b.path().join("replays")).unwrap();
        std::fs::write(b.path().join("replays/held.yaml"), SESSION).unwrap();
        b
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn state(&self) -> PathBuf {
        self.path().join("state")
    }

    /// The agent's config: the held agent as the shell's child (`& wait`), so only a stop
    /// of its whole process group reaches it.
    fn config(&self) -> String {
        let agent =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent/held_agent.py");
        let (port, tool) = (agent_port(), closed_port());
        format!(
            r#"proxy: {{listen: '127.0.0.1:0'}}
control: {{listen: '127.0.0.1:0'}}
advanced: {{concurrency: 1, seed: 1}}
tools: [{{name: web_search, match_url: "http://127.0.0.1:{tool}/*"}}]
agent:
  endpoint: "http://127.0.0.1:{port}/invoke"
  command: "python3 {agent} {port} {state} & wait"
  env: {{TOOL_URL: "http://127.0.0.1:{tool}/search"}}
  ready_url: "http://127.0.0.1:{port}/health"
{CONTRACT}"#,
            agent = agent.display(),
            state = self.state().display(),
        )
    }

    fn release(&self) {
        std::fs::remove_file(self.state().join("hold")).unwrap();
    }
}

/// Waits until the agent whose state folder is `state` holds a call; its pid and process
/// group.
fn held(state: &Path) -> (u32, u32) {
    let invoked = state.join("invoked");
    assert!(
        eventually(STARTS, || invoked.exists()),
        "no case reached the agent"
    );
    let ids = std::fs::read_to_string(state.join("agent.pid")).unwrap();
    let mut ids = ids.split_whitespace().map(|n| n.parse().unwrap());
    (ids.next().unwrap(), ids.next().unwrap())
}

const CONTRACT: &str = r#"golden_prompts: ["What was ACME's Q3 revenue?"]
contract:
  name: Held Agent Contract
  invariants:
    - {id: completes, type: completes, severity: critical}
    - {id: admits-outage, type: regex, pattern: "(?i)unavailable", severity: high}
"#;

const SESSION: &str = r#"
id: held
input: "What was ACME's Q3 revenue?"
contract: Held Agent Contract
tool_responses:
  - {tool: web_search, status: 504, response: null}
"#;

const REPLAY: [&str; 5] = ["replay", "run", "replays", "-o", "replay.json"];

/// `flakestorm replay run` killed with `signal` while its agent holds a case: how it exited,
/// what it said, and the agent's process group. `whole_group`: flakestorm leads a process
/// group and the signal goes to all of it, as a CI job's timeout does.
fn kill_replay_run(
    b: &Bench,
    signal: &str,
    whole_group: bool,
) -> (std::process::ExitStatus, String, u32) {
    let mut run = Command::new(env!("CARGO_BIN_EXE_flakestorm"));
    run.args(REPLAY)
        .current_dir(b.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if whole_group {
        std::os::unix::process::CommandExt::process_group(&mut run, 0);
    }
    let run = run.spawn().unwrap();
    let (_, pgid) = held(&b.state());
    let target = match whole_group {
        true => format!("-{}", run.id()),
        false => run.id().to_string(),
    };
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), "--", &target])
        .status()
        .unwrap();
    assert!(sent.success());
    // Bounded: flakestorm that waited forever for its agent would fail here, not hang.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(run.wait_with_output().unwrap()));
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("flakestorm did not end after SIG{signal}"));
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into(),
        pgid,
    )
}

/// After the kill (and the check that no agent was left): no report, and the next run
/// starts the agent again on the same port and passes.
fn the_next_run_passes(b: &Bench) {
    assert!(!b.path().join("replay.json").exists(), "no report");
    b.release();
    let (code, out, err) = flakestorm(&REPLAY, b.path());
    assert_eq!(code, 0, "the next run passes\n{out}\n{err}");
    assert!(b.path().join("replay.json").exists());
}

#[test]
fn replay_run_killed_with_sigkill_leaves_no_agent() {
    // The agent ignores SIGTERM: its supervisor must follow up with SIGKILL.
    let b = Bench::new(true);
    let (status, _, pgid) = kill_replay_run(&b, "KILL", false);
    assert_group_gone(pgid, Duration::from_secs(15), "after SIGKILL");
    assert_eq!(status.signal(), Some(9), "{status}");
    the_next_run_passes(&b);
}

/// A CI job's timeout: SIGKILL to flakestorm's whole process group. The agent's group,
/// led by its supervisor, is not in it; the supervisor outlives flakestorm and stops it.
#[test]
fn replay_run_killed_with_its_whole_process_group_leaves_no_agent() {
    let b = Bench::new(false);
    let (status, _, pgid) = kill_replay_run(&b, "KILL", true);
    assert_group_gone(
        pgid,
        Duration::from_secs(15),
        "after SIGKILL to flakestorm's group",
    );
    assert_eq!(status.signal(), Some(9), "{status}");
    the_next_run_passes(&b);
}

#[test]
fn replay_run_stopped_with_sigterm_stops_its_agent_and_exits_143() {
    let b = Bench::new(false);
    let (status, err, pgid) = kill_replay_run(&b, "TERM", false);
    assert_group_gone(pgid, Duration::from_secs(15), "after SIGTERM");
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(
        err.contains("interrupted (SIGTERM)") && err.contains("no report was written"),
        "{err}"
    );
    the_next_run_passes(&b);
}

#[test]
fn replay_run_hung_up_stops_its_agent_and_exits_129() {
    let b = Bench::new(false);
    let (status, err, pgid) = kill_replay_run(&b, "HUP", false);
    assert_group_gone(pgid, Duration::from_secs(15), "after SIGHUP");
    assert_eq!(status.code(), Some(129), "{err}");
    assert!(
        err.contains("interrupted (SIGHUP)") && err.contains("no report was written"),
        "{err}"
    );
    the_next_run_passes(&b);
}

/// `flakestorm serve` SIGKILLed while a run it started from `agent.command` holds a case.
#[tokio::test]
async fn a_daemon_killed_with_sigkill_leaves_no_agent_of_its_runs() {
    let b = Bench::new(true);
    let daemon = common::serve::serve(b.path(), &["-c", "flakestorm.yaml"], "warn", false).await;
    let http = daemon.client();
    let r = http
        .post(daemon.url("/v1/runs"))
        .header("content-type", "application/json")
        .body(
            json!({"kind": "contract", "config_path": b.path().join("flakestorm.yaml")})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let run: serde_json::Value = {
        let status = r.status();
        let text = r.text().await.unwrap();
        assert_eq!(status, 202, "{text}");
        serde_json::from_str(&text).unwrap()
    };
    let id = run["id"].as_str().unwrap();
    let held = tokio::task::spawn_blocking({
        let state = b.state();
        move || held(&state)
    });
    // A run that ends before its agent holds a case, or never gets there, says where it is.
    let read_run = || async {
        let url = daemon.url(&format!("/v1/runs/{id}"));
        let text = http.get(url).send().await.unwrap().text().await.unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let run_ended = async {
        loop {
            let run = read_run().await;
            if !matches!(run["status"].as_str(), Some("queued" | "running")) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let pgid = tokio::select! {
        held = held => match held {
            Ok((_, pgid)) => pgid,
            Err(e) => panic!("{e}; the run: {:#}", read_run().await),
        },
        run = run_ended => panic!("the run ended before its agent held a case: {run:#}"),
    };
    let mut child = daemon.child;
    child.start_kill().unwrap(); // SIGKILL
    common::within("serve dies", child.wait()).await.unwrap();
    tokio::task::spawn_blocking(move || {
        assert_group_gone(pgid, Duration::from_secs(15), "after serve's SIGKILL");
    })
    .await
    .unwrap();
}
