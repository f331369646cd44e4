//! A run's event log: what `/v1/runs/{id}/events` streams (case started and finished,
//! phase scores, cell verdicts, done; nothing after done). Events are numbered from 1 and
//! kept for the run's life, so a follower that reconnects with `Last-Event-ID` gets
//! exactly what it missed; followers wait on a watch of the last id, so a slow or gone
//! follower never holds up the run.

use std::sync::Mutex;

use tokio::sync::watch;

use super::{EventKind, RunEvent};

/// One event, numbered.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// 1, 2, … in the order they happened.
    pub id: u64,
    pub event: RunEvent,
}

impl Event {
    /// The run's last word: nothing is logged after it.
    pub fn is_done(&self) -> bool {
        self.event.kind() == EventKind::Done
    }
}

pub struct EventLog {
    events: Mutex<Vec<Event>>,
    last: watch::Sender<u64>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            events: Mutex::default(),
            last: watch::channel(0).0,
        }
    }
}

impl EventLog {
    /// Adds an event, unless the run has ended: `done` is the last word, so a follower that
    /// had it, or reconnects after it, is never kept waiting for more (a case of a
    /// cancelled run that ended late is not news).
    pub fn push(&self, event: RunEvent) {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if events.last().is_some_and(Event::is_done) {
            return;
        }
        let id = events.len() as u64 + 1;
        events.push(Event { id, event });
        drop(events);
        self.last.send_replace(id);
    }

    /// The events after `id`, in order.
    pub fn after(&self, id: u64) -> Vec<Event> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events.iter().skip(id as usize).cloned().collect()
    }

    /// The run has ended: its last event is `done` (nothing is added after it).
    pub fn ended(&self) -> bool {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events.last().is_some_and(Event::is_done)
    }

    /// Changes whenever an event is pushed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RunKind, RunStatus};

    fn started() -> RunEvent {
        RunEvent::Started { id: "r1".into() }
    }

    fn case_started(input: &str) -> RunEvent {
        RunEvent::case_started("s", input)
    }

    #[test]
    fn events_are_numbered_and_resumable() {
        let log = EventLog::default();
        let mut w = log.watch();
        log.push(started());
        log.push(case_started("hi"));
        assert!(w.has_changed().unwrap());
        assert_eq!(*w.borrow_and_update(), 2);
        let after = log.after(1);
        assert_eq!(after.len(), 1);
        let e = &after[0];
        assert_eq!((e.id, &e.event), (2, &case_started("hi")));
        assert!(log.after(2).is_empty());
        assert!(log.after(99).is_empty());
    }

    #[test]
    fn nothing_is_added_after_done() {
        let log = EventLog::default();
        log.push(started());
        let record = crate::store::RunRecord::for_test("r1", RunKind::Chaos, RunStatus::Cancelled);
        log.push(RunEvent::Done(Box::new(record)));
        let w = log.watch();
        log.push(case_started("hi"));
        assert!(log.ended(), "done stays the last event");
        assert!(
            log.after(2).is_empty(),
            "a follower that had done waits for nothing"
        );
        assert!(!w.has_changed().unwrap(), "and is not woken for nothing");
    }
}
