//! The CLI's side of a run's session (`run::Session`): the config a run command uses (a
//! run that starts its own agent puts its proxy on a free port unless the config names
//! one, and its control API always, so a `flakestorm serve` on the defaults is no
//! obstacle), where the proxy and the agent's output are said, and the progress display.
//! Failures print one message and become exit code 2.

use std::path::PathBuf;
use std::process::ExitCode;

use super::progress;
use crate::config::{Config, Loaded};
use crate::run::session::{Behind, Options as RunOptions, Session};

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
}

/// Starts the run's session behind a proxy of its own, with the progress display when
/// `opts.progress`.
pub async fn start(
    loaded: &Loaded,
    opts: Options,
) -> Result<(Session, Option<progress::Display>), ExitCode> {
    let config = run_config(loaded);
    let starts_agent = config.agent.as_ref().is_some_and(|a| a.command.is_some());
    let display = opts.progress.then(progress::Display::new);
    // A shard whose agent or proxy could not start is worth another try (docs/scale.md).
    let failed = if opts.shard.is_some() { 3 } else { 2 };
    let say = opts.progress;
    let run_opts = RunOptions {
        agent_log: opts.agent_log.clone(),
        min_score: opts.min_score,
        seed: None,
        trial: opts.trial,
        shard: opts.shard,
        progress: display.as_ref().map(progress::Display::hooks),
        before_agent: Some(Box::new(move |proxy| {
            if say {
                eprintln!(
                    "flakestorm: proxy on {} for the agent's traffic",
                    proxy.addr
                );
            }
            Ok(())
        })),
    };
    let loaded = Loaded {
        config,
        ..loaded.clone()
    };
    let session = Session::start(loaded, Behind::Own, run_opts)
        .await
        .map_err(|e| {
            eprintln!("flakestorm: {e}");
            ExitCode::from(failed)
        })?;
    if starts_agent && opts.progress {
        eprintln!(
            "flakestorm: the agent's output goes to {}",
            opts.agent_log.display()
        );
    }
    Ok((session, display))
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
