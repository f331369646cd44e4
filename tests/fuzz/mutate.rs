//! A small structure-aware mutation fuzzer for the parsers that take untrusted bytes
//! (cargo-fuzz needs a nightly toolchain; this runs on stable, in the test command, bounded).
//!
//! Each target gets a seed corpus of valid inputs and a dictionary of tokens that matter to
//! its grammar; inputs are corpus entries with a few random edits (bit flips, tokens,
//! splices, cuts, repeats). Runs are deterministic for a seed: `FUZZ_SEED` picks it,
//! `FUZZ_SECS` runs each target for that long instead of its fixed number of executions
//! (scripts/fuzz.sh). A panic is reported with the input that caused it, escaped.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// xorshift64*: deterministic, good enough to pick edits.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// What one target fuzzes with.
pub struct Target<'a> {
    pub name: &'a str,
    pub corpus: Vec<Vec<u8>>,
    pub dictionary: &'a [&'a [u8]],
    /// Executions when `FUZZ_SECS` is not set (the test command's bounded run).
    pub runs: u64,
    /// Largest input produced.
    pub max_len: usize,
}

/// The seed (`FUZZ_SEED`, default fixed so a failure in CI reproduces locally).
pub fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_F1A4_E570_0000)
}

fn budget(runs: u64) -> (u64, Option<Duration>) {
    match std::env::var("FUZZ_SECS").ok().and_then(|s| s.parse().ok()) {
        Some(secs) => (u64::MAX, Some(Duration::from_secs(secs))),
        None => (runs, None),
    }
}

/// One mutated input from the corpus.
pub fn mutate(rng: &mut Rng, t: &Target) -> Vec<u8> {
    let mut data = t.corpus[rng.below(t.corpus.len())].clone();
    let edits = 1 + rng.below(6);
    for _ in 0..edits {
        edit(rng, t, &mut data);
    }
    data.truncate(t.max_len);
    data
}

fn edit(rng: &mut Rng, t: &Target, data: &mut Vec<u8>) {
    let at = |rng: &mut Rng, data: &Vec<u8>| rng.below(data.len() + 1);
    match rng.below(8) {
        0 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        1 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] = rng.next() as u8;
        }
        2 | 3 if !t.dictionary.is_empty() => {
            let token = t.dictionary[rng.below(t.dictionary.len())];
            let i = at(rng, data);
            data.splice(i..i, token.iter().copied());
        }
        4 if !data.is_empty() => {
            let i = rng.below(data.len());
            let n = 1 + rng.below((data.len() - i).min(64));
            data.drain(i..i + n);
        }
        5 if !data.is_empty() => {
            // Repeat a run: deep nesting, long lines, many frames.
            let i = rng.below(data.len());
            let n = 1 + rng.below((data.len() - i).min(32));
            let run: Vec<u8> = data[i..i + n].to_vec();
            let most = if rng.chance(8) { 512 } else { 8 };
            let times = 1 + rng.below(most);
            for _ in 0..times {
                data.splice(i..i, run.iter().copied());
            }
        }
        6 => {
            // Splice in part of another corpus entry.
            let other = &t.corpus[rng.below(t.corpus.len())];
            if !other.is_empty() {
                let from = rng.below(other.len());
                let to = from + rng.below(other.len() - from) + 1;
                let i = at(rng, data);
                data.splice(i..i, other[from..to].iter().copied());
            }
        }
        _ => {
            let i = at(rng, data);
            data.truncate(i);
        }
    }
}

/// Random chunk boundaries for `data` (streams arrive in arbitrary pieces).
pub fn chunks<'d>(rng: &mut Rng, data: &'d [u8]) -> Vec<&'d [u8]> {
    let mut out = vec![];
    let mut rest = data;
    while !rest.is_empty() {
        let most = if rng.chance(2) { 8 } else { 512 };
        let n = 1 + rng.below(rest.len().min(most));
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out
}

/// Runs `check` on mutated inputs until the budget is spent; returns the executions.
/// A panic fails the test with the input that caused it.
pub fn run(t: &Target, mut check: impl FnMut(&mut Rng, &[u8])) -> u64 {
    let seed = seed();
    let mut rng = Rng::new(seed ^ fnv(t.name.as_bytes()));
    let (runs, time) = budget(t.runs);
    #[allow(clippy::disallowed_methods)] // a fuzz budget is wall-clock time (scripts/fuzz.sh)
    let started = Instant::now();
    let mut done = 0;
    while done < runs && time.is_none_or(|d| started.elapsed() < d) {
        let input = mutate(&mut rng, t);
        let mut inner = Rng::new(rng.next());
        let result = catch_unwind(AssertUnwindSafe(|| check(&mut inner, &input)));
        if let Err(panic) = result {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "fuzz {}: execution {done} (FUZZ_SEED={seed}) panicked: {what}\ninput: {}",
                t.name,
                String::from_utf8_lossy(&input).escape_debug()
            );
        }
        done += 1;
    }
    report(t.name, done, started.elapsed());
    done
}

pub fn report(name: &str, done: u64, took: Duration) {
    eprintln!(
        "fuzz {name}: {done} executions in {:.1} s ({:.0}/s)",
        took.as_secs_f64(),
        done as f64 / took.as_secs_f64().max(1e-9)
    );
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
