//! `agent.command`: start the agent with the proxy environment (config.md; with proxy
//! credentials when `proxy.users` is set) and `agent.env`, its output written to a log
//! file, wait until it is ready (`ready_url` answers 2xx, or without one its endpoint
//! accepts connections), and stop it at the end: SIGTERM to its process group, then
//! SIGKILL. Dropping the handle (an interrupted run) kills the group too, so no agent
//! outlives flakestorm.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

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

/// The environment that routes an agent through the proxy and makes it trust the CA.
/// `NO_PROXY` is emptied: a `localhost` entry would let local LLMs (Ollama) bypass it.
/// With `user` (name, password), the proxy URL carries them (`proxy.users`).
pub fn proxy_env(
    proxy: SocketAddr,
    ca: &Path,
    user: Option<(&str, &str)>,
) -> Vec<(String, String)> {
    let auth = user
        .map(|(n, p)| format!("{}:{}@", userinfo(n), userinfo(p)))
        .unwrap_or_default();
    let url = format!("http://{auth}{proxy}");
    let ca = ca.display().to_string();
    let mut env = vec![];
    for name in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        env.push((name.to_string(), url.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.to_string(), String::new()));
    }
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

/// Percent-encodes a URL userinfo part (RFC 3986: all but unreserved characters).
fn userinfo(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A running agent started by flakestorm.
pub struct AgentProcess {
    child: Child,
    command: String,
    /// Its process group (the `sh -c` leader's pid), signalled as a whole.
    group: Option<u32>,
    /// Where its stdout and stderr go, if not inherited.
    log: Option<std::path::PathBuf>,
}

impl AgentProcess {
    /// Runs `command` with `sh -c` and `env`, in a process group of its own; its stdout and
    /// stderr go to `log` (created with its folder, replaced each run), else inherited.
    pub fn start(
        command: &str,
        env: &[(String, String)],
        log: Option<&Path>,
    ) -> Result<AgentProcess, SpawnError> {
        let (out, err) = match log {
            Some(path) => {
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
                (Stdio::from(file), Stdio::from(copy))
            }
            None => (Stdio::inherit(), Stdio::inherit()),
        };
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own process group, so stopping it reaches what `sh -c` started.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError::Start {
                command: command.to_string(),
                source,
            })?;
        let group = child.id();
        Ok(AgentProcess {
            child,
            command: command.to_string(),
            group,
            log: log.map(Path::to_path_buf),
        })
    }

    /// Its log file, if its output goes to one.
    pub fn log(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// How it exited, if it has (an agent that crashed during a run).
    pub fn exit_status(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// The last lines of its log, as `:\n<lines>` for an error message, or empty.
    pub fn tail(&self) -> String {
        self.log
            .as_deref()
            .map(|p| log_tail(p, 20))
            .unwrap_or_default()
    }

    /// The error for an agent that exited while flakestorm waited for `what`.
    fn exited(&mut self, what: &str, answered: bool) -> Option<SpawnError> {
        let status = self.child.try_wait().ok().flatten()?;
        Some(SpawnError::Exited {
            command: self.command.clone(),
            status: status.to_string(),
            what: what.to_string(),
            hint: if answered {
                "; something else answers there (an agent left from an earlier run?)"
            } else {
                ""
            },
            tail: self.tail(),
        })
    }

    /// Stops the agent: SIGTERM to its group, SIGKILL to what is left after `grace`.
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

    pub async fn stop(mut self, grace: Duration) {
        let group = self.group.take();
        signal_group_async(group, "TERM").await;
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        signal_group_async(group, "KILL").await;
    }
}

impl Drop for AgentProcess {
    /// An interrupted run (the handle dropped without `stop`): the same, blocking for at
    /// most two seconds, which only happens when flakestorm is exiting.
    fn drop(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        signal_group(Some(group), "TERM");
        for _ in 0..40 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            #[allow(clippy::disallowed_methods)] // in Drop: no runtime to await on
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(Some(group), "KILL");
    }
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

async fn signal_group_async(group: Option<u32>, signal: &str) {
    if let Some(pid) = group {
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
    }
}

/// Sends `signal` to process group `group` with the `kill` command (no unsafe signal FFI).
fn signal_group(group: Option<u32>, signal: &str) {
    if let Some(pid) = group {
        let _ = std::process::Command::new("kill")
            .args([&format!("-{signal}"), "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Polls `probe` every 100 ms until it succeeds, for at most `wait`; `what` names what is
/// awaited in errors. With the agent's `process`, its exit ends the wait at once, and an
/// exit seen when the probe succeeded means something else answered.
pub async fn wait_ready<F, Fut>(
    mut process: Option<&mut AgentProcess>,
    what: &str,
    wait: Duration,
    mut probe: F,
) -> Result<(), SpawnError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if let Some(e) = process.as_mut().and_then(|p| p.exited(what, false)) {
            return Err(e);
        }
        if probe().await {
            return match process.as_mut().and_then(|p| p.exited(what, true)) {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(SpawnError::NotReady {
                what: what.to_string(),
                secs: wait.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A probe: a boxed check that something is ready.
pub type Probe = std::pin::Pin<Box<dyn Future<Output = bool> + Send>>;

/// A probe of whether `uri` answers a GET with 2xx within a second (http or https, on the
/// driver's direct client: never through the proxy).
pub fn url_probe(uri: http::Uri) -> Result<impl FnMut() -> Probe + use<>, crate::tls::TlsError> {
    let client = super::direct_client(false)?;
    Ok(move || {
        let (client, uri) = (client.clone(), uri.clone());
        Box::pin(async move {
            let probe = tokio::time::timeout(Duration::from_secs(1), client.get(uri)).await;
            matches!(probe, Ok(Ok(resp)) if resp.status().is_success())
        }) as Probe
    })
}
