//! How many instances a pool holds (issue #50): `running` cases in flight while others
//! settle on spare instances. A case holds its instance for its own time and then its
//! settle window; an instance used again only after twice that window also follows a call
//! that comes later than the window (its idle gap). So `running × (case + 2 × settle) /
//! case` instances; the case time is measured as the run goes (the median of the latest
//! cases), and the count is bounded. Pure: the pool starts what this asks for.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Case times kept for the median.
const KEPT: usize = 16;

/// The pool's plan and what it measured.
#[derive(Debug)]
pub(super) struct Spares {
    /// Cases in flight at once (`advanced.concurrency`, at most `bound`).
    pub running: usize,
    /// The most instances (`agent.instances`, or its default).
    pub bound: usize,
    /// `advanced.settle_ms`.
    pub settle: Duration,
    /// Instances started or being started: the next one's number is this plus one.
    started: AtomicUsize,
    /// The latest cases' times, from their lease to their answer.
    times: Mutex<VecDeque<Duration>>,
}

/// Instances that keep `running` cases going while finished ones settle for `settle` and
/// then stay idle as long again, when a case takes `case`: at least `running`, at most
/// `bound`.
pub(super) fn wanted(running: usize, settle: Duration, case: Duration, bound: usize) -> usize {
    let floor = running.min(bound);
    if settle.is_zero() {
        return floor;
    }
    // A case that answers at once still holds its instance for a few milliseconds.
    let case = case.as_secs_f64().max(0.005);
    let n = (running as f64 * (case + 2.0 * settle.as_secs_f64()) / case).ceil();
    (n.min(bound as f64) as usize).max(floor)
}

impl Spares {
    pub fn new(running: usize, bound: usize, settle: Duration, started: usize) -> Spares {
        Spares {
            running: running.min(bound).max(1),
            bound,
            settle,
            started: AtomicUsize::new(started),
            times: Mutex::new(VecDeque::new()),
        }
    }

    /// Notes a case's time; the numbers of the instances to start now (1-based), if the
    /// measured case time asks for more than have been started.
    pub fn observe(&self, case: Duration) -> std::ops::Range<usize> {
        let median = {
            let mut times = self.times.lock().unwrap_or_else(|p| p.into_inner());
            if times.len() == KEPT {
                times.pop_front();
            }
            times.push_back(case);
            let mut sorted: Vec<Duration> = times.iter().copied().collect();
            sorted.sort_unstable();
            sorted[sorted.len() / 2]
        };
        let want = wanted(self.running, self.settle, median, self.bound);
        let claimed = self
            .started
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (want > n).then_some(want)
            });
        match claimed {
            Ok(before) => before + 1..want + 1,
            Err(_) => 0..0,
        }
    }

    /// Instances started or being started.
    #[cfg(test)]
    pub fn started(&self) -> usize {
        self.started.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn spares_cover_the_settle_window_in_units_of_case_time() {
        // 200 ms cases, 500 ms windows and as long idle: a case per 1.2 s per instance.
        assert_eq!(wanted(1, MS(500), MS(200), 64), 6);
        assert_eq!(wanted(10, MS(500), MS(200), 64), 60);
        assert_eq!(wanted(10, MS(500), MS(200), 20), 20, "bounded");
        assert_eq!(wanted(4, MS(0), MS(200), 64), 4, "nothing to settle");
        assert_eq!(wanted(4, MS(500), MS(5000), 64), 5, "long cases need few");
        assert_eq!(wanted(8, MS(500), MS(200), 4), 4, "never above the bound");
    }

    #[test]
    fn a_measured_case_time_starts_the_missing_spares_once() {
        let s = Spares::new(2, 20, MS(500), 4);
        assert_eq!(s.observe(MS(200)), 5..13, "2 × 1200 / 200 = 12 instances");
        assert_eq!(s.started(), 12);
        assert_eq!(s.observe(MS(200)), 0..0, "already started");
        // Slower cases need fewer: nothing is stopped, nothing more started.
        for _ in 0..20 {
            assert_eq!(s.observe(MS(2000)), 0..0);
        }
        // Much faster ones need more, up to the bound.
        for _ in 0..9 {
            s.observe(MS(10));
        }
        assert_eq!(s.started(), 20);
    }
}
