//! Which case an exchange belongs to when the agent cannot say so itself (design.md §6), and
//! when a case's traffic is over.
//!
//! A `Lane` is one way into the proxy: a pool instance's own listener, or the main listener
//! while a run has it to itself (exclusive attribution). It holds the trace id of the case it
//! serves now; the proxy stamps that id on every exchange that arrives through it, so the
//! case owns its exchanges without any header from the agent.
//!
//! `Flights` counts the exchanges of each watched case still in flight and when one last
//! began or ended, so a case can settle: it ends when its answer has arrived, none of its
//! exchanges is in flight and none began for a quiet interval (an email an agent sends in
//! a background task just after answering is still its case's), bounded in time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// One way into the proxy and the case it serves now. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Lane(Arc<RwLock<Option<Arc<str>>>>);

impl Lane {
    /// Exchanges arriving from now on belong to the case with trace id `trace` (`None`:
    /// to no case).
    pub fn serve(&self, trace: Option<&str>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = trace.map(Arc::from);
    }

    /// The trace id of the case this lane serves now.
    pub fn current(&self) -> Option<Arc<str>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Serves the case with trace id `trace` until the guard drops (also when its run is
    /// cancelled mid-case: the main listener's traffic must not stay with a dead case).
    pub fn serving(&self, trace: &str) -> Serving {
        self.serve(Some(trace));
        Serving(self.clone())
    }
}

/// A lane's case, until dropped (`Lane::serving`).
#[derive(Debug)]
pub struct Serving(Lane);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.serve(None);
    }
}

/// A proxy lane opened for a pool instance: its listener's address, the lane, what keeps
/// the listener open, and how the instance's captured traffic is served on the same lane.
pub struct LaneAt {
    pub addr: std::net::SocketAddr,
    pub lane: Lane,
    pub keep: Box<dyn Send + Sync>,
    pub capture: ServeCapture,
}

/// Serves an agent namespace's capture sockets on a lane (`agent.capture: netns`): what it
/// returns keeps them served until dropped.
pub type ServeCapture =
    Arc<dyn Fn(crate::capture::Captured) -> std::io::Result<Box<dyn Send + Sync>> + Send + Sync>;

/// Opens a proxy lane (`Proxy::lane_opener`), for the agent pool.
pub type OpenLane = Arc<
    dyn Fn() -> futures_util::future::BoxFuture<'static, std::io::Result<LaneAt>> + Send + Sync,
>;

/// A watched case's traffic: exchanges in flight, and the last time one began or ended.
#[derive(Debug, Clone, Copy)]
struct Flight {
    in_flight: usize,
    last: Instant,
}

/// In-flight counts of the cases being watched. Only watched traces are counted, so trace
/// ids that arbitrary clients send cannot grow it.
#[derive(Debug, Default)]
pub(super) struct Flights {
    map: Mutex<HashMap<Arc<str>, Flight>>,
    changed: Notify,
}

impl Flights {
    fn update(&self, trace: &str, f: impl FnOnce(&mut Flight)) -> bool {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let Some(flight) = map.get_mut(trace) else {
            return false;
        };
        f(flight);
        flight.last = Instant::now();
        drop(map);
        self.changed.notify_waiters();
        true
    }

    /// Whether a case under way watches `trace` (its exchanges are that case's).
    pub(super) fn watched(&self, trace: &str) -> bool {
        self.get(trace).is_some()
    }

    fn get(&self, trace: &str) -> Option<Flight> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(trace)
            .copied()
    }
}

/// An exchange of a watched case, in flight until dropped.
#[derive(Debug)]
pub struct InFlight {
    flights: Arc<Flights>,
    trace: Arc<str>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.flights
            .update(&self.trace, |f| f.in_flight = f.in_flight.saturating_sub(1));
    }
}

/// A case whose traffic is counted while this lives.
#[derive(Debug)]
pub struct CaseWatch {
    flights: Arc<Flights>,
    trace: Arc<str>,
}

/// How a case's traffic ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Nothing in flight and nothing new for the quiet interval.
    Quiet,
    /// The bound passed with this many exchanges still in flight.
    Bounded { in_flight: usize },
}

impl CaseWatch {
    /// Waits until none of the case's exchanges is in flight and none began or ended for
    /// `quiet` (counted from now at the earliest: call it when the answer arrives), but no
    /// longer than `bound` from now.
    pub async fn settle(&self, quiet: Duration, bound: Duration) -> Settled {
        let start = Instant::now();
        let deadline = start + bound.max(quiet);
        loop {
            let changed = self.flights.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let Some(f) = self.flights.get(&self.trace) else {
                return Settled::Quiet;
            };
            let quiet_until = f.last.max(start) + quiet;
            let now = Instant::now();
            if f.in_flight == 0 && now >= quiet_until {
                return Settled::Quiet;
            }
            if now >= deadline {
                return Settled::Bounded {
                    in_flight: f.in_flight,
                };
            }
            let wake = if f.in_flight > 0 {
                deadline
            } else {
                quiet_until.min(deadline)
            };
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}

impl Drop for CaseWatch {
    fn drop(&mut self) {
        self.flights
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.trace);
    }
}

impl super::Journal {
    /// The main listener's lane: set by a run that has the proxy to itself, so exchanges
    /// without a trace id of their own go to its case.
    pub fn main_lane(&self) -> &Lane {
        &self.inner.main_lane
    }

    /// Counts the exchanges of the case with trace id `trace` until the watch drops.
    pub fn watch(&self, trace: &str) -> CaseWatch {
        let trace: Arc<str> = Arc::from(trace);
        let flight = Flight {
            in_flight: 0,
            last: Instant::now(),
        };
        self.inner
            .flights
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(trace.clone(), flight);
        CaseWatch {
            flights: self.inner.flights.clone(),
            trace,
        }
    }

    /// An exchange of trace `trace` began: in flight until the guard drops. `None` when
    /// no case watches that trace.
    pub fn begin(&self, trace: Option<&str>) -> Option<InFlight> {
        let trace = trace?;
        let flights = &self.inner.flights;
        flights
            .update(trace, |f| f.in_flight += 1)
            .then(|| InFlight {
                flights: flights.clone(),
                trace: Arc::from(trace),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Journal, Redactor};

    fn journal() -> Journal {
        Journal::new(10, Redactor::new(&[], &[]))
    }

    #[tokio::test(start_paused = true)]
    async fn a_case_settles_after_a_quiet_interval_with_nothing_in_flight() {
        let j = journal();
        let w = j.watch("t1");
        let t0 = Instant::now();
        assert_eq!(
            w.settle(Duration::from_millis(300), Duration::from_secs(5))
                .await,
            Settled::Quiet
        );
        assert_eq!(t0.elapsed(), Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn an_exchange_in_flight_or_begun_late_holds_the_case_open() {
        let j = journal();
        let w = j.watch("t1");
        let flying = j.begin(Some("t1")).expect("watched");
        let j2 = j.clone();
        let t0 = Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            drop(flying);
            // A background call begun 200 ms after: still this case's.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let late = j2.begin(Some("t1"));
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(late);
        });
        let quiet = Duration::from_millis(300);
        assert_eq!(
            w.settle(quiet, Duration::from_secs(5)).await,
            Settled::Quiet
        );
        assert_eq!(t0.elapsed(), Duration::from_millis(1250) + quiet);
    }

    #[tokio::test(start_paused = true)]
    async fn the_bound_ends_a_case_whose_exchange_never_ends() {
        let j = journal();
        let w = j.watch("t1");
        let _stuck = j.begin(Some("t1"));
        let t0 = Instant::now();
        let end = w
            .settle(Duration::from_millis(300), Duration::from_secs(2))
            .await;
        assert_eq!(end, Settled::Bounded { in_flight: 1 });
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
    }

    #[test]
    fn only_watched_traces_are_counted_and_a_watch_forgets_its_trace() {
        let j = journal();
        assert!(j.begin(Some("stranger")).is_none());
        assert!(j.begin(None).is_none());
        let w = j.watch("t1");
        assert!(j.begin(Some("t1")).is_some());
        drop(w);
        assert!(j.begin(Some("t1")).is_none());
    }

    #[test]
    fn a_lane_serves_one_case_at_a_time() {
        let lane = Lane::default();
        assert_eq!(lane.current(), None);
        lane.serve(Some("abc"));
        assert_eq!(lane.clone().current().as_deref(), Some("abc"));
        lane.serve(None);
        assert_eq!(lane.current(), None);
        let serving = lane.serving("def");
        assert_eq!(lane.current().as_deref(), Some("def"));
        drop(serving);
        assert_eq!(lane.current(), None, "a dropped case leaves its lane");
    }
}
