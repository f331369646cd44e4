//! Reading the journal: the newest exchanges, those after a sequence number (a live
//! recording's cursor), a case's slice by id window or trace id, and waiting for news.
//! The slices clone `Arc`s under the list lock and return; none holds it past the call.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::watch;

use super::Journal;
use crate::exchange::Exchange;

/// Exchanges recorded after a sequence number (`Journal::since`).
#[derive(Debug, Default)]
pub struct Since {
    /// Oldest first.
    pub exchanges: Vec<Arc<Exchange>>,
    /// The sequence number of the newest exchange recorded so far: ask for `since(last)`
    /// next time.
    pub last: u64,
    /// How many exchanges after the asked-for number were evicted before this call.
    pub lost: u64,
}

impl Journal {
    /// A receiver of the count of exchanges recorded so far (changes on every record).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.recorded.subscribe()
    }

    /// Waits until at least `n` exchanges have ever been recorded.
    pub async fn wait_for(&self, n: u64) {
        let mut rx = self.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we hold it.
        let _ = rx.wait_for(|count| *count >= n).await;
    }

    /// The newest `limit` exchanges, oldest first.
    pub fn recent(&self, limit: usize) -> Vec<Arc<Exchange>> {
        let list = self.lock();
        list.items
            .iter()
            .skip(list.items.len().saturating_sub(limit))
            .cloned()
            .collect()
    }

    /// The sequence number of the newest exchange recorded so far (0 before any): pass it
    /// to `since` to get what comes after.
    pub fn sequence(&self) -> u64 {
        self.lock().pushed
    }

    /// The exchanges recorded after sequence number `seq`, oldest first, and how many of
    /// them were already evicted (a reader that fell behind a full journal).
    pub fn since(&self, seq: u64) -> Since {
        let list = self.lock();
        let first_kept = list.pushed - list.items.len() as u64 + 1;
        let from = seq + 1;
        Since {
            exchanges: list
                .items
                .iter()
                .skip(from.saturating_sub(first_kept) as usize)
                .cloned()
                .collect(),
            last: list.pushed.max(seq),
            lost: first_kept.saturating_sub(from),
        }
    }

    /// Every retained exchange, oldest first.
    pub fn all(&self) -> Vec<Arc<Exchange>> {
        self.lock().items.iter().cloned().collect()
    }

    /// Exchanges whose ids lie in `first..=last` (a case's window under exclusive
    /// attribution: ids are given as requests arrive).
    pub fn slice(&self, first: u64, last: u64) -> Vec<Arc<Exchange>> {
        self.lock()
            .items
            .iter()
            .filter(|e| (first..=last).contains(&e.id))
            .cloned()
            .collect()
    }

    /// Exchanges carrying `trace_id` (header attribution).
    pub fn by_trace(&self, trace_id: &str) -> Vec<Arc<Exchange>> {
        self.by_trace_from(trace_id, 0)
    }

    /// Exchanges carrying `trace_id` whose ids are `first` or later: a case's, when an
    /// earlier run with the same seed sent the same trace id.
    pub fn by_trace_from(&self, trace_id: &str, first: u64) -> Vec<Arc<Exchange>> {
        self.lock()
            .items
            .iter()
            .filter(|e| e.id >= first && e.trace_id.as_deref() == Some(trace_id))
            .cloned()
            .collect()
    }

    /// The id the next request will get: a case's window starts here.
    pub fn peek_next_id(&self) -> u64 {
        self.inner.next_id.load(Ordering::Relaxed)
    }

    /// How many exchanges were dropped because the journal was full.
    pub fn evicted(&self) -> u64 {
        self.inner.evicted.load(Ordering::Relaxed)
    }
}
