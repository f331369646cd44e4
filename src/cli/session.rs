//! What every run command needs: the daemon (proxy + engine + journal), the agent started
//! with the proxy environment when `agent.command` is set, a pre-flight check that it
//! answers, and the embeddings endpoint (`advanced.embeddings`) tried before anything
//! starts. Failures print one message and become exit code 2.

use std::process::ExitCode;
use std::time::Duration;

use crate::agent::{Agent, AgentProcess, Probe, proxy_env, url_probe, wait_ready};
use crate::config::{AgentSpec, Check, Config, Loaded};
use crate::daemon::Daemon;
use crate::run::{Embedder, RunContext};

pub struct Session {
    daemon: Daemon,
    process: Option<AgentProcess>,
    progress: Option<indicatif::ProgressBar>,
    pub ctx: RunContext,
}

impl Session {
    /// `progress`: say where the proxy is and show a live count of cases on stderr (when
    /// it is a terminal); off for `--quiet`, `--json` and `contract score`.
    pub async fn start(loaded: &Loaded, progress: bool) -> Result<Session, ExitCode> {
        let config = &loaded.config;
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
                return Err(ExitCode::from(1));
            }
        };
        if progress {
            eprintln!(
                "flakestorm: proxy on {} for the agent's traffic",
                daemon.proxy_addr
            );
        }
        let agent = match Agent::new(spec, config.advanced.retries) {
            Ok(a) => a,
            Err(e) => return Err(fail(daemon, None, e.to_string()).await),
        };
        let process = match start_agent(spec, &agent, &daemon).await {
            Ok(p) => p,
            Err(e) => return Err(fail(daemon, None, e).await),
        };
        if let Err(e) = agent.preflight().await {
            return Err(fail(daemon, process, e.to_string()).await);
        }
        let bar = (progress && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(spinner);
        let on_case = bar.clone().map(|b| -> crate::run::OnCase {
            std::sync::Arc::new(move |c: &crate::run::CaseResult| {
                b.inc(1);
                b.set_message(format!("{}: {}", c.scenario, c.prompt));
            })
        });
        let ctx = RunContext {
            engine: daemon.chaos.clone(),
            journal: daemon.journal.clone(),
            agent,
            concurrency: config.advanced.concurrency as usize,
            attribution: config.advanced.attribution,
            config_digest: loaded.digest.clone(),
            on_case,
            embedder,
        };
        Ok(Session {
            daemon,
            process,
            progress: bar,
            ctx,
        })
    }

    pub async fn stop(self) {
        if let Some(b) = &self.progress {
            b.finish_and_clear();
        }
        if let Some(p) = self.process {
            p.stop(Duration::from_secs(5)).await;
        }
        self.daemon.stop().await;
    }
}

/// Starts `agent.command` with the proxy environment, and waits until the agent is ready:
/// `ready_url` answers 2xx or, without one, the endpoint accepts connections. A `ready_url`
/// without a command is waited for too (config.md: polled before the run starts).
async fn start_agent(
    spec: &AgentSpec,
    agent: &Agent,
    daemon: &Daemon,
) -> Result<Option<AgentProcess>, String> {
    let wait = Duration::from_millis(spec.timeout.max(30_000));
    let (what, mut probe): (String, Box<dyn FnMut() -> Probe + Send>) = match &spec.ready_url {
        Some(url) => (
            format!("{url} answered 2xx"),
            Box::new(url_probe(url).map_err(|e| e.to_string())?),
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
    };
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
    let env = proxy_env(daemon.proxy_addr, &daemon.ca_cert_path);
    let mut process = AgentProcess::start(cmd, &env).map_err(|e| e.to_string())?;
    match wait_ready(Some(&mut process), &what, wait, probe).await {
        Ok(()) => Ok(Some(process)),
        Err(e) => {
            process.stop(Duration::from_secs(5)).await;
            Err(e.to_string())
        }
    }
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

fn spinner() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    let style = indicatif::ProgressStyle::with_template("{spinner} {pos} cases  {wide_msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

async fn fail(daemon: Daemon, process: Option<AgentProcess>, message: String) -> ExitCode {
    eprintln!("flakestorm: {message}");
    if let Some(p) = process {
        p.stop(Duration::from_secs(5)).await;
    }
    daemon.stop().await;
    ExitCode::from(2)
}
