//! Crashes: a panicking input is saved under the crash folder (`FUZZ_CRASH_DIR`, else
//! `$CARGO_TARGET_DIR/fuzz-crashes`, else `target/fuzz-crashes`) as `<target>-<id>.bin`,
//! with a `.txt` beside it holding the panic, the seed and the command that replays it:
//! `FUZZ_REPLAY=<file> FUZZ_REPLAY_SEED=<n>` runs that one input through its target with
//! the same random choices (chunk boundaries, modes) it had.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::mutate::Rng;

/// Distinct crashes saved per target (by their message's first line, digits aside); the
/// others are counted.
const MAX_SAVED: usize = 20;

/// One panicking execution.
pub struct Crash {
    pub input: Vec<u8>,
    pub message: String,
    pub seed: u64,
    pub worker: u64,
    pub execution: u64,
    /// The seed of the random choices `check` made on this input.
    pub inner: u64,
}

#[derive(Default)]
pub struct Crashes {
    inner: Mutex<Found>,
}

#[derive(Default)]
struct Found {
    count: usize,
    /// The first crash of each kind, with the file it was saved to.
    distinct: Vec<(String, Crash, String)>,
}

impl Crashes {
    pub fn add(&self, target: &str, crash: Crash) {
        let mut found = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        found.count += 1;
        // The first line, digits aside: the same assertion on another input.
        let kind: String = crash
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect();
        if found.distinct.len() < MAX_SAVED && !found.distinct.iter().any(|(k, ..)| *k == kind) {
            let saved = save(target, &crash);
            found.distinct.push((kind, crash, saved));
        }
    }

    pub fn count(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).count
    }

    /// Fails the test naming each distinct crash and its file, the first input escaped.
    pub fn fail_if_any(&self, target: &str, done: u64) {
        let found = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, first, _)) = found.distinct.first() else {
            return;
        };
        let files: Vec<String> = found
            .distinct
            .iter()
            .map(|(_, c, file)| format!("  {file}: {}", clip(&c.message, 300)))
            .collect();
        panic!(
            "fuzz {target}: {} crashes ({} distinct) in {done} executions (FUZZ_SEED={})\n{}\n\
             first input: {}",
            found.count,
            found.distinct.len(),
            first.seed,
            files.join("\n"),
            clip(
                &String::from_utf8_lossy(&first.input)
                    .escape_debug()
                    .to_string(),
                4000
            )
        );
    }
}

fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FUZZ_CRASH_DIR") {
        return PathBuf::from(d);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("fuzz-crashes")
}

/// Writes the input and its note; returns the input's path (or why it could not).
fn save(target: &str, c: &Crash) -> String {
    let dir = dir();
    let bin = dir.join(format!("{target}-{:016x}.bin", c.inner));
    let replay = format!(
        "FUZZ_REPLAY={} FUZZ_REPLAY_SEED={} cargo test --release --test fuzz -- --exact \
         {target} --nocapture",
        bin.display(),
        c.inner
    );
    let note = format!(
        "target: {target}\nFUZZ_SEED: {}\nworker: {}\nexecution: {} (of that worker)\n\
         panic: {}\nreplay: {replay}\n",
        c.seed, c.worker, c.execution, c.message
    );
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&bin, &c.input))
        .and_then(|()| std::fs::write(bin.with_extension("txt"), note));
    match written {
        Ok(()) => {
            eprintln!(
                "fuzz {target}: crash saved to {}\n  {replay}",
                bin.display()
            );
            bin.display().to_string()
        }
        Err(e) => format!("(not saved: {}: {e})", dir.display()),
    }
}

/// With `FUZZ_REPLAY` naming one of `target`'s saved inputs: runs `check` on it once with
/// `FUZZ_REPLAY_SEED`'s random choices. `None` when not replaying; `Some(0)` when the file
/// is another target's (this one then runs nothing).
pub fn replay(target: &str, check: &mut dyn FnMut(&mut Rng, &[u8])) -> Option<u64> {
    let file = PathBuf::from(std::env::var_os("FUZZ_REPLAY")?);
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    if !name.starts_with(&format!("{target}-")) {
        return Some(0);
    }
    let input = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let seed = std::env::var("FUZZ_REPLAY_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1);
    check(&mut Rng::new(seed), &input);
    eprintln!("fuzz {target}: {} replayed, no panic", file.display());
    Some(1)
}
