//! How many instances a pool needs (issue #50): `running` cases in flight while others
//! settle on spare instances. A case holds its instance for its own time and then its
//! settle window; an instance used again only after twice that window also follows a call
//! that comes later than the window (its idle gap). So `running × (case + 2 × settle) /
//! case` instances. The case time is not known before the first case: the pool starts with
//! three spares per case run at once (enough for cases of two thirds of a window), measures its case time (the median of the latest
//! cases) and, when cases wait for an instance, grows toward what it asks for (`grow`);
//! the run says how many it asked for.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Case times kept for the median.
const KEPT: usize = 16;

/// The most instances a count asked for is said with (`agent.instances`' own bound).
const MOST: usize = crate::config::MAX_INSTANCES as usize;

/// The pool's plan and what it measured.
#[derive(Debug)]
pub(super) struct Spares {
    /// Cases in flight at once (`advanced.concurrency`, at most the instances started).
    pub running: usize,
    /// `advanced.settle_ms`.
    pub settle: Duration,
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
    pub fn new(running: usize, instances: usize, settle: Duration) -> Spares {
        Spares {
            running: running.min(instances).max(1),
            settle,
            times: Mutex::new(VecDeque::new()),
        }
    }

    /// Notes a case's time.
    pub fn observe(&self, case: Duration) {
        let mut times = self.times.lock().unwrap_or_else(|p| p.into_inner());
        if times.len() == KEPT {
            times.pop_front();
        }
        times.push_back(case);
    }

    /// The median of the latest cases' times.
    pub fn median(&self) -> Option<Duration> {
        let times = self.times.lock().unwrap_or_else(|p| p.into_inner());
        let mut sorted: Vec<Duration> = times.iter().copied().collect();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    }

    /// When cases had to wait for an instance (`waited`: all it held were running or
    /// settling; `(start, now)`: the instances it started with and holds now, more once
    /// it grew), what that cost and the count the measured case time asks for.
    pub fn verdict(&self, (start, now): (usize, usize), waited: bool) -> Option<String> {
        if !waited || self.settle.is_zero() {
            return None;
        }
        let median = self.median()?;
        let want = wanted(self.running, self.settle, median, MOST);
        let grew = match now > start {
            true => format!(" (the pool grew from {start} as they waited)"),
            false => String::new(),
        };
        Some(format!(
            "agent.instances: cases waited for an instance: all {now} were running or \
             settling{grew}, so some cases started up to one settle window ({} ms) late and \
             were run on an instance with no idle gap after its last case; the measured case \
             time (median {} ms) asks for {want} instances at advanced.concurrency {} \
             (agent.instances: {want}{})",
            self.settle.as_millis(),
            median.as_millis(),
            self.running,
            if want >= MOST { ", the most" } else { "" }
        ))
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
    fn a_pool_whose_cases_waited_says_what_the_case_time_asks_for() {
        let s = Spares::new(2, 4, MS(500));
        assert_eq!(s.verdict((4, 4), true), None, "nothing measured yet");
        for _ in 0..3 {
            s.observe(MS(200));
        }
        assert_eq!(s.verdict((4, 4), false), None, "no case waited");
        let said = s.verdict((4, 4), true).expect("cases waited");
        assert!(said.contains("all 4 were running or settling"), "{said}");
        assert!(
            said.contains("median 200 ms) asks for 12 instances"),
            "{said}"
        );
        let grew = s.verdict((2, 4), true).unwrap();
        assert!(grew.contains("all 4 were running or settling (the pool grew from 2"));
        assert_eq!(
            Spares::new(2, 4, MS(0)).verdict((4, 4), true),
            None,
            "nothing settles"
        );
    }
}
