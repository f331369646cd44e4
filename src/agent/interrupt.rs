//! Stopping the group of an agent whose handle was dropped (an interrupted run) off the
//! async threads, whose proxy traffic a wait of up to three seconds would stall (all of it
//! on a one-CPU sidecar's single thread), and [`stopped`] to wait for those stops.

use std::sync::Mutex;
use std::time::Duration;

use rustix::process::Signal;
use tokio::process::Child;
use tokio::task::JoinHandle;

use super::supervise::{GRACE_ON_EOF, Lifeline, signal_group};

/// The agent's process group and what leads it.
pub(super) struct Group {
    /// Its supervisor, or `sh -c` itself when no supervisor is registered.
    pub(super) child: Child,
    /// The group's id (the leader's pid: the supervisor's, or `sh`'s), signalled as a
    /// whole; `None` if the leader was already reaped.
    pub(super) id: Option<u32>,
    /// The supervisor's lifeline: how `sh` exited, and how to stop the group.
    pub(super) lifeline: Option<Lifeline>,
}

/// Stops `group` on the blocking pool, or here when no runtime runs (no thread to stall).
pub(super) fn stop(group: Group) {
    let interrupted = Interrupted(group);
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        // A runtime shutting down drops the task unrun: `Interrupted` stops the group
        // then, on the thread that drops it.
        let stop = runtime.spawn_blocking(move || drop(interrupted));
        let mut stopping = STOPPING.lock().unwrap_or_else(|p| p.into_inner());
        stopping.retain(|s| !s.is_finished());
        stopping.push(stop);
    }
}

/// The stops of dropped agents' groups still under way (`AgentProcess::drop`).
static STOPPING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits until the group of every agent dropped so far is stopped: a run interrupted while
/// its agent started ends only then, so the next run does not meet that agent on its port.
pub async fn stopped() {
    loop {
        let pending = std::mem::take(&mut *STOPPING.lock().unwrap_or_else(|p| p.into_inner()));
        if pending.is_empty() {
            return;
        }
        for stop in pending {
            // A stop that panicked has nothing left to wait for.
            let _ = stop.await;
        }
    }
}

/// A group to stop without a runtime to await on: when dropped, blocking.
struct Interrupted(Group);

impl Drop for Interrupted {
    fn drop(&mut self) {
        let Group {
            child,
            id: Some(group),
            lifeline,
        } = &mut self.0
        else {
            return;
        };
        // A supervisor killed on its own (before this) leaves the group to us.
        let orphaned = matches!(child.try_wait(), Ok(Some(_)));
        let supervised = match lifeline {
            Some(lifeline) if !orphaned => {
                lifeline.stop(None);
                true
            }
            Some(_) | None => {
                signal_group(*group, Signal::TERM);
                false
            }
        };
        let wait = match supervised {
            true => GRACE_ON_EOF + Duration::from_secs(1),
            false => Duration::from_secs(2),
        };
        let ended = wait_blocking(child, wait);
        // A supervisor that ended has killed the group; else SIGKILL what is left.
        if !(supervised && ended) {
            signal_group(*group, Signal::KILL);
        }
    }
}

/// Waits up to `wait` for `child` to exit, blocking; whether it did.
fn wait_blocking(child: &mut Child, wait: Duration) -> bool {
    for _ in 0..wait.as_millis() / 50 {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return true;
        }
        #[allow(clippy::disallowed_methods)] // off the runtime: nothing to await on
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
