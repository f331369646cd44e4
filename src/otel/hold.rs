//! The exchanges of cases under way, held by the export task until their run ends (a
//! case's span, its parent, is made only then, with its verdict): prepared spans, never the
//! exchanges or bodies they were read from, bounded by count and by bytes. What finds no
//! room is refused (the task drops it and counts it), so a long run on a shared daemon
//! costs at most the bound.

use std::collections::HashMap;

use super::exchange_span::Prepared;

/// Held spans, at most.
pub(super) const MAX_HELD: usize = 100_000;

/// Bytes of held spans, at most: about 50,000 exchanges without content, or 500 with
/// content (32 KiB of each body at most).
pub(super) const MAX_HELD_BYTES: usize = 64 << 20;

/// Spans held by case trace id.
pub(super) struct Hold {
    by_trace: HashMap<String, Vec<Prepared>>,
    count: usize,
    bytes: usize,
    max_count: usize,
    max_bytes: usize,
}

impl Default for Hold {
    fn default() -> Self {
        Hold::new(MAX_HELD, MAX_HELD_BYTES)
    }
}

impl Hold {
    pub(super) fn new(max_count: usize, max_bytes: usize) -> Hold {
        Hold {
            by_trace: HashMap::new(),
            count: 0,
            bytes: 0,
            max_count,
            max_bytes,
        }
    }

    /// Holds `span` for the case of `trace`; false (and `span` dropped) when the bound has
    /// no room.
    pub(super) fn put(&mut self, trace: &str, span: Prepared) -> bool {
        if self.count >= self.max_count || self.bytes + span.weight > self.max_bytes {
            return false;
        }
        self.count += 1;
        self.bytes += span.weight;
        match self.by_trace.get_mut(trace) {
            Some(list) => list.push(span),
            None => {
                self.by_trace.insert(trace.to_string(), vec![span]);
            }
        }
        true
    }

    /// What is held for the case of `trace`, released.
    pub(super) fn take(&mut self, trace: &str) -> Vec<Prepared> {
        let list = self.by_trace.remove(trace).unwrap_or_default();
        self.release(&list);
        list
    }

    /// Everything held, released.
    pub(super) fn drain(&mut self) -> Vec<Prepared> {
        let all: Vec<Prepared> = std::mem::take(&mut self.by_trace)
            .into_values()
            .flatten()
            .collect();
        (self.count, self.bytes) = (0, 0);
        all
    }

    fn release(&mut self, list: &[Prepared]) {
        self.count -= list.len();
        self.bytes -= list.iter().map(|p| p.weight).sum::<usize>();
    }

    /// Spans and bytes held now.
    pub(super) fn size(&self) -> (usize, usize) {
        (self.count, self.bytes)
    }
}

#[cfg(test)]
#[path = "hold_tests.rs"]
mod tests;
