//! An agent that is a script (`agent.command` without `agent.endpoint`): one process per
//! case, started with `sh -c` in a process group of its own, with the proxy environment of
//! its case's lane (so every call it makes is that case's, by construction) and the
//! prompt as `{prompt}` in its arguments (passed as `"$FLAKESTORM_PROMPT"`, one argument
//! whatever it holds) or, without `{prompt}`, on its stdin. Its stdout is the answer
//! (`response_path` read when it is a JSON object or array), a non-zero exit is no answer
//! (`InvokeError::ScriptFailed`, with its stderr's end), and its stderr is appended to
//! its lane's agent log with the exit status. A case that runs past `agent.timeout`, or
//! whose run is cancelled, has its whole group killed.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::process::{Pid, Signal};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::InvokeError;
use super::supervise::signal_group;

/// The variable that holds the prompt; `{prompt}` in the command stands for it.
pub const PROMPT_VAR: &str = "FLAKESTORM_PROMPT";

/// How much of a failed script's stderr its case's error quotes.
const STDERR_TAIL: usize = 2000;

/// How a script agent is run: its command, environment and log.
#[derive(Debug, Clone)]
pub struct Script {
    command: String,
    env: Vec<(String, String)>,
    log: Option<PathBuf>,
    /// The process group of its last run while a process of it (one `sh` started in the
    /// background) may still run after `sh` exited; 0 once none can.
    lingering: Arc<AtomicU32>,
}

/// What one run of the script printed and how it ended.
struct Ran {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: std::process::ExitStatus,
}

impl Script {
    /// `command` as written in `agent.command`; `env` the lane's proxy environment with
    /// `agent.env` over it; each run's stderr appended to `log`.
    pub fn new(command: &str, env: Vec<(String, String)>, log: Option<PathBuf>) -> Script {
        Script {
            command: command.to_string(),
            env,
            log,
            lingering: Arc::default(),
        }
    }

    /// Whether every process of its last run has exited: its process group is empty (or
    /// it never ran, or was killed). A group id taken again by a new process meanwhile
    /// reads as not gone: the case then settles on its window, as if it could not tell.
    pub fn tree_gone(&self) -> bool {
        let group = self.lingering.load(Ordering::Acquire);
        let Some(pid) = i32::try_from(group).ok().and_then(Pid::from_raw) else {
            return true;
        };
        if rustix::process::test_kill_process_group(pid).is_err() {
            self.lingering.store(0, Ordering::Release);
            return true;
        }
        false
    }

    /// The command `sh -c` runs: `{prompt}` made the quoted variable.
    fn line(&self) -> String {
        let var = format!("\"${PROMPT_VAR}\"");
        self.command.replace(crate::config::AGENT_PROMPT, &var)
    }

    /// Runs the script for `prompt`: its stdout, or why there is no answer.
    pub async fn run(&self, prompt: &str, timeout: Duration) -> Result<Vec<u8>, InvokeError> {
        let on_stdin = !self.command.contains(crate::config::AGENT_PROMPT);
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(self.line())
            .stdin(if on_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so a timeout reaches what `sh -c` started.
            .process_group(0)
            .kill_on_drop(true);
        for name in super::withheld::withheld() {
            cmd.env_remove(name);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env(PROMPT_VAR, prompt);
        let mut child = cmd.spawn().map_err(|e| InvokeError::ScriptNotStarted {
            cause: e.to_string(),
        })?;
        // Kills the whole group if the case is dropped (its run cancelled) or past its
        // timeout: `kill_on_drop` reaches only `sh`, not what it started.
        let mut group = Group(child.id());
        if let Some(mut stdin) = child.stdin.take() {
            let prompt = prompt.as_bytes().to_vec();
            // A script that never reads its stdin must not block on it.
            tokio::spawn(async move {
                let _ = stdin.write_all(&prompt).await;
            });
        }
        let ran = tokio::time::timeout(timeout, child.wait_with_output()).await;
        let ran = match ran {
            Ok(Ok(out)) => {
                // Reaped: its group id may be another's once its last process exits; what
                // it left running is looked for by `tree_gone`, never signalled.
                let left = group.0.take().unwrap_or(0);
                self.lingering.store(left, Ordering::Release);
                Ran {
                    stdout: out.stdout,
                    stderr: out.stderr,
                    status: out.status,
                }
            }
            Ok(Err(e)) => {
                return Err(InvokeError::ScriptFailed {
                    status: "not waited for".into(),
                    stderr: e.to_string(),
                });
            }
            Err(_) => {
                drop(group);
                self.log_run("killed: past agent.timeout", b"").await;
                return Err(InvokeError::Timeout {
                    ms: timeout.as_millis() as u64,
                });
            }
        };
        self.log_run(&ran.status.to_string(), &ran.stderr).await;
        if !ran.status.success() {
            return Err(InvokeError::ScriptFailed {
                status: ran.status.to_string(),
                stderr: tail(&ran.stderr),
            });
        }
        Ok(ran.stdout)
    }

    /// Appends one run's end and stderr to the log (a log that cannot be written is
    /// skipped: the answer is what the case is judged on).
    async fn log_run(&self, status: &str, stderr: &[u8]) {
        let Some(path) = &self.log else { return };
        let mut entry = format!("--- agent script ({status}) ---\n").into_bytes();
        entry.extend_from_slice(stderr);
        if !entry.ends_with(b"\n") {
            entry.push(b'\n');
        }
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await;
        if let Ok(mut f) = file {
            let _ = f.write_all(&entry).await;
        }
    }
}

/// A script's process group, killed when dropped unless it was reaped (`None`).
struct Group(Option<u32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            signal_group(g, Signal::KILL);
        }
    }
}

impl super::Agent {
    /// For a script agent, whether every process its last run started has exited
    /// (`Script::tree_gone`): nothing more of its case can come. `None` for other agents.
    pub fn script_tree_gone(&self) -> Option<bool> {
        self.script.as_ref().map(|s| s.tree_gone())
    }
}

/// `agent` run as a script through the lane at `proxy` (its environment as a started
/// agent's), each run's stderr in `log` (emptied first), when the agent is a script; else
/// `agent` as it is.
pub(super) async fn on_lane(
    agent: super::Agent,
    config: &crate::config::Config,
    proxy: &super::ProxyAt<'_>,
    log: &std::path::Path,
) -> super::Agent {
    let spec = agent.target();
    let (true, Some(command)) = (spec.script, spec.command.clone()) else {
        return agent;
    };
    let env = super::launch::agent_env(config, spec, proxy);
    if let Some(dir) = log.parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    let _ = tokio::fs::write(log, b"").await;
    agent.with_script(Script::new(&command, env, Some(log.to_path_buf())))
}

/// The end of a script's stderr, as `: <text>` for an error message, or empty.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text
        .char_indices()
        .rev()
        .nth(STDERR_TAIL)
        .map_or(0, |(i, _)| i);
    format!(": {}", &text[start..])
}

/// The answer in a script's stdout: at `response_path` when it is a JSON object or array,
/// else the text itself, without its trailing newline.
pub fn answer(stdout: &[u8], path: &crate::config::ResponsePath) -> Result<String, InvokeError> {
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return super::answer::extract(trimmed.as_bytes(), path);
    }
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(command: &str) -> Script {
        Script::new(command, vec![("GREETING".into(), "hi".into())], None)
    }

    #[tokio::test]
    async fn the_prompt_is_one_argument_whatever_it_holds() {
        let s = script("printf '%s|' $GREETING {prompt}");
        let out = s.run("it's \"$HOME\"; rm -rf /", Duration::from_secs(10));
        assert_eq!(out.await.unwrap(), b"hi|it's \"$HOME\"; rm -rf /|");
    }

    #[tokio::test]
    async fn without_the_placeholder_the_prompt_is_on_stdin() {
        let s = script("tr a-z A-Z");
        let out = s.run("shout", Duration::from_secs(10));
        assert_eq!(out.await.unwrap(), b"SHOUT");
    }

    #[tokio::test]
    async fn a_failing_script_says_its_status_and_stderr() {
        let s = script("echo boom >&2; exit 3");
        let out = s.run("x", Duration::from_secs(10));
        let e = out.await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "agent script exited (exit status: 3): boom",
            "{e:?}"
        );
    }

    /// Whether process `pid` is gone (or a zombie, dead but not yet reaped by its new
    /// parent), within 5 s of a kill: a kill is delivered asynchronously.
    async fn gone(pid: &str) -> bool {
        let stat = format!("/proc/{pid}/stat");
        for _ in 0..250 {
            let alive = std::process::Command::new("kill")
                .args(["-0", pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            let zombie = std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            });
            if !alive || zombie {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_script_past_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let s = script(&format!(
            "sleep 30 & echo $! > '{}'; wait",
            pidfile.display()
        ));
        let out = s.run("x", Duration::from_millis(1000));
        let e = tokio::time::timeout(Duration::from_secs(10), out)
            .await
            .expect("killed, not waited for");
        assert_eq!(e.unwrap_err(), InvokeError::Timeout { ms: 1000 });
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(
            gone(pid.trim()).await,
            "its child `sleep 30` ({pid}) still runs"
        );
    }

    #[tokio::test]
    async fn a_dropped_script_is_killed_with_its_children() {
        // A cancelled run drops its cases: the script's group goes with them. The script
        // says its child's pid through a FIFO, so the test waits for nothing else.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pid");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let s = script(&format!("sleep 30 & echo $! > '{}'; wait", fifo.display()));
        let mut run = Box::pin(s.run("x", Duration::from_secs(30)));
        let said = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
        let pid = tokio::select! {
            out = &mut run => panic!("the script ended: {out:?}"),
            pid = said => pid.unwrap().unwrap(),
        };
        drop(run);
        assert!(
            gone(pid.trim()).await,
            "its child `sleep 30` ({pid}) still runs"
        );
    }

    #[tokio::test]
    async fn a_script_that_cannot_start_says_so_without_its_command() {
        // No `sh` on its PATH; its command holds a secret expanded at load.
        let s = Script::new(
            "echo s3cr3t-token",
            vec![("PATH".into(), "/nowhere".into())],
            None,
        );
        let e = s.run("x", Duration::from_secs(10)).await.unwrap_err();
        assert!(matches!(e, InvokeError::ScriptNotStarted { .. }), "{e:?}");
        let said = e.to_string();
        assert!(
            said.starts_with("`sh -c <agent.command>` did not start: "),
            "{said}"
        );
        assert!(!said.contains("s3cr3t"), "{said}");
    }

    #[test]
    fn json_stdout_is_read_at_the_path_and_text_is_the_answer() {
        let path = crate::config::ResponsePath::parse("result").unwrap();
        assert_eq!(answer(b"{\"result\": \"ok\"}\n", &path).unwrap(), "ok");
        assert_eq!(answer(b"42\n", &path).unwrap(), "42");
        assert_eq!(answer(b"two\nlines\n", &path).unwrap(), "two\nlines");
    }
}
