//! A run's event log: what `/v1/runs/{id}/events` streams (case started and finished,
//! phase scores, cell verdicts, done; nothing after done). Events are numbered from 1 and
//! kept for the run's life, so a follower that reconnects with `Last-Event-ID` gets
//! exactly what it missed; followers wait on a watch of the last id, so a slow or gone
//! follower never holds up the run.

use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::watch;

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// 1, 2, … in the order they happened.
    pub id: u64,
    /// `queued`, `started`, `case_started`, `case`, `phase`, `cell`, `done`.
    pub kind: &'static str,
    pub data: Value,
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
    pub fn push(&self, kind: &'static str, data: Value) {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if events.last().is_some_and(|e| e.kind == "done") {
            return;
        }
        let id = events.len() as u64 + 1;
        events.push(Event { id, kind, data });
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
        events.last().is_some_and(|e| e.kind == "done")
    }

    /// Changes whenever an event is pushed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_numbered_and_resumable() {
        let log = EventLog::default();
        let mut w = log.watch();
        log.push("started", json!({}));
        log.push("case", json!({"n": 1}));
        assert!(w.has_changed().unwrap());
        assert_eq!(*w.borrow_and_update(), 2);
        let after = log.after(1);
        assert_eq!(after.len(), 1);
        let e = &after[0];
        assert_eq!((e.id, e.kind, &e.data), (2, "case", &json!({"n": 1})));
        assert!(log.after(2).is_empty());
        assert!(log.after(99).is_empty());
    }

    #[test]
    fn nothing_is_added_after_done() {
        let log = EventLog::default();
        log.push("started", json!({}));
        log.push("done", json!({"status": "cancelled"}));
        let w = log.watch();
        log.push("case", json!({"n": 1}));
        assert!(log.ended(), "done stays the last event");
        assert!(
            log.after(2).is_empty(),
            "a follower that had done waits for nothing"
        );
        assert!(!w.has_changed().unwrap(), "and is not woken for nothing");
    }
}
