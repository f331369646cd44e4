//! The CLI's side of a run's session (`session::Session`): the daemon a run command starts
//! for itself and hands to the session as its proxy (a run that starts its own agent puts
//! its proxy on a free port unless the config names one, and its control API always, so a
//! `flakestorm serve` on the defaults is no obstacle), where the proxy and the agent's
//! output are said, and the progress display. Failures print one message and become exit
//! code 2.

use std::path::PathBuf;
use std::process::ExitCode;

use super::progress;
use crate::config::{Config, Loaded};
use crate::daemon::Daemon;
use crate::session::{Options as RunOptions, Session};

/// How a run command wants its session.
pub struct Options {
    /// Say where the proxy is and show progress on stderr; off for `--quiet`, `--json`
    /// and `contract score`.
    pub progress: bool,
    /// Where `agent.command`'s output goes (beside the report).
    pub agent_log: PathBuf,
    /// `--min-score`, else `scoring.min_score`.
    pub min_score: f64,
    /// `--trial`: only this trial of each case.
    pub trial: Option<u32>,
    /// `--shard K/N`: only this shard's cases.
    pub shard: Option<crate::run::Shard>,
    /// How many cases the run makes, when known (`run::Prepared::cases`).
    pub cases: Option<usize>,
}

/// A run command's session and the daemon it runs behind.
pub struct Run {
    pub session: Session,
    daemon: Daemon,
    pub display: Option<progress::Display>,
}

impl Run {
    /// Stops the agent, then the run's daemon.
    pub async fn stop(self) {
        self.session.stop().await;
        self.daemon.stop().await;
    }
}

/// Starts a daemon for the run and the run's session behind its proxy, with the progress
/// display when `opts.progress`.
pub async fn start(loaded: &Loaded, opts: Options) -> Result<Run, ExitCode> {
    let config = run_config(loaded);
    let starts_agent = config.agent.as_ref().is_some_and(|a| a.command.is_some());
    let display = opts.progress.then(progress::Display::new);
    // A shard whose agent or proxy could not start is worth another try (docs/scale.md).
    let failed = if opts.shard.is_some() { 3 } else { 2 };
    // A pool's instances talk through lanes of their own, opened with the pool: the line
    // that says where the agent's traffic goes waits for them (`proxy_line`).
    let pooled = config
        .agent
        .as_ref()
        .is_some_and(|a| a.pooled() || a.capture == crate::capture::Mode::Netns);
    let say = opts.progress && !pooled;
    let run_opts = RunOptions {
        agent_log: opts.agent_log.clone(),
        min_score: opts.min_score,
        seed: None,
        trial: opts.trial,
        shard: opts.shard,
        cases: opts.cases,
        progress: display.as_ref().map(progress::Display::hooks),
        before_agent: Some(Box::new(move |proxy| {
            if say {
                eprintln!("flakestorm: {}", proxy_line(proxy.addr, &[]));
            }
            Ok(())
        })),
    };
    let loaded = Loaded {
        config,
        ..loaded.clone()
    };
    let stop = |why: String| {
        eprintln!("flakestorm: {why}");
        ExitCode::from(failed)
    };
    let daemon = Daemon::start(&loaded.config)
        .await
        .map_err(|e| stop(format!("error: {e}")))?;
    let session = match Session::start(loaded, daemon.run_proxy(), run_opts).await {
        Ok(s) => s,
        Err(e) => {
            daemon.stop().await;
            return Err(stop(e.to_string()));
        }
    };
    if let Some(pool) = session.ctx.pool.as_ref().filter(|_| opts.progress) {
        let line = proxy_line(session.proxy().addr, &pool.lanes());
        eprintln!("flakestorm: {line}");
    }
    if starts_agent && opts.progress {
        eprintln!(
            "flakestorm: the agent's output goes to {}",
            opts.agent_log.display()
        );
        if let Some(pool) = &session.ctx.pool {
            eprintln!("flakestorm: {}", pool.describe());
        }
    }
    Ok(Run {
        session,
        daemon,
        display,
    })
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

/// Where the agent's traffic goes: the run's proxy, and the lanes (a proxy listener each)
/// that a pool's instances talk through instead, as many as fit a line.
fn proxy_line(main: std::net::SocketAddr, lanes: &[std::net::SocketAddr]) -> String {
    const SHOWN: usize = 8;
    if lanes.is_empty() {
        return format!("proxy on {main} for the agent's traffic");
    }
    let mut shown: Vec<String> = lanes.iter().take(SHOWN).map(|l| l.to_string()).collect();
    if lanes.len() > SHOWN {
        shown.push(format!("and {} more", lanes.len() - SHOWN));
    }
    format!(
        "proxy on {main} (the agent's traffic goes through lanes of its own: {})",
        shown.join(", ")
    )
}
