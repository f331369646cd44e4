//! The writer's chores between batches, and when they are due: copying the `-wal` into the
//! database file (a checkpoint) and marking the runs of processes that died `interrupted`
//! (a sweep). Time is the writer's clock, passed in as time since it started, so the rules
//! are tested without waiting.
//!
//! Checkpoints: SQLite copies the WAL into the database itself only every 1,000 pages, and
//! the last connection to close is the store's read-only one, which cannot, so a small
//! store lived in its `-wal` for good. The writer copies it `PASSIVE`ly (never waits for
//! another process's readers or writer, never blocks them) once it has been idle for
//! `IDLE` after writing, or `AT_MOST` after the first write it has not copied while writes
//! keep coming; on a clean stop it copies all and empties the file (`TRUNCATE`).

use std::time::Duration;

use rusqlite::Connection;

/// How often a live process looks for runs whose process died.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// A writer this long without a write copies what it wrote into the database file.
pub const IDLE: Duration = Duration::from_secs(1);
/// A writer that keeps writing copies at least this often.
pub const AT_MOST: Duration = Duration::from_secs(30);

/// What is due now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Due {
    pub sweep: bool,
    pub checkpoint: bool,
}

#[derive(Debug, Default)]
pub struct Upkeep {
    last_sweep: Duration,
    sweep_asked: bool,
    /// The first write not yet copied into the database file, and the last write.
    dirty: Option<(Duration, Duration)>,
}

impl Upkeep {
    /// The writer committed a transaction at `now`.
    pub fn wrote(&mut self, now: Duration) {
        let first = self.dirty.map_or(now, |(first, _)| first);
        self.dirty = Some((first, now));
    }

    /// A reader saw a run whose process died: sweep at once.
    pub fn ask_sweep(&mut self) {
        self.sweep_asked = true;
    }

    /// The chores due at `now`, counted as done.
    pub fn due(&mut self, now: Duration) -> Due {
        let sweep = self.sweep_asked || now >= self.last_sweep + SWEEP_EVERY;
        if sweep {
            (self.last_sweep, self.sweep_asked) = (now, false);
        }
        let checkpoint = self
            .dirty
            .is_some_and(|(first, last)| now >= last + IDLE || now >= first + AT_MOST);
        if checkpoint {
            self.dirty = None;
        }
        Due { sweep, checkpoint }
    }

    /// How long the writer may wait for an op before a chore is due.
    pub fn wait(&self, now: Duration) -> Duration {
        let mut next = self.last_sweep + SWEEP_EVERY;
        if let Some((first, last)) = self.dirty {
            next = next.min(last + IDLE).min(first + AT_MOST);
        }
        next.saturating_sub(now)
    }
}

/// `PRAGMA wal_checkpoint(MODE)`: `Ok(true)` when every frame was copied.
pub fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<bool> {
    // Its row: busy (another connection was in the way), frames in the WAL, frames copied.
    let (busy, log, copied): (i64, i64, i64) =
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    Ok(busy == 0 && log == copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_checkpoint_follows_a_second_without_writes_and_never_an_idle_clean_writer() {
        let mut u = Upkeep::default();
        assert!(!u.due(5 * S).checkpoint, "nothing written");
        u.wrote(5 * S);
        assert_eq!(u.wait(5 * S), IDLE);
        assert!(!u.due(5 * S + 999 * MS).checkpoint);
        u.wrote(5 * S + 999 * MS);
        assert!(!u.due(6 * S + 500 * MS).checkpoint, "written 0.5 s ago");
        assert!(u.due(6 * S + 999 * MS).checkpoint);
        assert!(
            !u.due(60 * S).checkpoint,
            "done once; nothing written since"
        );
    }

    #[test]
    fn a_writer_that_never_pauses_checkpoints_every_30_s() {
        let mut u = Upkeep::default();
        let mut copies = vec![];
        for ms in (0..65_000).step_by(100) {
            let now = ms * MS;
            u.wrote(now);
            if u.due(now).checkpoint {
                copies.push(now);
            }
        }
        assert_eq!(copies, [30 * S, 60 * S + 100 * MS]);
    }

    #[test]
    fn sweeps_come_every_2_s_or_at_once_when_asked() {
        let mut u = Upkeep::default();
        assert_eq!(u.wait(Duration::ZERO), SWEEP_EVERY);
        assert!(!u.due(S).sweep);
        assert_eq!(u.wait(S), S);
        assert!(u.due(2 * S).sweep);
        assert!(!u.due(3 * S).sweep);
        u.ask_sweep();
        assert!(u.due(3 * S).sweep);
        assert!(!u.due(4 * S).sweep, "the next is 2 s after the asked one");
        assert!(u.due(5 * S).sweep);
    }
}
