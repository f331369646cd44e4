//! `agent.command`: start the agent with the proxy environment (config.md; with proxy
//! credentials when `proxy.users` is set) and `agent.env`, in a process group of its own
//! led by its supervisor (`supervise.rs`: flakestorm's own binary, which stops the group
//! when flakestorm ends however it ends), its output written to a log file; and stop it
//! at the end: SIGTERM to its process group, then SIGKILL. Dropping the handle (an
//! interrupted run) stops the group too, so no agent outlives flakestorm. The agent
//! inherits flakestorm's environment but the variables that hold the control token
//! (`withheld`).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::Signal;
use tokio::process::Command;

use super::interrupt::{self, Group};
use super::supervise::{self, Lifeline, signal_group};
use crate::capture::{Namespace, RunAs};

/// How long the supervisor may take to set up the agent's network namespace (a few
/// `ip` and `nft` calls: milliseconds).
const NAMESPACE_WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("could not start agent command `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("agent command `{command}` exited ({status}) before {what}{hint}{tail}")]
    Exited {
        command: String,
        status: String,
        what: String,
        hint: &'static str,
        /// The end of its log, as `:\n<lines>`, or empty.
        tail: String,
    },
    #[error("agent log {path}: {source}")]
    Log {
        path: String,
        source: std::io::Error,
    },
    #[error("agent was not ready within {secs}s: {what}")]
    NotReady { what: String, secs: u64 },
}

/// The environment that routes an agent through the proxy and makes it trust the CA (its
/// absolute path: an agent may change directory). `NO_PROXY` is emptied: a `localhost`
/// entry would let local LLMs (Ollama) bypass it. Node (24+) reads the proxy variables only
/// with `NODE_USE_ENV_PROXY=1`. With `user` (name, password), the proxy URL carries them
/// (`proxy.users`).
pub fn proxy_env(
    proxy: SocketAddr,
    ca: &Path,
    user: Option<(&str, &str)>,
) -> Vec<(String, String)> {
    let auth = user
        .map(|(n, p)| format!("{}:{}@", userinfo(n), userinfo(p)))
        .unwrap_or_default();
    let url = format!("http://{auth}{proxy}");
    let ca = std::path::absolute(ca).unwrap_or_else(|_| ca.to_path_buf());
    let ca = ca.display().to_string();
    let mut env = vec![];
    for name in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        env.push((name.to_string(), url.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.to_string(), String::new()));
    }
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    for name in [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "CURL_CA_BUNDLE",
    ] {
        env.push((name.to_string(), ca.clone()));
    }
    env
}

/// What `flakestorm wrap` reads (`mcp::stdio`): the proxy URL of `env` (the agent's lane,
/// with its credentials) and the proxy's wrap directory.
pub fn wrap_env(env: &[(String, String)], dir: &Path) -> Vec<(String, String)> {
    use crate::mcp::stdio::{ENV_DIR, ENV_PROXY};
    let url = env
        .iter()
        .find(|(k, _)| k == "HTTP_PROXY")
        .map(|(_, v)| v.clone());
    let mut wrap = vec![(ENV_DIR.to_string(), dir.display().to_string())];
    wrap.extend(url.map(|u| (ENV_PROXY.to_string(), u)));
    wrap
}

/// `env` with the user's `agent.env` over it. `NO_PROXY` and `no_proxy` are one setting:
/// clients read either (undici the lowercase first), so the user's value, in either
/// spelling, is given in both.
pub fn with_user_env(
    mut env: Vec<(String, String)>,
    user: &[(String, String)],
) -> Vec<(String, String)> {
    env.extend(user.iter().cloned());
    let no_proxy = user
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case("no_proxy"));
    if let Some((_, value)) = no_proxy {
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name.to_string(), value.clone()));
        }
    }
    env
}

/// Percent-encodes a URL userinfo part (RFC 3986: all but unreserved characters).
fn userinfo(s: &str) -> percent_encoding::PercentEncode<'_> {
    percent_encoding::utf8_percent_encode(s, crate::exchange::URL_UNRESERVED)
}

/// A running agent started by flakestorm.
pub struct AgentProcess {
    command: String,
    /// Where its stdout and stderr go, if not inherited.
    log: Option<std::path::PathBuf>,
    /// What runs; taken when it is stopped.
    group: Option<Group>,
    /// What is served for it while it runs (its namespace's capture sockets).
    kept: Option<Box<dyn Send + Sync>>,
}

impl AgentProcess {
    /// Runs `command` with `sh -c` and `env`, in a process group of its own; its stdout and
    /// stderr go to `log` (created with its folder, replaced each run), else inherited.
    pub fn start(
        command: &str,
        env: &[(String, String)],
        log: Option<&Path>,
    ) -> Result<AgentProcess, SpawnError> {
        AgentProcess::start_with(command, env, log, None)
    }

    /// `start` in a network namespace of its own (`agent.capture: netns`): the supervisor
    /// is started by `unshare`, sets the namespace up, and hands over its capture sockets
    /// and socket factory, which this waits for. A namespace that cannot be set up is an
    /// error that says why, and the supervisor is stopped.
    pub async fn start_captured(
        command: &str,
        env: &[(String, String)],
        log: Option<&Path>,
    ) -> Result<(AgentProcess, Namespace), SpawnError> {
        let failed = |why: String| SpawnError::Start {
            command: command.to_string(),
            source: std::io::Error::other(why),
        };
        if supervise::program().is_none() {
            return Err(failed(
                "agent.capture: netns needs flakestorm's own binary as the agent's supervisor"
                    .into(),
            ));
        }
        let mut process = AgentProcess::start_with(command, env, log, Some(RunAs::current()))?;
        let lifeline = process.group.as_mut().and_then(|g| g.lifeline.as_mut());
        let got = match lifeline {
            Some(l) => tokio::time::timeout(NAMESPACE_WAIT, l.namespace())
                .await
                .unwrap_or_else(|_| Err(format!("not set up within {NAMESPACE_WAIT:?}"))),
            None => Err("no lifeline to its supervisor".into()),
        };
        match got {
            Ok(ns) => Ok((process, ns)),
            Err(why) => {
                let tail = process.tail();
                process.stop(Duration::from_secs(1)).await;
                Err(failed(format!(
                    "the agent's network namespace (agent.capture: netns): {why}{tail}"
                )))
            }
        }
    }

    fn start_with(
        command: &str,
        env: &[(String, String)],
        log: Option<&Path>,
        netns: Option<RunAs>,
    ) -> Result<AgentProcess, SpawnError> {
        let (out, err) = output(log)?;
        let failed = |source| SpawnError::Start {
            command: command.to_string(),
            source,
        };
        let (mut cmd, lifeline) = match supervise::program() {
            Some(program) => {
                let (cmd, lifeline) = Lifeline::command(program, command, netns).map_err(failed)?;
                (cmd, Some((program, lifeline)))
            }
            None => {
                let mut cmd = Command::new("sh");
                cmd.arg("-c")
                    .arg(command)
                    .stdin(Stdio::null())
                    // Its own process group, so stopping it reaches what `sh -c` started.
                    .process_group(0)
                    .kill_on_drop(true);
                (cmd, None)
            }
        };
        for name in super::withheld::withheld() {
            cmd.env_remove(name);
        }
        let child = cmd
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(out)
            .stderr(err)
            .spawn();
        let child = match (child, &lifeline) {
            (Ok(child), _) => child,
            (Err(e), Some((program, _))) => {
                let why = format!("its supervisor {}: {e}", program.display());
                return Err(failed(std::io::Error::new(e.kind(), why)));
            }
            (Err(e), None) => return Err(failed(e)),
        };
        let lifeline = lifeline.map(|(_, l)| l);
        let id = child.id();
        Ok(AgentProcess {
            command: command.to_string(),
            log: log.map(Path::to_path_buf),
            group: Some(Group {
                child,
                id,
                lifeline,
            }),
            kept: None,
        })
    }

    /// Keeps `what` (its namespace's capture served) until the process is stopped.
    pub(super) fn keep_while_running(&mut self, what: Box<dyn Send + Sync>) {
        self.kept = Some(what);
    }

    /// Its log file, if its output goes to one.
    pub fn log(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// How it exited, if it has (an agent that crashed during a run).
    pub fn exit_status(&mut self) -> Option<String> {
        let group = self.group.as_mut()?;
        let Some(lifeline) = &mut group.lifeline else {
            return group.child.try_wait().ok().flatten().map(|s| s.to_string());
        };
        if let Some(status) = lifeline.exited() {
            return Some(status.to_string());
        }
        // Ended without a word: killed on its own, its agent unguarded or gone.
        let ended = group.child.try_wait().ok().flatten();
        ended.map(|s| format!("its supervisor ended ({s})"))
    }

    /// The last lines of its log, as `:\n<lines>` for an error message, or empty.
    pub fn tail(&self) -> String {
        self.log
            .as_deref()
            .map(|p| log_tail(p, 20))
            .unwrap_or_default()
    }

    /// The error for an agent that exited while flakestorm waited for `what`.
    pub(super) fn exited(&mut self, what: &str, answered: bool) -> Option<SpawnError> {
        let status = self.exit_status()?;
        Some(SpawnError::Exited {
            command: self.command.clone(),
            status,
            what: what.to_string(),
            hint: if answered {
                "; something else answers there (an agent left from an earlier run?)"
            } else {
                ""
            },
            tail: self.tail(),
        })
    }

    /// Stops the agent at the end of a run (5 s grace); a warning for the report when it
    /// had already exited during the run, with the end of its log.
    pub async fn end_of_run(mut self) -> Option<String> {
        let crashed = self.exit_status().map(|status| {
            format!(
                "the agent (agent.command) exited during the run ({status}); cases after that \
                 could not reach it{}",
                self.tail()
            )
        });
        self.stop(Duration::from_secs(5)).await;
        crashed
    }

    /// Stops the agent: SIGTERM to its group, SIGKILL to what is left after `grace`.
    pub async fn stop(mut self, grace: Duration) {
        let Some(Group {
            mut child,
            id: Some(group),
            mut lifeline,
        }) = self.group.take()
        else {
            return;
        };
        let Some(lifeline) = &mut lifeline else {
            signal_group(group, Signal::TERM);
            let _ = tokio::time::timeout(grace, child.wait()).await;
            return signal_group(group, Signal::KILL);
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            // Its supervisor was killed on its own: what is left of the group is ours.
            return signal_group(group, Signal::KILL);
        }
        // The supervisor does it, and ends with the group.
        lifeline.stop(Some(grace));
        let margin = grace + Duration::from_secs(1);
        if tokio::time::timeout(margin, child.wait()).await.is_err() {
            // Not reaped, so its pid (the group's id) is still ours to signal.
            signal_group(group, Signal::KILL);
            let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
        }
    }
}

impl Drop for AgentProcess {
    /// An interrupted run (the handle dropped without `stop`), which only happens when
    /// flakestorm is exiting or a daemon's run is cancelled while its agent starts: the
    /// same, off the async threads (`interrupt`).
    fn drop(&mut self) {
        if let Some(group) = self.group.take() {
            interrupt::stop(group);
        }
    }
}

/// Where the agent's stdout and stderr go: `log` (created with its folder, replaced), or
/// inherited.
fn output(log: Option<&Path>) -> Result<(Stdio, Stdio), SpawnError> {
    let Some(path) = log else {
        return Ok((Stdio::inherit(), Stdio::inherit()));
    };
    let fail = |source| SpawnError::Log {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(fail)?;
    let copy = file.try_clone().map_err(fail)?;
    Ok((Stdio::from(file), Stdio::from(copy)))
}

/// The last `n` lines of a log file (within its last 64 KiB), as `:\n<lines>` (with its
/// path), or empty when the file is empty, unreadable or not a regular file.
pub fn log_tail(path: &Path, n: usize) -> String {
    // Only the end is read: an agent's log can be gigabytes, and a FIFO would never end.
    const TAIL: u64 = 64 * 1024;
    let Ok((from, bytes)) = crate::files::tail(path, TAIL) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    // Read from the middle of the file: its first line is likely cut.
    let text = match from {
        0 => &text[..],
        _ => text.split_once('\n').map_or("", |(_, rest)| rest),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    format!("; the end of its log ({}):\n{tail}", path.display())
}
