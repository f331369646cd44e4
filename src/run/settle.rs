//! How a case's traffic ends (docs/config.md, "How a case settles"): quiet for
//! `settle_ms` after its answer, each exchange starting the quiet again, bounded by
//! `settle_max_ms`, or at once when its agent process has exited or the agent said nothing
//! more will come (`flakestorm-settle: done`, `agent.settle_url`); and what the case runs
//! on (a pool instance or the run's one process), ready before it and exited or not after.

use super::RunContext;
use crate::agent::{Lease, SETTLE_DONE, SETTLE_HEADER};
use crate::journal::Settled;

/// What the agent said of a case's end: its answer's `flakestorm-settle` header, and the
/// headers its `agent.settle_url` is asked with.
pub(super) struct Said<'a> {
    pub header: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
}

/// Waits until the case's traffic is over: quiet for `settle_ms` (each exchange starts the
/// quiet again), bounded by `settle_max_ms`; or as soon as nothing more can come: its
/// process has exited, its answer said `flakestorm-settle: done`, or `agent.settle_url`
/// answered. Calls in flight are waited for in every case. What the agent said wrong is
/// noted for the run's warnings, and the case settles as if it had said nothing.
pub(super) async fn settle(
    ctx: &RunContext,
    watch: Option<&crate::journal::CaseWatch>,
    runs_on: &RunsOn<'_>,
    said: Said<'_>,
) -> Settled {
    let Some(w) = watch else {
        return Settled::Quiet;
    };
    let bound = ctx.settle_max.max(ctx.settle);
    let over = || w.settle(std::time::Duration::ZERO, bound);
    match said.header {
        Some(v) if v.eq_ignore_ascii_case(SETTLE_DONE) => return runs_on.early(over()).await,
        Some(v) => runs_on.note(
            ctx,
            format!(
                "the agent's answer set `{SETTLE_HEADER}: {v}`; the one value is \
                 `{SETTLE_DONE}` (nothing more of this case will come), so its cases settled \
                 as if it had sent none"
            ),
        ),
        None => {}
    }
    let agent = runs_on.lease.map_or(&ctx.agent, |l| l.agent());
    let told = async {
        match agent.settled(said.headers, bound).await {
            Some(Ok(())) => {}
            Some(Err(why)) => {
                runs_on.note(ctx, format!("{why}: cases settled on settle_ms instead"));
                std::future::pending().await
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        end = w.settle(ctx.settle, bound) => {
            // Only a case that settled on the clock can have a call come later still.
            if let Some(l) = runs_on.lease {
                l.settled_on_clock();
            }
            end
        }
        () = runs_on.gone() => runs_on.early(over()).await,
        () = told => runs_on.early(over()).await,
    }
}

/// Why a case whose settle hit its bound with calls in flight is not judged: a call still
/// in flight when the case had to end is not in its traffic, and its checks would judge a
/// part of what the agent did. "Or more": at the run's end a pool's tails are waited for
/// from the gathering, which comes later than each answer.
pub(super) fn unfinished(settled: Settled, ctx: &RunContext) -> Option<String> {
    match settled {
        Settled::Bounded { in_flight } if in_flight > 0 => Some(format!(
            "{in_flight} of its calls were still in flight {} ms or more after its answer \
             (advanced.settle_max_ms): its traffic is incomplete",
            ctx.settle_max.max(ctx.settle).as_millis()
        )),
        Settled::Bounded { .. } | Settled::Quiet => None,
    }
}

/// What a case runs on: a pool instance, or the one agent process the run started.
pub(super) struct RunsOn<'a> {
    pub lease: Option<&'a Lease>,
    pub process: Option<&'a crate::agent::Process>,
}

impl RunsOn<'_> {
    /// At the case's answer, before its place among the cases in flight (`slot`) is given
    /// back: its pool instance told (`Lease::answered`), so that the pool knows the case's
    /// time, and whether its settle ends at once, before the next case takes an instance.
    pub fn answered(&self, slot: Option<tokio::sync::OwnedSemaphorePermit>) {
        if let Some(l) = self.lease {
            l.answered();
        }
        drop(slot);
    }

    /// `end`, a settle that ended because nothing more could come, said to the pool.
    async fn early(&self, end: impl std::future::Future<Output = Settled>) -> Settled {
        if let Some(l) = self.lease {
            l.settled_early();
        }
        end.await
    }

    /// Ready for the case: the instance restarted if it had exited; the process not exited.
    pub async fn ready(&self) -> Result<(), String> {
        match (self.lease, self.process) {
            (Some(l), _) => l.ready().await.map_err(|e| e.to_string()),
            (None, Some(p)) => match p.exited().await {
                Some((status, tail)) => Err(format!(
                    "the agent process (agent.command) had exited ({status}) before this \
                     case{tail}"
                )),
                None => Ok(()),
            },
            (None, None) => Ok(()),
        }
    }

    /// How it exited during the case, if it did. A pool instance that exited cleanly after
    /// answering is an agent that serves one case per process: its case is judged (the
    /// instance restarts before its next one).
    pub async fn exited(&self, answered: bool) -> Option<String> {
        match (self.lease, self.process) {
            (Some(l), _) => match l.exit_status().await {
                Some(s) if answered && s == CLEAN_EXIT => None,
                Some(_) => l.exited().await,
                None => None,
            },
            (None, Some(p)) => p.exited().await.map(|(status, tail)| {
                format!(
                    "the agent process (agent.command) exited ({status}) during this case{tail}"
                )
            }),
            (None, None) => None,
        }
    }

    /// Notes `what` for the run's warnings: the pool's, or the run's one agent's.
    fn note(&self, ctx: &RunContext, what: String) {
        match self.lease {
            Some(l) => l.note(what),
            None => ctx.agent.note(what),
        }
    }

    /// Returns once its process has exited (a script agent's: every process its case's
    /// run started): nothing more can come from it. Polled, as a process's exit is not
    /// awaited elsewhere; never returns without a process.
    async fn gone(&self) {
        if self.lease.is_none() && self.process.is_none() {
            return std::future::pending().await;
        }
        loop {
            let exited = match (self.lease, self.process) {
                (Some(l), _) if l.agent().script_tree_gone() == Some(true) => true,
                (Some(l), _) => l.exit_status().await.is_some(),
                (None, Some(p)) => p.exited().await.is_some(),
                (None, None) => false,
            };
            if exited {
                return;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
    }
}

/// How often a settling case looks whether its agent process has exited.
const EXIT_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// How `std::process::ExitStatus` says a clean exit.
const CLEAN_EXIT: &str = "exit status: 0";
