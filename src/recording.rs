//! Journal traffic written as tapes: `tape_of` turns recorded (redacted) exchanges and their
//! kept bodies into a HAR tape, and `Recording` (`serve --record`, `record`) writes the
//! proxy's live traffic to a tape as it comes, saved whole at most once a second and when
//! it stops. It takes exchanges by the journal's sequence numbers, so each is written once;
//! one the journal evicted before it was read is counted and logged as lost. A failed save
//! is logged and retried on the next tick; a tape that would pass the size a tape reader
//! loads is closed and the recording goes on in `<name>-2.har`, `-3`, ... Reads the journal
//! only; the proxy and runs do not know it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::exchange::Exchange;
use crate::journal::Journal;
use crate::tape::har::Entry;
use crate::tape::{Har, write};

/// How often a live recording's tape is saved while traffic comes.
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// The largest tape file a recording writes: the tape reader's limit (`MAX_TAPE` in
/// `tape/read.rs`), so every file written can be read back.
pub const MAX_TAPE_BYTES: u64 = crate::tape::MAX_TAPE;

/// The exchanges as one tape; `case` names the case on every entry. CONNECT records (a
/// tunnel, not a request) and relayed TCP connections are left out.
pub fn tape_of(journal: &Journal, exchanges: &[Arc<Exchange>], case: Option<&str>) -> Har {
    let mut har = write::empty(None);
    har.log.entries = exchanges
        .iter()
        .filter(|e| e.request.method != "CONNECT" && e.route != crate::exchange::Route::Tcp)
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

/// A live recording into tape files (one, unless it rolls over).
pub struct Recording {
    /// The first tape file.
    pub file: PathBuf,
    stop: CancellationToken,
    task: JoinHandle<Result<Summary, RecordingError>>,
}

/// Why a recording could not start or its tapes were not all saved.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The tapes' folder, or the first tape, could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The recording's task ended without saying how (it panicked or was cancelled).
    #[error("the recording stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
    /// The last save of these tapes failed, each as `file: why`.
    #[error("{}", .0.join("; "))]
    Unsaved(Vec<String>),
}

/// What a finished recording wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Entries written, over all files.
    pub entries: usize,
    /// The tape files, in order.
    pub files: Vec<PathBuf>,
    /// Exchanges the journal evicted before the recording read them (not on any tape).
    pub lost: u64,
}

impl Recording {
    /// Starts keeping bodies and writing every exchange recorded from now on to a new
    /// tape in `dir` (created if needed): `flakestorm-<UTC time, ms>.har`.
    pub fn start(journal: Journal, dir: &Path) -> Result<Recording, RecordingError> {
        Self::start_limited(journal, dir, MAX_TAPE_BYTES)
    }

    /// `start`, rolling over to a new file before a tape passes `max_bytes` (tests use a
    /// small limit).
    pub fn start_limited(
        journal: Journal,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<Recording, RecordingError> {
        let failed = |path: &Path| {
            let path = path.to_path_buf();
            |source| RecordingError::Write { path, source }
        };
        crate::files::create_private_dir(dir).map_err(failed(dir))?;
        let stamp: String = write::iso8601(crate::exchange::now_unix_ms())
            .chars()
            .filter(|c| !matches!(c, '-' | ':'))
            .collect();
        let stem = dir.join(format!("flakestorm-{stamp}"));
        let tape = Tape::new(with_har(&stem, ""));
        write::save(&tape.har, &tape.file).map_err(failed(&tape.file))?;
        journal.set_keep_bodies(true);
        // Taken here, not in the task: what is recorded before the task first runs is ours
        // (and wakes it).
        let rx = journal.subscribe();
        let seq = journal.sequence();
        let file = tape.file.clone();
        let recorder = Recorder {
            base: pretty_len(&tape.har),
            files: vec![file.clone()],
            journal,
            stem,
            max_bytes,
            tape,
            closed: vec![],
            seq,
            entries: 0,
            lost: 0,
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(record(recorder, rx, stop.clone()));
        Ok(Recording { file, stop, task })
    }

    /// Stops, saves the tape a last time; the number of entries written.
    pub async fn finish(self) -> Result<usize, RecordingError> {
        self.stop().await.map(|s| s.entries)
    }

    /// Stops, saves the tapes a last time; what was written, or why a tape could not be
    /// saved. Exchanges lost to the journal's eviction are logged here too.
    pub async fn stop(self) -> Result<Summary, RecordingError> {
        self.stop.cancel();
        self.task.await?
    }
}

/// One tape file being written.
struct Tape {
    file: PathBuf,
    har: Har,
    /// An upper bound of the file's size once saved.
    bytes: u64,
    /// Has entries the file does not have yet.
    dirty: bool,
    /// The last save failed (logged once, until one succeeds).
    failing: bool,
}

impl Tape {
    fn new(file: PathBuf) -> Tape {
        let har = write::empty(Some("recorded by flakestorm (serve --record)".into()));
        let bytes = pretty_len(&har);
        Tape {
            file,
            har,
            bytes,
            dirty: false,
            failing: false,
        }
    }

    /// Saves if there is news; the error (logged on the first of a run of failures).
    fn save(&mut self) -> Result<(), String> {
        if !self.dirty {
            return Ok(());
        }
        match write::save(&self.har, &self.file) {
            Ok(()) => {
                if self.failing {
                    tracing::info!(file = %self.file.display(), "the recording's tape is saved again");
                }
                self.dirty = false;
                self.failing = false;
                Ok(())
            }
            Err(e) => {
                let e = format!("{}: {e}", self.file.display());
                if !self.failing {
                    tracing::error!(
                        file = %self.file.display(),
                        "saving the recording failed ({e}); the proxy goes on, and the save is retried every second"
                    );
                }
                self.failing = true;
                Err(e)
            }
        }
    }
}

/// `stem` + `suffix` + `.har` (the stem holds dots, so not `with_extension`).
fn with_har(stem: &Path, suffix: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(format!("{suffix}.har"));
    name.into()
}

fn pretty_len(har: &Har) -> u64 {
    serde_json::to_vec_pretty(har).map_or(0, |v| v.len() as u64)
}

/// An upper bound of what `entry` adds to a saved (pretty-printed) tape: its own text, each
/// line indented three levels deeper, and the separator.
fn entry_len(entry: &Entry) -> u64 {
    let text = serde_json::to_vec_pretty(entry).unwrap_or_default();
    let lines = text.iter().filter(|b| **b == b'\n').count() + 1;
    (text.len() + 6 * lines + 8) as u64
}

struct Recorder {
    journal: Journal,
    /// The first file's path without `.har`; rolled-over files add `-2`, `-3`, ...
    stem: PathBuf,
    max_bytes: u64,
    /// The size of a tape with no entries.
    base: u64,
    tape: Tape,
    /// Full tapes whose last save failed, retried every tick.
    closed: Vec<Tape>,
    files: Vec<PathBuf>,
    /// The journal sequence number of the last exchange taken.
    seq: u64,
    entries: usize,
    lost: u64,
}

impl Recorder {
    /// Adds what the journal recorded since last time.
    fn take(&mut self) {
        let since = self.journal.since(self.seq);
        self.seq = since.last;
        if since.lost > 0 {
            self.lost += since.lost;
            tracing::warn!(
                "the recording lost {} exchange(s) ({} in all): the journal evicted them before they were written; raise journal.capacity",
                since.lost,
                self.lost
            );
        }
        for entry in tape_of(&self.journal, &since.exchanges, None).log.entries {
            self.add(entry);
        }
    }

    fn add(&mut self, entry: Entry) {
        let len = entry_len(&entry);
        if !self.tape.har.log.entries.is_empty() && self.tape.bytes + len > self.max_bytes {
            self.roll();
        }
        if self.base + len > self.max_bytes {
            tracing::warn!(
                file = %self.tape.file.display(),
                "one exchange alone makes a tape of over {} bytes; that tape cannot be read back",
                self.max_bytes
            );
        }
        self.tape.bytes += len;
        self.tape.dirty = true;
        self.tape.har.log.entries.push(entry);
        self.entries += 1;
    }

    /// Closes the current tape (saved now, or retried later) and starts the next file.
    fn roll(&mut self) {
        let next = with_har(&self.stem, &format!("-{}", self.files.len() + 1));
        tracing::info!(
            full = %self.tape.file.display(),
            next = %next.display(),
            "the recording's tape reached the {}-byte tape limit; recording goes on in the next file",
            self.max_bytes
        );
        self.files.push(next.clone());
        let mut full = std::mem::replace(&mut self.tape, Tape::new(next));
        if full.save().is_err() {
            self.closed.push(full);
        }
    }

    /// Saves every tape with news; the errors.
    fn save(&mut self) -> Vec<String> {
        let mut errors = vec![];
        self.closed.retain_mut(|t| match t.save() {
            Ok(()) => false,
            Err(e) => {
                errors.push(e);
                true
            }
        });
        if let Err(e) = self.tape.save() {
            errors.push(e);
        }
        errors
    }
}

async fn record(
    mut rec: Recorder,
    mut rx: watch::Receiver<u64>,
    stop: CancellationToken,
) -> Result<Summary, RecordingError> {
    rec.take();
    let mut tick = tokio::time::interval(SAVE_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = rx.changed() => {
                if changed.is_err() {
                    break;
                }
                rx.borrow_and_update();
                rec.take();
            }
            _ = tick.tick() => {
                // Errors are logged by the tape and retried on the next tick.
                rec.save();
            }
        }
    }
    // What came in after the last change notice.
    rec.take();
    let errors = rec.save();
    if rec.lost > 0 {
        tracing::warn!(
            "the recording lost {} exchange(s) in all: the journal evicted them before they were written",
            rec.lost
        );
    }
    if !errors.is_empty() {
        return Err(RecordingError::Unsaved(errors));
    }
    Ok(Summary {
        entries: rec.entries,
        files: rec.files,
        lost: rec.lost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Target;
    use crate::exchange::tests_support::exchange;
    use crate::journal::Redactor;

    fn record_url(journal: &Journal, url: &str) {
        let mut ex = exchange(Target::Other, url)
            .method("GET")
            .response(200, &[])
            .build();
        ex.id = journal.next_id();
        journal.record(ex);
    }

    fn urls(file: &Path) -> Vec<String> {
        let har = crate::tape::read(file).unwrap_or_else(|e| panic!("{e}"));
        har.log.entries.into_iter().map(|e| e.request.url).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_exchange_of_concurrent_traffic_is_on_the_tape_exactly_once() {
        let journal = Journal::new(100_000, Redactor::default());
        let dir = tempfile::tempdir().unwrap();
        let rec = Recording::start(journal.clone(), dir.path()).unwrap();
        // Writers on their own threads, racing each other and the recorder.
        std::thread::scope(|s| {
            for t in 0..8 {
                let journal = &journal;
                s.spawn(move || {
                    for i in 0..1500 {
                        record_url(journal, &format!("http://h/{t}/{i}"));
                    }
                });
            }
        });
        let file = rec.file.clone();
        let summary = rec.stop().await.unwrap();
        assert_eq!((summary.entries, summary.lost), (12_000, 0));
        let mut got = urls(&file);
        got.sort();
        let mut want: Vec<String> = (0..8)
            .flat_map(|t| (0..1500).map(move |i| format!("http://h/{t}/{i}")))
            .collect();
        want.sort();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "an exchange is missing or written twice");
    }

    #[tokio::test]
    async fn exchanges_evicted_before_they_were_read_are_counted_as_lost() {
        let journal = Journal::new(2, Redactor::default());
        record_url(&journal, "http://h/before");
        let dir = tempfile::tempdir().unwrap();
        let rec = Recording::start(journal.clone(), dir.path()).unwrap();
        // The recorder cannot run between these (one thread, no await).
        for i in 1..=5 {
            record_url(&journal, &format!("http://h/{i}"));
        }
        let file = rec.file.clone();
        let summary = rec.stop().await.unwrap();
        assert_eq!((summary.entries, summary.lost), (2, 3));
        assert_eq!(urls(&file), ["http://h/4", "http://h/5"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_save_is_retried_and_the_recording_goes_on() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("tapes");
        let journal = Journal::new(100, Redactor::default());
        let rec = Recording::start(journal.clone(), &dir).unwrap();
        record_url(&journal, "http://h/1");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(urls(&rec.file), ["http://h/1"]);
        // The tapes folder replaced by a file: no save can succeed.
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "not a folder").unwrap();
        record_url(&journal, "http://h/2");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            !rec.task.is_finished(),
            "one failed save ended the recording"
        );
        std::fs::remove_file(&dir).unwrap();
        record_url(&journal, "http://h/3");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            urls(&rec.file),
            ["http://h/1", "http://h/2", "http://h/3"],
            "saved on a tick after the folder came back, before the recording stopped"
        );
        assert_eq!(rec.finish().await.unwrap(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_save_still_failing_at_the_end_is_the_result() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("tapes");
        let journal = Journal::new(100, Redactor::default());
        let rec = Recording::start(journal.clone(), &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "not a folder").unwrap();
        record_url(&journal, "http://h/1");
        let file = rec.file.clone();
        let err = rec.finish().await.unwrap_err().to_string();
        assert!(err.contains(&file.display().to_string()), "{err}");
    }

    #[tokio::test]
    async fn a_tape_past_the_size_limit_rolls_over_to_a_new_file() {
        const LIMIT: u64 = 12_000;
        let journal = Journal::new(1000, Redactor::default());
        let dir = tempfile::tempdir().unwrap();
        let rec = Recording::start_limited(journal.clone(), dir.path(), LIMIT).unwrap();
        let want: Vec<String> = (0..40)
            .map(|i| format!("http://h/{i}?pad={}", "x".repeat(200)))
            .collect();
        for (i, url) in want.iter().enumerate() {
            record_url(&journal, url);
            if i % 7 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let summary = rec.stop().await.unwrap();
        assert_eq!(summary.entries, 40);
        assert!(summary.files.len() >= 3, "{:?}", summary.files);
        let first = summary.files[0].to_string_lossy().into_owned();
        let second = summary.files[1].to_string_lossy().into_owned();
        assert_eq!(second, format!("{}-2.har", first.trim_end_matches(".har")));
        let mut got = vec![];
        for (i, f) in summary.files.iter().enumerate() {
            let size = std::fs::metadata(f).unwrap().len();
            assert!(size <= LIMIT, "{} is {size} bytes", f.display());
            // Nor far under it: the size estimate is close, files are not cut early.
            let last = i + 1 == summary.files.len();
            assert!(
                last || size > LIMIT * 3 / 4,
                "{} is {size} bytes",
                f.display()
            );
            let n = urls(f).len();
            assert!(n > 0, "{} is empty", f.display());
            got.extend(urls(f));
        }
        assert_eq!(got, want, "every exchange once, in order, over the files");
        let written = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(written, summary.files.len(), "no other file left behind");
    }

    #[tokio::test]
    async fn a_full_tape_that_failed_to_save_is_saved_once_it_can_be() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("tapes");
        let journal = Journal::new(100, Redactor::default());
        let rec = Recording::start_limited(journal.clone(), &dir, 3_000).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "not a folder").unwrap();
        for i in 0..8 {
            record_url(&journal, &format!("http://h/{i}"));
            tokio::task::yield_now().await;
        }
        std::fs::remove_file(&dir).unwrap();
        let summary = rec.stop().await.unwrap();
        assert!(summary.files.len() >= 2, "{:?}", summary.files);
        let got: Vec<String> = summary.files.iter().flat_map(|f| urls(f)).collect();
        let want: Vec<String> = (0..8).map(|i| format!("http://h/{i}")).collect();
        assert_eq!(got, want);
    }
}
