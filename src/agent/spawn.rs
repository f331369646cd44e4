//! `agent.command`: start the agent with the proxy environment (config.md), wait until
//! `ready_url` answers 2xx, and stop it at the end, also when the run is interrupted (the
//! child is killed when its handle drops).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("could not start agent command `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("agent command `{command}` exited ({status}) before {ready_url} answered")]
    Exited {
        command: String,
        status: String,
        ready_url: String,
    },
    #[error("agent did not answer 2xx at {ready_url} within {secs}s")]
    NotReady { ready_url: String, secs: u64 },
    #[error("agent.ready_url `{0}` is not a URL")]
    BadUrl(String),
}

/// The environment that routes an agent through the proxy and makes it trust the CA.
/// `NO_PROXY` is emptied: a `localhost` entry would let local LLMs (Ollama) bypass it.
pub fn proxy_env(proxy: SocketAddr, ca: &Path) -> Vec<(String, String)> {
    let url = format!("http://{proxy}");
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

/// A running agent started by flakestorm.
pub struct AgentProcess {
    child: Child,
    command: String,
}

impl AgentProcess {
    /// Runs `command` with `sh -c` and `env`; with `ready_url`, waits until it answers 2xx
    /// (polling every 100 ms) for at most `wait`.
    pub async fn start(
        command: &str,
        env: &[(String, String)],
        ready_url: Option<&str>,
        wait: Duration,
    ) -> Result<AgentProcess, SpawnError> {
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            // Its own process group, so stopping it reaches what `sh -c` started.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError::Start {
                command: command.to_string(),
                source,
            })?;
        let mut process = AgentProcess {
            child,
            command: command.to_string(),
        };
        if let Some(url) = ready_url {
            process.wait_ready(url, wait).await?;
        }
        Ok(process)
    }

    async fn wait_ready(&mut self, url: &str, wait: Duration) -> Result<(), SpawnError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| SpawnError::BadUrl(url.to_string()))?;
        let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let (command, status) = (self.command.clone(), status.to_string());
                return Err(SpawnError::Exited {
                    command,
                    status,
                    ready_url: url.to_string(),
                });
            }
            let probe = tokio::time::timeout(Duration::from_secs(1), client.get(uri.clone())).await;
            if let Ok(Ok(resp)) = probe
                && resp.status().is_success()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(SpawnError::NotReady {
                    ready_url: url.to_string(),
                    secs: wait.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the agent: SIGTERM, then SIGKILL if it is still running after `grace`.
    pub async fn stop(mut self, grace: Duration) {
        if let Some(pid) = self.child.id() {
            // `kill` the command: no unsafe signal FFI needed.
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{pid}")])
                .status()
                .await;
            if tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = self.child.kill().await;
    }
}
