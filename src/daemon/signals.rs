//! Stopping the daemon on a signal: SIGINT and SIGTERM drain it, a second one during the
//! drain forces the stop, SIGHUP is logged and ignored (`Signals`, `run_until_signal`).

use super::Daemon;

/// How `run_until_signal` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// In-flight exchanges finished (or the drain deadline cut them).
    Drained,
    /// A second SIGINT/SIGTERM arrived during the drain: nothing was waited for.
    Forced,
}

impl Daemon {
    /// Serves until SIGINT or SIGTERM, then drains (`stop`); a second SIGINT or SIGTERM
    /// during the drain gives up on it at once. SIGHUP is logged and ignored: there is no
    /// config reload (rules change at runtime through `PUT /v1/chaos`; anything else needs
    /// a restart), and a closed terminal must not kill the daemon without a drain.
    /// `signals` are installed before the daemon announces itself, so that no signal sent
    /// after the announcement meets the default action.
    pub async fn run_until_signal(self, mut signals: Signals) -> Stopped {
        signals.stop_requested().await;
        eprintln!("flakestorm: shutting down (draining in-flight requests; signal again to force)");
        tokio::select! {
            () = self.stop() => Stopped::Drained,
            () = signals.stop_requested() => Stopped::Forced,
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP, installed once (a handler replaces the default action for
/// the life of the process).
pub struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    pub fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    #[cfg(not(unix))]
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {})
    }

    /// Resolves at the next SIGINT or SIGTERM; logs each SIGHUP on the way.
    #[cfg(unix)]
    async fn stop_requested(&mut self) {
        loop {
            tokio::select! {
                _ = self.int.recv() => return,
                _ = self.term.recv() => return,
                _ = self.hup.recv() => tracing::warn!(
                    "SIGHUP ignored: flakestorm does not reload its config (change chaos rules \
                     with PUT /v1/chaos; restart for anything else)"
                ),
            }
        }
    }

    #[cfg(not(unix))]
    async fn stop_requested(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
