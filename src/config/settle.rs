//! `advanced.settle_ms` and `advanced.settle_max_ms` (docs/config.md, "How a case
//! settles"): how many pool instances a run starts to settle on, their ranges, and load
//! warnings saying what a setting will cost a run when it costs more than it looks (a long
//! window, no spare pool instance to settle on).

use super::schema::{AdvancedSpec, Config};
use super::{AgentTarget, ConfigError};

/// The longest `settle_max_ms`: ten minutes of following one case.
const MAX_SETTLE_MAX_MS: u64 = 600_000;

/// Above this a window is not a sane default for any agent: it is said at load.
const SANE_SETTLE_MS: u64 = 5_000;

/// How many instances a pool starts with, and the most it grows to (`AgentTarget::pool_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    /// Started with the pool, all ready before the first case.
    pub start: usize,
    /// The most it holds: more start in the background when cases wait for an instance.
    pub most: usize,
    /// The run's cases, when known: it grows no more than the cases left could use.
    pub cases: Option<usize>,
}

impl AgentTarget {
    /// How many instances a run starts and the most it holds, for `cases` cases (when
    /// known): one without `{port}` in the command (unless the agent is a script);
    /// exactly `agent.instances` when set; else `concurrency` when nothing settles
    /// (`settle_ms` 0), and otherwise 4 × `concurrency` (spares to settle on), growing
    /// while the run goes when cases wait for an instance, toward what the measured case
    /// time asks for (`agent::pool`), at most 64 (or `concurrency`, when above). Never more
    /// than the run has cases: an instance no case can use is a process for nothing.
    pub fn pool_size(&self, concurrency: u32, settle_ms: u64, cases: Option<usize>) -> PoolSize {
        // A script's cases each run a process of their own on a lane of their own.
        if self.per_port.is_none() && !self.script {
            return PoolSize {
                start: 1,
                most: 1,
                cases,
            };
        }
        if let Some(n) = self.instances {
            let n = n.max(1) as usize;
            return PoolSize {
                start: n,
                most: n,
                cases,
            };
        }
        let c = concurrency.max(1) as usize;
        let bound = cases.unwrap_or(usize::MAX).max(1);
        let most = (super::agent::MAX_INSTANCES as usize).min(bound);
        let start = match settle_ms {
            0 => c,
            // Enough for cases of about two thirds of a window (`spares::wanted`), so a
            // fast agent's run pays about one window before any case time is measured
            // (docs/benchmarks.md, "Settle windows that overlap": 2 × paid twice that).
            _ => 4 * c,
        };
        // Never fewer than run at once (`advanced.concurrency` may exceed 64), but never
        // more than cases.
        let floor = c.min(bound);
        let start = start.min(most).max(floor);
        let most = if settle_ms == 0 {
            start
        } else {
            most.max(start)
        };
        PoolSize { start, most, cases }
    }
}

/// `settle_max_ms` in range and no shorter than `settle_ms`.
pub(super) fn check(a: &AdvancedSpec, errors: &mut Vec<ConfigError>) {
    if a.settle_max_ms > MAX_SETTLE_MAX_MS {
        errors.push(ConfigError::new(
            "advanced.settle_max_ms",
            format!(
                "{} is out of range 0..={MAX_SETTLE_MAX_MS} (milliseconds)",
                a.settle_max_ms
            ),
        ));
    } else if a.settle_max_ms < a.settle_ms && a.settle_ms <= 60_000 {
        errors.push(ConfigError::new(
            "advanced.settle_max_ms",
            format!(
                "{} is shorter than advanced.settle_ms ({}): a case could never be quiet for \
                 its window; make it at least {}",
                a.settle_max_ms, a.settle_ms, a.settle_ms
            ),
        ));
    }
}

/// What settling will cost when that is more than the user may expect.
pub(super) fn warn(c: &Config, warnings: &mut Vec<String>) {
    let (ms, n) = (c.advanced.settle_ms, c.concurrency());
    if ms > SANE_SETTLE_MS {
        warnings.push(format!(
            "advanced.settle_ms: {ms} follows every case for {:.1} s of quiet after its answer: \
             with spare pool instances the run pays that about once, at its end; without them \
             (one agent process, or agent.instances no more than advanced.concurrency) once per \
             case, {:.0} s for 50 cases at concurrency {n}",
            ms as f64 / 1000.0,
            50.0 * ms as f64 / 1000.0 / f64::from(n.max(1))
        ));
    }
    let Some(a) = &c.agent else { return };
    let Some(instances) = a.instances.filter(|_| a.per_port.is_some() && ms > 0) else {
        return;
    };
    if instances <= n {
        warnings.push(format!(
            "agent.instances: {instances} leaves no spare instance beside advanced.concurrency \
             {n} for cases to settle on: each case holds its instance for its settle window \
             ({ms} ms), so the run pays about one window per {} cases, and a call the agent \
             makes later than the window lands in that instance's next case (the run warns \
             when it sees one); set agent.instances to {} or more, or settle_ms: 0 for an \
             agent that does nothing after answering",
            instances.min(n),
            (2 * n).min(super::agent::MAX_INSTANCES),
        ));
    }
}
