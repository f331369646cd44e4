//! A rug pull's memory of MCP sessions: each session's listings are counted on their own
//! (a session's first `after_calls` listings are clean, then its tool list changes), and
//! whether the session was told (`notifications/tools/list_changed`). Sessionless traffic
//! (MCP 2026-07-28 on) is counted per rule. At most `MAX_SESSIONS` are kept per rule; past
//! that, new sessions' listings are counted per rule and they are not told.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::mcp::{Notice, Told};

const MAX_SESSIONS: usize = 10_000;

#[derive(Debug, Default)]
pub(super) struct Sessions(Mutex<HashMap<String, Session>>);

#[derive(Debug, Default)]
struct Session {
    listings: u64,
    told: Told,
}

impl Sessions {
    /// Counts a listing of `session`: how many it has had, this one included (`None`: the
    /// session is not kept).
    pub(super) fn listed(&self, session: &str) -> Option<u64> {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !all.contains_key(session) && all.len() >= MAX_SESSIONS {
            return None;
        }
        let s = all.entry(session.to_string()).or_default();
        s.listings += 1;
        Some(s.listings)
    }

    /// A claim on telling `session`, when it has listed at least `after` times and nobody
    /// told it or is telling it (`None` also for a session not kept).
    pub(super) fn to_tell(&self, session: &str, after: u64) -> Option<std::sync::Arc<Notice>> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let s = all.get(session)?;
        (s.listings >= after)
            .then(|| Notice::claim(&s.told))
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_session_counts_its_own_listings_and_is_told_once() {
        let s = Sessions::default();
        assert_eq!(s.listed("a"), Some(1));
        assert_eq!(s.listed("b"), Some(1));
        assert_eq!(s.listed("a"), Some(2));
        let notice = s.to_tell("a", 1).expect("a listed: to be told");
        assert!(s.to_tell("a", 1).is_none(), "one call at a time tells a");
        notice.sent();
        drop(notice);
        assert!(s.to_tell("a", 1).is_none(), "told once");
        assert!(s.to_tell("b", 2).is_none(), "b listed once");
        assert!(s.to_tell("c", 1).is_none(), "c never listed");
    }
}
