//! The agent pool (design.md §6): when `agent.command` takes `{port}`, a run starts
//! copies of it, each on a free port of its own and each talking through a proxy lane of
//! its own, so every exchange arriving on an instance's lane is the case that instance
//! runs. A case leases the instance idle longest; an instance that exits is restarted
//! before its next case, and the case it exited in says so. Instances that never become
//! ready are left out (the run says which and why); none ready is an error.
//!
//! Settling does not hold the run (issue #50): a case that answered keeps its instance
//! while it settles, and the next case goes to a spare one. The pool starts with three
//! spares per case run at once, never more instances than the run has cases
//! (`AgentTarget::pool_size`); when a case has to wait for an instance, more start in the
//! background toward what the measured case time asks for (`grow`, `spares`), each
//! leased only once ready. After its settle
//! a case leaves a `Tail` on its instance: the lane still serves it, so a call the agent
//! makes later still is that case's, until the instance's next case starts.

mod grow;
mod lease;
mod ports;
mod setup;
mod spares;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::Semaphore;

use super::launch::LaunchError;
use super::{Agent, AgentProcess};
use crate::config::{AgentTarget, Config, PoolSize};
use crate::journal::{CaseWatch, Lane, OpenLane, ServeCapture};
use grow::Growth;
pub use lease::Lease;
use spares::Spares;

/// What starting an instance needs (at the start, for a spare, or to restart one).
struct Setup {
    config: Config,
    target: AgentTarget,
    ca: PathBuf,
    wrap_dir: Option<PathBuf>,
    open: OpenLane,
    log: PathBuf,
    /// What starting instances met that the run must say (a port taken meanwhile).
    said: Mutex<Vec<String>>,
}

struct Instance {
    /// 1-based, as the run's words say it.
    number: usize,
    port: u16,
    agent: Agent,
    lane: Lane,
    proxy: SocketAddr,
    log: PathBuf,
    process: tokio::sync::Mutex<Option<AgentProcess>>,
    /// Serves its namespace's capture on its lane (`agent.capture: netns`).
    capture: ServeCapture,
    /// Its last case, once settled, until its next case starts.
    tail: Mutex<Option<Tail>>,
    _listener: Box<dyn Send + Sync>,
    /// Its port's reservation among flakestorm processes (`ports`).
    _port: ports::Reserved,
}

/// What a settled case leaves on its instance: its lane still serves it, its exchanges are
/// still counted (`watch`) and its rules still apply (`keep`), until the instance's next
/// case starts or the run gathers its late calls.
pub struct Tail {
    pub trace: Arc<str>,
    pub watch: CaseWatch,
    pub keep: Box<dyn Send + Sync>,
}

/// The instances of one run.
pub struct Pool {
    /// An instance that exits is restarted in place; instances started as the run goes
    /// (`grow`) are added at the end, once ready.
    instances: RwLock<Vec<Arc<Instance>>>,
    /// Free instances, idle longest first.
    free: Mutex<VecDeque<usize>>,
    permits: Arc<Semaphore>,
    setup: Setup,
    spares: Spares,
    /// Set when a case had to wait for an instance: every one was running or settling, so
    /// instances were used again as soon as their window ended, with no idle gap.
    waited: AtomicBool,
    /// Set when a case's settle ended on the clock (quiet for `settle_ms`, or its bound)
    /// rather than because its agent process (tree) exited or the agent said nothing more
    /// would come: only then can a call come later, and the run's warnings on reuse apply.
    clocked: AtomicBool,
    /// Set when a case's settle ended because nothing more could come (its process (tree)
    /// exited, the agent said so): while no settle ended on the clock, spares are not
    /// needed, and the pool does not grow.
    early: AtomicBool,
    /// How many instances it may still start, and those starting.
    growth: Growth,
    /// What happened during the run that its report must say (a spare that failed to
    /// start, late calls).
    notes: crate::agent::notes::Notes,
    /// Instances left out at the start, in words.
    pub warnings: Vec<String>,
}

impl Pool {
    /// Starts `size.start` instances of `config.agent` (`AgentTarget::pool_size`), each
    /// behind a lane from `open`; their output to `log` (numbered). Fails when none becomes
    /// ready, saying why of each; one that fails is left out and said, and the run goes on
    /// with the others. It may grow to `size.most` as the run goes (`grow`).
    pub async fn start(
        config: &Config,
        size: PoolSize,
        open: &OpenLane,
        ca: &Path,
        wrap_dir: Option<&Path>,
        log: &Path,
    ) -> Result<Pool, LaunchError> {
        let Some(spec) = &config.agent else {
            return Err(LaunchError("runs need an `agent:` section".into()));
        };
        let setup = Setup {
            config: config.clone(),
            target: spec.clone(),
            ca: ca.to_path_buf(),
            wrap_dir: wrap_dir.map(Path::to_path_buf),
            open: open.clone(),
            log: log.to_path_buf(),
            said: Mutex::default(),
        };
        let starts = (1..=size.start).map(|n| setup.instance(n));
        let (mut instances, mut warnings) = (vec![], vec![]);
        for (i, started) in join_all(starts).await.into_iter().enumerate() {
            match started {
                Ok(instance) => instances.push(Arc::new(instance)),
                Err((port, why)) => warnings.push(format!(
                    "agent instance {} (port {port}) never became ready, so no case ran on it: \
                     {why}",
                    i + 1,
                )),
            }
        }
        warnings.extend(setup.take_said());
        if instances.is_empty() {
            return Err(LaunchError(warnings.join("\n")));
        }
        let settle = Duration::from_millis(config.advanced.settle_ms);
        let n = instances.len();
        Ok(Pool {
            instances: RwLock::new(instances),
            free: Mutex::new((0..n).collect()),
            permits: Arc::new(Semaphore::new(n)),
            setup,
            spares: Spares::new(config.concurrency() as usize, n, settle),
            waited: AtomicBool::new(false),
            clocked: AtomicBool::new(false),
            early: AtomicBool::new(false),
            growth: Growth::new(size, n),
            notes: Default::default(),
            warnings,
        })
    }

    /// Its instances now (a copy: more may start meanwhile).
    fn all(&self) -> Vec<Arc<Instance>> {
        self.instances
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many instances are ready now.
    pub fn size(&self) -> usize {
        self.instances
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// The most cases it runs at once: its instances, at most `advanced.concurrency`.
    pub fn bound(&self) -> usize {
        self.spares.running
    }

    /// Whether it holds more instances than cases run at once: spares to settle on.
    pub fn has_spares(&self) -> bool {
        self.size() > self.spares.running
    }

    /// Whether a case had to wait for an instance (all running or settling): instances
    /// were then used again right after their window, as without spares.
    pub fn waited(&self) -> bool {
        self.waited.load(Ordering::Acquire)
    }

    /// Notes that a case's settle ended on the clock (`clocked`).
    pub fn settled_on_clock(&self) {
        self.clocked.store(true, Ordering::Release);
    }

    /// Notes that a case's settle ended because nothing more could come (`early`).
    pub fn settled_early(&self) {
        self.early.store(true, Ordering::Release);
    }

    /// Whether some case's settle ended on the clock: a call can then have come later
    /// than its window (else every settle ended because nothing more could come).
    pub fn clocked(&self) -> bool {
        self.clocked.load(Ordering::Acquire)
    }

    /// The proxy listeners its instances talk through (each its lane's), in instance
    /// order: those started so far (a restarted instance keeps its lane; a pool that grows
    /// adds lanes).
    pub fn lanes(&self) -> Vec<SocketAddr> {
        self.all().iter().map(|i| i.proxy).collect()
    }

    /// The first instance's driver (what reports show as the agent's endpoint).
    pub fn first(&self) -> Agent {
        self.all()[0].agent.clone()
    }

    /// The run's header line: `pool: 4 running + 2 settling`, and what that holds.
    pub fn describe(&self) -> String {
        let (running, ready) = (self.spares.running, self.size());
        let settling = ready.saturating_sub(running);
        let settle = self.spares.settle.as_millis();
        let most = self.growth.most.max(ready);
        match (settling, settle) {
            (_, 0) => format!("pool: {running} running ({ready} agent instances)"),
            (0, _) if most == ready => format!(
                "pool: {running} running + 0 settling: no spare instance, so each case's \
                 settle window ({settle} ms) holds its instance"
            ),
            (_, _) if most == ready => format!(
                "pool: {running} running + {settling} settling ({ready} agent instances, all \
                 started; agent.instances sets how many)"
            ),
            (_, _) => format!(
                "pool: {running} running + {settling} settling ({ready} agent instances \
                 started; up to {most} if cases wait for one, as the measured case time asks; \
                 agent.instances sets how many)"
            ),
        }
    }

    /// Waits for a free instance and takes the one idle longest: its last case has had the
    /// longest for its late calls. A case that has to wait has more instances started
    /// (`grow`).
    pub async fn lease(self: &Arc<Self>) -> Lease {
        self.growth.leased();
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                self.waited.store(true, Ordering::Release);
                self.grow();
                let p = self.permits.clone().acquire_owned().await;
                p.expect("the pool's semaphore is never closed")
            }
        };
        let (index, last) = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            let index = free.pop_front().expect("a permit means a free instance");
            (index, free.is_empty())
        };
        if last {
            // The next case would wait: grow now, if the case time asks for more.
            self.grow();
        }
        Lease {
            pool: self.clone(),
            instance: self.all()[index].clone(),
            index,
            _permit: permit,
            since: tokio::time::Instant::now(),
        }
    }

    /// Notes a case's time (lease to answer): what the pool grows toward and the run says
    /// of its spares. With no instance free, the pool grows now if that time asks for more.
    pub fn observe(self: &Arc<Self>, case: Duration) {
        self.spares.observe(case);
        if self
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            self.grow();
        }
    }

    /// What the measured case time asked of the pool, when it asked for another count than
    /// it held (`spares::Spares::verdict`).
    pub fn spares_verdict(&self) -> Option<String> {
        if !self.clocked() {
            return None;
        }
        let grew = (self.growth.started_with, self.size());
        self.spares.verdict(grew, self.waited())
    }

    /// Something the run's report must say, once.
    pub fn note(&self, what: String) {
        self.notes.add(what);
    }

    /// What the run noted so far (`note`), taken.
    pub fn take_notes(&self) -> Vec<String> {
        self.notes.take()
    }

    /// Ends every instance's tail: no lane serves a case any more; the tails, whose late
    /// calls the run gathers once none is in flight.
    pub fn end_tails(&self) -> Vec<Tail> {
        self.all()
            .iter()
            .filter_map(|i| {
                i.lane.serve(None);
                i.tail.lock().unwrap_or_else(|p| p.into_inner()).take()
            })
            .collect()
    }

    /// Stops every instance; a warning for each that had exited during the run.
    pub async fn stop(&self) -> Vec<String> {
        self.growth.stop().await;
        let mut warnings = vec![];
        for i in &self.all() {
            if let Some(p) = i.process.lock().await.take()
                && let Some(w) = p.end_of_run().await
            {
                warnings.push(format!("agent instance {}: {w}", i.number));
            }
        }
        warnings
    }
}
