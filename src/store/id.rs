//! Run ids: `YYYYMMDD-HHMMSS-xxxxxx` (UTC start time, then 24 random bits). They sort by
//! start second as plain strings (`ls data_dir/runs` is chronological), a person can read
//! and type them, and two processes starting runs in the same second still differ
//! (a UUID would be unique but neither readable nor sortable). No clock
//! monotonicity is assumed: an id is unique, its order within one second is arbitrary
//! (`list` orders by the start time in milliseconds, then the id).

use std::fmt;
use std::sync::Arc;

use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

/// A run's id; cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(Arc<str>);

impl RunId {
    /// A new id for a run starting at `unix_ms`: never one this process has given in that
    /// second (24 random bits alone meet again among a few thousand runs of one second, as
    /// a bulk import or `examples/seed_runs.rs` starts them).
    pub fn new(unix_ms: i64) -> RunId {
        // The ids given in the last few seconds used, by second: runs of several seconds
        // interleave (an import of old runs while live ones start), so one second's set is
        // kept while another's is used.
        type Given = std::collections::BTreeMap<String, std::collections::HashSet<String>>;
        static GIVEN: std::sync::Mutex<Given> = std::sync::Mutex::new(Given::new());
        const SECONDS_KEPT: usize = 64;
        let second = stamp(unix_ms);
        let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
        let ids = given.entry(second.clone()).or_default();
        let id = loop {
            let id = format!("{second}-{}", random_hex(3));
            if ids.insert(id.clone()) {
                break id;
            }
        };
        if given.len() > SECONDS_KEPT {
            // The earliest second other than this one: ids are rarely made for old seconds.
            let oldest = given.keys().find(|k| **k != second).cloned();
            if let Some(k) = oldest {
                given.remove(&k);
            }
        }
        RunId(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for RunId {
    fn from(s: &str) -> RunId {
        RunId(s.into())
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `YYYYMMDD-HHMMSS` in UTC.
pub fn stamp(unix_ms: i64) -> String {
    utc(
        unix_ms,
        format_description!("[year][month][day]-[hour][minute][second]"),
    )
}

/// `YYYY-MM-DD HH:MM:SS` UTC, for tables.
pub fn readable(unix_ms: i64) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    utc(unix_ms, format)
}

/// `unix_ms` in UTC as `format` says (the epoch for a time out of range).
fn utc(unix_ms: i64, format: &[BorrowedFormatItem<'_>]) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(unix_ms.div_euclid(1000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(format).unwrap_or_default()
}

/// `n` random bytes as hex; if the OS has no randomness to give, this process's id and
/// a counter (unique within the process, which is what a lock token needs most).
pub fn random_hex(n: usize) -> String {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut bytes = vec![0u8; n];
    if SystemRandom::new().fill(&mut bytes).is_err() {
        let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mixed = std::process::id().rotate_left(16) ^ count;
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (mixed >> ((i % 4) * 8)) as u8;
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, in unix milliseconds, as the store keeps times.
pub fn now_ms() -> i64 {
    i64::try_from(crate::exchange::now_unix_ms()).unwrap_or(i64::MAX)
}

/// A run's start time: now, but always later than the previous run this process started,
/// so that `list` shows this process's runs in the order they began even within one
/// millisecond.
pub fn start_ms() -> i64 {
    static LAST: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    let now = now_ms();
    let prev = LAST
        .fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |last| Some(now.max(last + 1)),
        )
        .unwrap_or(now);
    now.max(prev + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_the_utc_start_time_and_sort_by_it() {
        // 2026-11-24 00:45:12 UTC
        let a = RunId::new(1_795_481_112_000);
        assert!(a.as_str().starts_with("20261124-004512-"), "{a}");
        assert_eq!(a.as_str().len(), "20261124-004512-3f9a1c".len());
        let b = RunId::new(1_795_481_113_000);
        assert!(a < b, "a later second sorts after");
        assert_ne!(RunId::new(0), RunId::new(0), "random suffix");
        assert_eq!(readable(1_795_481_112_000), "2026-11-24 00:45:12");
        assert_eq!(stamp(1_795_481_112_999), "20261124-004512");
        assert_eq!(stamp(-1), "19691231-235959");
    }

    /// Runs started by the thousand in one second (a bulk import) never share an id.
    #[test]
    fn ids_of_one_second_never_repeat() {
        let ids: std::collections::HashSet<RunId> =
            (0..20_000).map(|_| RunId::new(1_795_481_114_000)).collect();
        assert_eq!(ids.len(), 20_000);
    }
}
