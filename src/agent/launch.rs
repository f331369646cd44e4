//! Getting the agent under test ready for a run: its driver, its process started with the
//! proxy environment when `agent.command` is set (and waited for until ready), and a
//! pre-flight that it answers. Shared by the CLI's run sessions and the daemon's runs API.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::{
    Agent, AgentProcess, Probe, SpawnError, proxy_env, url_probe_via, wait_ready, with_user_env,
};
use crate::capture::Mode as CaptureMode;
use crate::config::{AgentTarget, Config};
use crate::journal::ServeCapture;

/// An agent ready for a run, and its process when this run started it.
pub struct Launched {
    pub agent: Agent,
    pub process: Option<AgentProcess>,
}

/// The agent process a run started, shared with its cases so each can tell whether it
/// exited (its case is then not judged: design.md §6).
#[derive(Clone, Default)]
pub struct Process(std::sync::Arc<tokio::sync::Mutex<Option<AgentProcess>>>);

impl Process {
    pub fn new(process: Option<AgentProcess>) -> Process {
        Process(std::sync::Arc::new(tokio::sync::Mutex::new(process)))
    }

    /// How it exited, if it has, and the end of its log (`; …` or empty).
    pub async fn exited(&self) -> Option<(String, String)> {
        let mut p = self.0.lock().await;
        let p = p.as_mut()?;
        let status = p.exit_status()?;
        Some((status, p.tail()))
    }

    /// The process, to stop it; `None` once taken.
    pub async fn take(&self) -> Option<AgentProcess> {
        self.0.lock().await.take()
    }
}

/// Where the agent's proxy is: the address and the CA file it must trust.
pub struct ProxyAt<'a> {
    pub addr: SocketAddr,
    pub ca_cert: &'a Path,
    /// The proxy's wrap directory: `flakestorm wrap` in the agent's MCP config bridges its
    /// stdio server through this proxy (`mcp::stdio`).
    pub wrap_dir: Option<&'a Path>,
}

/// Why the agent could not be readied for a run (or a pool instance restarted): the
/// problem in words, with the end of its log when its process said why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LaunchError(pub(super) String);

/// Readies `config.agent` for a run through the proxy at `proxy`, `agent.command`'s output
/// to `log`. A process it started is stopped again when it cannot be readied.
pub async fn launch(
    config: &Config,
    proxy: ProxyAt<'_>,
    log: &Path,
) -> Result<Launched, LaunchError> {
    launch_inner(config, proxy, log).await.map_err(LaunchError)
}

async fn launch_inner(config: &Config, proxy: ProxyAt<'_>, log: &Path) -> Result<Launched, String> {
    let Some(spec) = &config.agent else {
        return Err("runs need an `agent:` section (endpoint of the agent under test)".into());
    };
    let agent = Agent::new(spec, config.advanced.retries).map_err(|e| e.to_string())?;
    let process = start(config, spec, &agent, proxy, None, log).await?;
    if let Err(e) = agent.preflight().await {
        let mut why = e.to_string();
        if let Some(p) = process {
            let tail = p.tail();
            if !tail.is_empty() {
                why.push_str(&format!("\n{}", tail.trim_start_matches("; ")));
            }
            p.stop(Duration::from_secs(5)).await;
        }
        return Err(why);
    }
    Ok(Launched { agent, process })
}

/// Starts `agent.command` with the proxy environment (and `agent.env`), its output to
/// `log`, and waits until the agent is ready: `ready_url` answers 2xx or, without one, the
/// endpoint accepts connections. A `ready_url` without a command is waited for too
/// (config.md: polled before the run starts). Under `agent.capture: netns` the agent starts
/// in a namespace of its own whose capture sockets `capture` serves on the lane, and the
/// driver reaches it there.
pub(super) async fn start(
    config: &Config,
    spec: &AgentTarget,
    agent: &Agent,
    proxy: ProxyAt<'_>,
    capture: Option<&ServeCapture>,
    log: &Path,
) -> Result<Option<AgentProcess>, String> {
    // A script is started by each of its cases (`script`), not before the run.
    if spec.script {
        return Ok(None);
    }
    let wait = spec.timeout.max(Duration::from_secs(30));
    let (what, mut probe) = readiness(spec, agent)?;
    let Some(cmd) = &spec.command else {
        if spec.ready_url.is_some() {
            wait_ready(None, &what, wait, probe)
                .await
                .map_err(|e| e.to_string())?;
        }
        return Ok(None);
    };
    let netns = spec.capture == CaptureMode::Netns;
    // Whatever answers before the agent starts is not the agent this run started (a new
    // namespace has nothing in it yet).
    if !netns && probe().await {
        return Err(format!(
            "{what} before agent.command started: another process (an agent left from an \
             earlier run?) is there; stop it or use another port"
        ));
    }
    let env = agent_env(config, spec, &proxy);
    let mut process = match netns {
        true => start_captured(cmd, &env, agent, capture, log).await?,
        false => AgentProcess::start(cmd, &env, Some(log)).map_err(|e| e.to_string())?,
    };
    match wait_ready(Some(&mut process), &what, wait, probe).await {
        Ok(()) => Ok(Some(process)),
        Err(e) => {
            let tail = match &e {
                SpawnError::Exited { .. } => String::new(),
                SpawnError::Start { .. } | SpawnError::Log { .. } | SpawnError::NotReady { .. } => {
                    process.tail()
                }
            };
            process.stop(Duration::from_secs(5)).await;
            Err(format!("{e}{tail}"))
        }
    }
}

/// The environment of `agent.command`: the proxy at `proxy` (with `proxy.users`'
/// credentials), its CA, `flakestorm wrap`'s variables, and `agent.env` over them.
pub(super) fn agent_env(
    config: &Config,
    spec: &AgentTarget,
    proxy: &ProxyAt<'_>,
) -> Vec<(String, String)> {
    let user = config.proxy.users.first();
    let user = user.map(|u| (u.name.as_str(), u.password.as_str()));
    let user_env: Vec<(String, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut env = proxy_env(proxy.addr, proxy.ca_cert, user);
    if let Some(dir) = proxy.wrap_dir {
        env.extend(super::spawn::wrap_env(&env, dir));
    }
    with_user_env(env, &user_env)
}

/// What readiness means, in words, and the probe that checks it.
type Readiness = (String, Box<dyn FnMut() -> Probe + Send>);

/// What readiness means for this agent, and the probe that checks it.
fn readiness(spec: &AgentTarget, agent: &Agent) -> Result<Readiness, String> {
    Ok(match &spec.ready_url {
        Some(url) => (
            format!("{url} answered 2xx"),
            Box::new(url_probe_via(url.clone(), agent.dialer()).map_err(|e| e.to_string())?),
        ),
        None => {
            let agent = agent.clone();
            let probe = move || {
                let agent = agent.clone();
                Box::pin(async move { agent.preflight().await.is_ok() }) as Probe
            };
            (
                format!("{} accepted connections", spec.endpoint),
                Box::new(probe),
            )
        }
    })
}

/// `agent.command` started in a network namespace of its own (`agent.capture: netns`):
/// the machine checked first, the namespace's capture sockets served on the instance's
/// lane (`capture`) for as long as the process runs, and the driver's connections made
/// inside it.
async fn start_captured(
    cmd: &str,
    env: &[(String, String)],
    agent: &Agent,
    capture: Option<&ServeCapture>,
    log: &Path,
) -> Result<AgentProcess, String> {
    let Some(serve) = capture else {
        return Err("agent.capture: netns needs the agent on a proxy lane of its own".into());
    };
    tokio::task::spawn_blocking(crate::capture::check)
        .await
        .map_err(|e| format!("agent.capture: netns: the check failed: {e}"))??;
    let (mut process, ns) = AgentProcess::start_captured(cmd, env, Some(log))
        .await
        .map_err(|e| e.to_string())?;
    match serve(ns.captured) {
        Ok(keep) => process.keep_while_running(keep),
        Err(e) => {
            process.stop(Duration::from_secs(1)).await;
            return Err(format!(
                "agent.capture: netns: the namespace's sockets could not be served: {e}"
            ));
        }
    }
    agent.dialer().through(Some(ns.factory));
    Ok(process)
}
