//! A pool instance leased for a case: its driver, lane and number; it restarted before the
//! case if it had exited; the tail its last case left; given back when dropped.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

use super::{Instance, Pool, Tail};
use crate::agent::launch::LaunchError;
use crate::agent::{Agent, AgentProcess};
use crate::journal::Lane;

/// One instance, the case's until dropped.
pub struct Lease {
    pub(super) pool: Arc<Pool>,
    pub(super) instance: Arc<Instance>,
    pub(super) index: usize,
    pub(super) _permit: OwnedSemaphorePermit,
    /// When it was leased: its case's time runs from here to its answer.
    pub(super) since: tokio::time::Instant,
}

impl Lease {
    fn instance(&self) -> &Instance {
        &self.instance
    }

    /// The tail its last case left (dropped once the new case serves the lane).
    pub fn take_tail(&self) -> Option<Tail> {
        self.instance
            .tail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Ends the tail its last case left: its lane serves no case until the next case takes
    /// it. Before the instance is restarted or reset, so that what the agent sends then
    /// (a restarted process's start-up calls, its reset handler's) is in no case, not the
    /// last case's.
    pub fn end_tail(&self) {
        let previous = self.take_tail();
        self.lane().serve(None);
        drop(previous);
    }

    /// Leaves `tail` on the instance: its late calls are its case's until the next case.
    pub fn keep_tail(&self, tail: Tail) {
        *self.instance.tail.lock().unwrap_or_else(|p| p.into_inner()) = Some(tail);
    }

    /// Its case answered: its time (lease to answer) measured for the pool's size
    /// (`Pool::observe`), as soon as it is known. A script whose processes have all exited
    /// settles at once (`settle`): said first, so that the pool does not grow for it.
    pub fn answered(&self) {
        if self.agent().script_tree_gone() == Some(true) {
            self.settled_early();
        }
        self.pool.observe(self.since.elapsed());
    }

    /// Its case's settle ended because nothing more could come (`Pool::settled_early`).
    pub fn settled_early(&self) {
        self.pool.settled_early();
    }

    /// Its case's settle ended on the clock (`Pool::settled_on_clock`).
    pub fn settled_on_clock(&self) {
        self.pool.settled_on_clock();
    }

    /// Something the run's report must say (`Pool::note`).
    pub fn note(&self, what: String) {
        self.pool.note(what);
    }

    /// How its process exited, if it has.
    pub async fn exit_status(&self) -> Option<String> {
        self.instance.process.lock().await.as_mut()?.exit_status()
    }

    pub fn agent(&self) -> &Agent {
        &self.instance().agent
    }

    pub fn lane(&self) -> &Lane {
        &self.instance().lane
    }

    /// The instance's number (1-based).
    pub fn number(&self) -> usize {
        self.instance().number
    }

    /// Before a case: the instance restarted if its process had exited (its last case's tail
    /// ended first: the new process's start-up calls are in no case). Why the case cannot
    /// run on it, if it could not be.
    pub async fn ready(&self) -> Result<(), LaunchError> {
        let i = self.instance();
        let mut process = i.process.lock().await;
        let Some(status) = process.as_mut().and_then(AgentProcess::exit_status) else {
            return Ok(());
        };
        if let Some(p) = process.take() {
            p.stop(Duration::from_secs(1)).await;
        }
        self.end_tail();
        tracing::info!(
            "agent instance {} had exited ({status}); restarting it on port {}",
            i.number,
            i.port
        );
        *process = self
            .pool
            .setup
            .launch(&i.agent, i.proxy, &i.capture, &i.log)
            .await
            .map_err(|why| {
                LaunchError(format!(
                    "agent instance {} exited ({status}) and could not restart: {why}",
                    i.number
                ))
            })?;
        Ok(())
    }

    /// After a case: how the instance's process exited, if it did, with its log's tail.
    pub async fn exited(&self) -> Option<String> {
        let i = self.instance();
        let mut process = i.process.lock().await;
        let p = process.as_mut()?;
        let status = p.exit_status()?;
        Some(format!(
            "agent instance {} exited ({status}) during this case{}",
            i.number,
            p.tail()
        ))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(self.index);
    }
}
