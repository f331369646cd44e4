//! Journal traffic written as tapes: `tape_of` turns recorded (redacted) exchanges and their
//! kept bodies into a HAR tape, and `Recording` (`serve --record`, `record`) writes the
//! proxy's live traffic to one tape as it comes, saved whole at most once a second and when
//! it stops. Reads the journal only; the proxy and runs do not know it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::exchange::Exchange;
use crate::journal::Journal;
use crate::tape::{Har, write};

/// How often a live recording's tape is saved while traffic comes.
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// The exchanges as one tape; `case` names the case on every entry. CONNECT records (a
/// tunnel, not a request) are left out.
pub fn tape_of(journal: &Journal, exchanges: &[Arc<Exchange>], case: Option<&str>) -> Har {
    let mut har = write::empty(None);
    har.log.entries = exchanges
        .iter()
        .filter(|e| e.request.method != "CONNECT")
        .map(|e| {
            let bodies = journal.bodies(e.id);
            let mut entry = write::entry(e, bodies.as_deref(), case);
            if bodies.is_none() {
                // A replay keys on the request body: say why it is missing.
                entry.comment = Some(format!(
                    "flakestorm: this exchange's bodies were not kept (recorded before bodies \
                     were kept, or dropped to keep the journal's bodies under {} MiB)",
                    crate::journal::MAX_KEPT_BODY_BYTES >> 20
                ));
            }
            entry
        })
        .collect();
    har
}

/// A live recording into one tape file.
pub struct Recording {
    pub file: PathBuf,
    stop: CancellationToken,
    task: JoinHandle<Result<usize, String>>,
}

impl Recording {
    /// Starts keeping bodies and writing every exchange recorded from now on to a new
    /// tape in `dir` (created if needed): `flakestorm-<UTC time, ms>.har`.
    pub fn start(journal: Journal, dir: &Path) -> Result<Recording, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let stamp: String = write::iso8601(crate::exchange::now_unix_ms())
            .chars()
            .filter(|c| !matches!(c, '-' | ':'))
            .collect();
        let file = dir.join(format!("flakestorm-{stamp}.har"));
        let har = write::empty(Some("recorded by flakestorm (serve --record)".into()));
        write::save(&har, &file).map_err(|e| format!("{}: {e}", file.display()))?;
        journal.set_keep_bodies(true);
        let stop = CancellationToken::new();
        let task = tokio::spawn(record(journal, file.clone(), har, stop.clone()));
        Ok(Recording { file, stop, task })
    }

    /// Stops, saves the tape a last time; the number of entries written.
    pub async fn finish(self) -> Result<usize, String> {
        self.stop.cancel();
        self.task
            .await
            .map_err(|e| format!("the recording stopped: {e}"))?
    }
}

async fn record(
    journal: Journal,
    file: PathBuf,
    mut har: Har,
    stop: CancellationToken,
) -> Result<usize, String> {
    let mut rx = journal.subscribe();
    let mut seen = *rx.borrow_and_update();
    let mut dirty = false;
    let mut tick = tokio::time::interval(SAVE_EVERY);
    let save = |har: &Har| write::save(har, &file).map_err(|e| format!("{}: {e}", file.display()));
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = rx.changed() => {
                if changed.is_err() {
                    break;
                }
                let now = *rx.borrow_and_update();
                // The newest `now - seen` exchanges are the ones recorded since last time
                // (past the journal's capacity, the oldest of them are gone).
                let fresh = journal.recent((now - seen) as usize);
                seen = now;
                let entries = tape_of(&journal, &fresh, None).log.entries;
                dirty |= !entries.is_empty();
                har.log.entries.extend(entries);
            }
            _ = tick.tick() => {
                if dirty {
                    save(&har)?;
                    dirty = false;
                }
            }
        }
    }
    // What came in after the last change notice.
    let now = *rx.borrow();
    if now > seen {
        let fresh = journal.recent((now - seen) as usize);
        har.log
            .entries
            .extend(tape_of(&journal, &fresh, None).log.entries);
    }
    save(&har)?;
    Ok(har.log.entries.len())
}
