//! A pool that grows as its run goes (issue #50): it starts with three spares per case run
//! at once (`config::settle`), since the case time is not known before the first case; when it runs out
//! of free instances (all running or settling: a case waits, or the next one would), more
//! start in the background toward what the measured case time (lease to answer, measured
//! at each answer) asks for (`spares::wanted`), never more than the pool's
//! most (`agent.instances`, 64, the run's cases) nor than the cases left could use. An
//! instance joins the pool only once ready; one that fails to start is said, with why,
//! and the pool grows no more (an agent that cannot start one more instance will not start
//! the next either), the run going on with the others.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::task::JoinHandle;

use super::Pool;
use super::spares::wanted;
use crate::config::PoolSize;

/// What the pool may still start, and what it is starting.
pub(super) struct Growth {
    /// The most instances it holds (`PoolSize::most`).
    pub most: usize,
    /// The instances ready at the start.
    pub started_with: usize,
    /// The run's cases, when known.
    cases: Option<usize>,
    /// Cases given an instance (or waiting for one) so far.
    leased: AtomicUsize,
    /// Instances starting now.
    starting: AtomicUsize,
    /// The number the next instance started gets (1-based, after the first ones').
    next: AtomicUsize,
    /// An instance failed to start: the pool grows no more.
    failed: AtomicBool,
    /// The run ended: an instance that becomes ready now is stopped at once.
    stopped: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Growth {
    pub fn new(size: PoolSize, ready: usize) -> Growth {
        Growth {
            most: size.most.max(size.start),
            started_with: ready,
            cases: size.cases,
            leased: AtomicUsize::new(0),
            starting: AtomicUsize::new(0),
            next: AtomicUsize::new(size.start + 1),
            failed: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            tasks: Mutex::default(),
        }
    }

    /// A case asks for an instance.
    pub fn leased(&self) {
        self.leased.fetch_add(1, Ordering::AcqRel);
    }

    /// How many more to start for a pool of `ready` that wants `want` in all: never past
    /// `most`, nor more than the cases not yet given an instance (the one waiting
    /// included) could use.
    fn more(&self, ready: usize, want: usize) -> usize {
        let starting = self.starting.load(Ordering::Acquire);
        let held = ready + starting;
        let left = self.cases.map_or(usize::MAX, |c| {
            // The case waiting now is among those leased.
            (c + 1).saturating_sub(self.leased.load(Ordering::Acquire))
        });
        want.min(self.most)
            .saturating_sub(held)
            .min(left.saturating_sub(starting))
    }

    /// Ends the growth at the run's end: instances still starting are stopped (dropping
    /// a start stops what it started, its process group included).
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Pool {
    /// Starts more instances in the background when the measured case time asks for more
    /// than the pool holds (see the module); nothing before a case has been measured.
    pub(super) fn grow(self: &Arc<Self>) {
        let g = &self.growth;
        if g.failed.load(Ordering::Acquire) || g.stopped.load(Ordering::Acquire) {
            return;
        }
        // Settles that end as soon as nothing more can come need no spare to settle on.
        if self.early.load(Ordering::Acquire) && !self.clocked() {
            return;
        }
        let Some(case) = self.spares.median() else {
            return;
        };
        let want = wanted(self.spares.running, self.spares.settle, case, g.most);
        let more = g.more(self.size(), want);
        if more == 0 {
            return;
        }
        tracing::info!(
            "cases waited for an agent instance: starting {more} more (the measured case \
             time, median {} ms, asks for {want})",
            case.as_millis()
        );
        let mut tasks = g.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        for _ in 0..more {
            g.starting.fetch_add(1, Ordering::AcqRel);
            let number = g.next.fetch_add(1, Ordering::AcqRel);
            tasks.push(tokio::spawn(self.clone().add(number)));
        }
    }

    /// Starts instance `number` and, once ready, adds it to the free ones.
    async fn add(self: Arc<Self>, number: usize) {
        let started = self.setup.instance(number).await;
        for said in self.setup.take_said() {
            self.note(said);
        }
        let g = &self.growth;
        match started {
            Ok(instance) if g.stopped.load(Ordering::Acquire) => {
                if let Some(p) = instance.process.lock().await.take() {
                    p.stop(std::time::Duration::from_secs(1)).await;
                }
            }
            Ok(instance) => {
                let index = {
                    let mut all = self.instances.write().unwrap_or_else(|p| p.into_inner());
                    all.push(Arc::new(instance));
                    all.len() - 1
                };
                self.free
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back(index);
                self.permits.add_permits(1);
            }
            Err((port, why)) => {
                g.failed.store(true, Ordering::Release);
                self.note(format!(
                    "agent instance {number} (port {port}), started because cases waited for \
                     an instance, never became ready, so no case ran on it and the pool grew \
                     no more; the run went on with the others: {why}"
                ));
            }
        }
        g.starting.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn growth(start: usize, most: usize, cases: Option<usize>) -> Growth {
        Growth::new(PoolSize { start, most, cases }, start)
    }

    #[test]
    fn a_pool_grows_toward_what_is_wanted_within_its_most_and_the_cases_left() {
        let g = growth(2, 64, Some(50));
        g.leased();
        assert_eq!(g.more(2, 6), 4, "toward the wanted count");
        assert_eq!(g.more(2, 100), 50, "no more than the cases left could use");
        let few = growth(2, 64, Some(4));
        for _ in 0..3 {
            few.leased();
        }
        assert_eq!(few.more(2, 6), 2, "one waiting and one to come");
        let capped = growth(2, 5, None);
        assert_eq!(capped.more(2, 60), 3, "never past its most");
        assert_eq!(capped.more(5, 60), 0);
        capped.starting.fetch_add(2, Ordering::AcqRel);
        assert_eq!(capped.more(2, 60), 1, "those starting count");
    }
}
