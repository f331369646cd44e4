//! What every run command needs: the daemon (proxy + engine + journal), the agent started
//! with the proxy environment when `agent.command` is set, a pre-flight check that it
//! answers, and the embeddings endpoint (`advanced.embeddings`) tried before anything
//! starts. A run that starts its own agent puts its proxy on a free port unless the config
//! names one, and its control API always, so a `flakestorm serve` on the defaults is no
//! obstacle. Failures print one message and become exit code 2.

use std::path::PathBuf;
use std::process::ExitCode;

use super::progress;
use crate::agent::{AgentProcess, Launched, ProxyAt, launch};
use crate::config::{Config, Loaded};
use crate::daemon::Daemon;
use crate::run::{Declared, Embedder, RunContext, RunKind};
use crate::store::{Recorder, RunStatus};

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
        if config.agent.is_none() {
            eprintln!(
                "flakestorm: runs need an `agent:` section (endpoint of the agent under test)"
            );
            return Err(ExitCode::from(2));
        };
        let embedder = match Embedder::for_config(config).await {
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
        let proxy = ProxyAt {
            addr: daemon.proxy_addr,
            ca_cert: &daemon.ca_cert_path,
        };
        let Launched { agent, process } = match launch(config, proxy, &opts.agent_log).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("flakestorm: {e}");
                daemon.stop().await;
                return Err(ExitCode::from(2));
            }
        };
        if process.is_some() && opts.progress {
            eprintln!(
                "flakestorm: the agent's output goes to {}",
                opts.agent_log.display()
            );
        }
        let display = opts.progress.then(progress::Display::new);
        let ctx = RunContext {
            seed: daemon.chaos.seed(),
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

    /// The run store (the daemon's).
    pub fn store(&self) -> &crate::store::Store {
        &self.daemon.store
    }

    /// Starts recording this session's run of `kind` in the run store: its cases as they
    /// end, through the progress hooks.
    pub fn record(&mut self, kind: RunKind, digest: Option<String>) -> Recorder {
        let store = &self.daemon.store;
        let r = Recorder::begin(store, kind, digest, Some(self.ctx.seed), RunStatus::Running);
        self.ctx.progress = Some(match self.ctx.progress.take() {
            Some(p) => p.tee(r.hooks()),
            None => r.hooks(),
        });
        r
    }

    /// Stops the agent. Returns a warning when the agent had exited during the run
    /// (crashed), with the end of its log.
    pub async fn stop_agent(&mut self) -> Option<String> {
        if let Some(p) = &self.progress {
            p.finish();
        }
        self.process.take()?.end_of_run().await
    }

    /// Stops the agent, if still running, and the proxy.
    pub async fn stop(mut self) {
        self.stop_agent().await;
        self.daemon.stop().await;
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
