//! What a run's report must say of its agent or its pool, each thing once, gathered from
//! the tasks that notice it.

use std::sync::Mutex;

/// Sayings for the report, without repeats, taken once at the run's end.
#[derive(Debug, Default)]
pub struct Notes(Mutex<Vec<String>>);

impl Notes {
    /// Adds `what`, unless it is already there.
    pub fn add(&self, what: String) {
        let mut notes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !notes.contains(&what) {
            notes.push(what);
        }
    }

    /// What was added so far, taken.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
