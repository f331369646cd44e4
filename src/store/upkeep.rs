//! The writer's chores between batches, and when they are due: copying the `-wal` into the
//! database file (a checkpoint). Time is the writer's clock, passed in as time since it
//! started, so the rules are tested without waiting.
//!
//! Checkpoints: SQLite copies the WAL into the database itself only every 1,000 pages, and
//! the last connection to close is the store's read-only one, which cannot, so a small
//! store lived in its `-wal` for good. The writer copies it `PASSIVE`ly (never waits for
//! another process's readers or writer, never blocks them) once it has been idle for
//! `IDLE` after writing, or `AT_MOST` after the first write it has not copied while writes
//! keep coming; on a clean stop it copies all and empties the file (`TRUNCATE`).

use std::time::Duration;

use rusqlite::Connection;

/// A writer this long without a write copies what it wrote into the database file.
pub const IDLE: Duration = Duration::from_secs(1);
/// A writer that keeps writing copies at least this often.
pub const AT_MOST: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
pub struct Upkeep {
    /// The first write not yet copied into the database file, and the last write.
    dirty: Option<(Duration, Duration)>,
}

impl Upkeep {
    /// The writer committed a transaction at `now`.
    pub fn wrote(&mut self, now: Duration) {
        let first = self.dirty.map_or(now, |(first, _)| first);
        self.dirty = Some((first, now));
    }

    /// Whether a checkpoint is due at `now`, counted as done.
    pub fn due(&mut self, now: Duration) -> bool {
        let checkpoint = self
            .dirty
            .is_some_and(|(first, last)| now >= last + IDLE || now >= first + AT_MOST);
        if checkpoint {
            self.dirty = None;
        }
        checkpoint
    }

    /// How long the writer may wait for an op before a chore is due (`MAX`: none is).
    pub fn wait(&self, now: Duration) -> Duration {
        self.dirty.map_or(Duration::MAX, |(first, last)| {
            (last + IDLE).min(first + AT_MOST).saturating_sub(now)
        })
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
        assert!(!u.due(5 * S), "nothing written");
        u.wrote(5 * S);
        assert_eq!(u.wait(5 * S), IDLE);
        assert!(!u.due(5 * S + 999 * MS));
        u.wrote(5 * S + 999 * MS);
        assert!(!u.due(6 * S + 500 * MS), "written 0.5 s ago");
        assert!(u.due(6 * S + 999 * MS));
        assert!(!u.due(60 * S), "done once; nothing written since");
    }

    #[test]
    fn a_writer_that_never_pauses_checkpoints_every_30_s() {
        let mut u = Upkeep::default();
        let mut copies = vec![];
        for ms in (0..65_000).step_by(100) {
            let now = ms * MS;
            u.wrote(now);
            if u.due(now) {
                copies.push(now);
            }
        }
        assert_eq!(copies, [30 * S, 60 * S + 100 * MS]);
    }
}
