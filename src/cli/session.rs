//! What every run command needs: the daemon (proxy + engine + journal), the agent started
//! with the proxy environment when `agent.command` is set, a pre-flight check that it
//! answers, and the embeddings endpoint (`advanced.embeddings`) tried before anything
//! starts. A run that starts its own agent puts its proxy on a free port unless the config
//! names one, and its control API always, so a `flakestorm serve` on the defaults is no
//! obstacle. Failures print one message and become exit code 2.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::progress;
use crate::agent::{Agent, AgentProcess, Probe, proxy_env, url_probe, wait_ready};
use crate::config::{AgentTarget, Check, Config, Loaded};
use crate::daemon::Daemon;
use crate::run::{Declared, Embedder, RunContext};

/// How a run command wants its session.
pub struct Options {
    /// Say where the proxy is and show progress on stderr; off for `--quiet`, `--json`
    /// and `contract score`.
    pub progress: bool,
    /// Where `agent.command`'s output goes (beside the report).
    pub agent_log: PathBuf,
    /// `--min-score`, else `scoring.min_score`.
    pub min_score: f64,
}

pub struct Session {
    daemon: Daemon,
    process: Option<AgentProcess>,
    progress: Option<progress::Display>,
    pub ctx: RunContext,
}

impl Session {
    pub async fn start(loaded: &Loaded, opts: Options) -> Result<Session, ExitCode> {
        let config = &run_config(loaded);
        let Some(spec) = &config.agent else {
            eprintln!(
                "flakestorm: runs need an `agent:` section (endpoint of the agent under test)"
            );
            return Err(ExitCode::from(2));
        };
        let embedder = match embedder(config).await {
            Ok(e) => e,
            Err(message) => {
                eprintln!("flakestorm: {message}");
                return Err(ExitCode::from(2));
            }
        };
        let daemon = match Daemon::start(config).await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("flakestorm: error: {e}");
                return Err(ExitCode::from(2));
            }
        };
        if opts.progress {
            eprintln!(
                "flakestorm: proxy on {} for the agent's traffic",
                daemon.proxy_addr
            );
        }
        let agent = match Agent::new(spec, config.advanced.retries) {
            Ok(a) => a,
            Err(e) => return Err(fail(daemon, None, e.to_string()).await),
        };
        let process = match start_agent(config, &agent, &daemon, &opts.agent_log).await {
            Ok(p) => p,
            Err(e) => return Err(fail(daemon, None, e).await),
        };
        if process.is_some() && opts.progress {
            eprintln!(
                "flakestorm: the agent's output goes to {}",
                opts.agent_log.display()
            );
        }
        if let Err(e) = agent.preflight().await {
            return Err(fail(daemon, process, e.to_string()).await);
        }
        let display = opts.progress.then(progress::Display::new);
        let ctx = RunContext {
            engine: daemon.chaos.clone(),
            journal: daemon.journal.clone(),
            agent,
            concurrency: config.advanced.concurrency as usize,
            attribution: config.advanced.attribution,
            config_digest: loaded.digest.clone(),
            progress: display.as_ref().map(progress::Display::hooks),
            embedder,
            declared: Declared {
                tools: config.tools.clone(),
                llm: config.llm.clone(),
            },
            min_score: opts.min_score,
        };
        Ok(Session {
            daemon,
            process,
            progress: display,
            ctx,
        })
    }

    /// Stops the agent and the proxy. Returns a warning when the agent had exited during
    /// the run (crashed), with the end of its log.
    pub async fn stop(self) -> Option<String> {
        if let Some(p) = &self.progress {
            p.finish();
        }
        let mut crashed = None;
        if let Some(mut p) = self.process {
            if let Some(status) = p.exit_status() {
                crashed = Some(format!(
                    "the agent (agent.command) exited during the run ({status}); cases after \
                     that could not reach it{}",
                    p.tail()
                ));
            }
            p.stop(Duration::from_secs(5)).await;
        }
        self.daemon.stop().await;
        crashed
    }
}

/// The config a run uses: with `agent.command`, a proxy on a free port unless the config
/// names one (the agent is told where it is); the control API on a free port unless named
/// (nothing needs to find a run's control API at a fixed address).
fn run_config(loaded: &Loaded) -> Config {
    let mut config = loaded.config.clone();
    let starts_agent = config.agent.as_ref().is_some_and(|a| a.command.is_some());
    if starts_agent && !loaded.named.proxy_listen {
        config.proxy.listen = "127.0.0.1:0".into();
    }
    if !loaded.named.control_listen {
        config.control.listen = "127.0.0.1:0".into();
    }
    config
}

/// Starts `agent.command` with the proxy environment (and `agent.env`), its output to
/// `log`, and waits until the agent is ready: `ready_url` answers 2xx or, without one, the
/// endpoint accepts connections. A `ready_url` without a command is waited for too
/// (config.md: polled before the run starts).
async fn start_agent(
    config: &Config,
    agent: &Agent,
    daemon: &Daemon,
    log: &std::path::Path,
) -> Result<Option<AgentProcess>, String> {
    let Some(spec) = &config.agent else {
        return Ok(None);
    };
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
    // Whatever answers before the agent starts is not the agent this run started.
    if probe().await {
        return Err(format!(
            "{what} before agent.command started: another process (an agent left from an \
             earlier run?) is there; stop it or use another port"
        ));
    }
    let user = config.proxy.users.first();
    let user = user.map(|u| (u.name.as_str(), u.password.as_str()));
    let mut env = proxy_env(daemon.proxy_addr, &daemon.ca_cert_path, user);
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut process = AgentProcess::start(cmd, &env, Some(log)).map_err(|e| e.to_string())?;
    match wait_ready(Some(&mut process), &what, wait, probe).await {
        Ok(()) => Ok(Some(process)),
        Err(e) => {
            let tail = match &e {
                crate::agent::SpawnError::Exited { .. } => String::new(),
                _ => process.tail(),
            };
            process.stop(Duration::from_secs(5)).await;
            Err(format!("{e}{tail}"))
        }
    }
}

/// What readiness means, in words, and the probe that checks it.
type Readiness = (String, Box<dyn FnMut() -> Probe + Send>);

/// What readiness means for this agent, and the probe that checks it.
fn readiness(spec: &AgentTarget, agent: &Agent) -> Result<Readiness, String> {
    Ok(match &spec.ready_url {
        Some(url) => (
            format!("{url} answered 2xx"),
            Box::new(url_probe(url.clone()).map_err(|e| e.to_string())?),
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

/// `advanced.embeddings`, tried with one request when an invariant compares texts.
async fn embedder(config: &Config) -> Result<Option<Embedder>, String> {
    let Some(spec) = &config.advanced.embeddings else {
        return Ok(None);
    };
    let embedder = Embedder::new(spec).map_err(|e| e.to_string())?;
    let compares = |c: &Check| {
        matches!(
            c,
            Check::Similarity { .. } | Check::BehaviorUnchanged { .. }
        )
    };
    let contract = config.contract.iter().flat_map(|c| &c.invariants);
    let mut invariants = config
        .invariants
        .iter()
        .chain(contract.map(|i| &i.invariant));
    if invariants.any(|i| compares(&i.check)) {
        let failed = |e| format!("{e} (pre-flight of advanced.embeddings)");
        embedder.preflight().await.map_err(failed)?;
    }
    Ok(Some(embedder))
}

async fn fail(daemon: Daemon, process: Option<AgentProcess>, message: String) -> ExitCode {
    eprintln!("flakestorm: {message}");
    if let Some(p) = process {
        let tail = p.tail();
        if !tail.is_empty() {
            eprintln!("flakestorm: {}", tail.trim_start_matches("; "));
        }
        p.stop(Duration::from_secs(5)).await;
    }
    daemon.stop().await;
    ExitCode::from(2)
}
