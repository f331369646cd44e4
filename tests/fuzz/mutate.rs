//! A small structure-aware mutation fuzzer for the parsers that take untrusted bytes
//! (cargo-fuzz needs a nightly toolchain; this runs on stable, in the test command, bounded).
//!
//! Each target gets a seed corpus of valid inputs and a dictionary of tokens that matter to
//! its grammar; inputs are corpus entries with a few random edits (bit flips, tokens,
//! splices, cuts, repeats). Runs are deterministic for a seed: `FUZZ_SEED` picks it. The
//! budget is the target's fixed number of executions, or `FUZZ_RUNS` executions, or
//! `FUZZ_SECS` seconds (scripts/fuzz.sh). A panic is a crash: its input is saved
//! (`crash.rs`), fuzzing goes on, and the target fails at the end naming every crash.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::crash::{Crash, Crashes};

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

thread_local! {
    static PARSED: Cell<u64> = const { Cell::new(0) };
}

/// Counts an input the target's parser accepted (reported beside the executions: how
/// many inputs reached the checks past the parser).
pub fn parsed() {
    PARSED.with(|p| p.set(p.get() + 1));
}

/// What one target fuzzes with.
pub struct Target<'a> {
    pub name: &'a str,
    pub corpus: Vec<Vec<u8>>,
    pub dictionary: &'a [&'a [u8]],
    /// The seeds as JSON values (`json::values`), for JSON-aware edits; empty: bytes only.
    pub values: Vec<serde_json::Value>,
    /// Executions when neither `FUZZ_RUNS` nor `FUZZ_SECS` is set (the test command's run).
    pub runs: u64,
    /// Largest input produced.
    pub max_len: usize,
}

/// The seed (`FUZZ_SEED`, default fixed so a failure in CI reproduces locally).
pub fn seed() -> u64 {
    env_u64("FUZZ_SEED").unwrap_or(0x5EED_F1A4_E570_0000)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

/// How long a target runs.
#[derive(Clone, Copy)]
enum Budget {
    Runs(u64),
    Time(Duration),
}

fn budget(runs: u64) -> Budget {
    match (env_u64("FUZZ_RUNS"), env_u64("FUZZ_SECS")) {
        (Some(n), _) => Budget::Runs(n),
        (None, Some(secs)) => Budget::Time(Duration::from_secs(secs)),
        (None, None) => Budget::Runs(runs),
    }
}

/// One mutated input from the corpus: byte edits, or for half the inputs of a target with
/// JSON seeds, JSON-aware edits and now and then a byte edit on top.
pub fn mutate(rng: &mut Rng, t: &Target) -> Vec<u8> {
    if !t.values.is_empty() && rng.chance(2) {
        let mut data = crate::json::mutate(rng, &t.values);
        if rng.chance(4) {
            edit(rng, t, &mut data);
        }
        data.truncate(t.max_len);
        return data;
    }
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

/// A target's run, shared by its workers: the budget, the executions so far, the crashes.
struct Fuzzing<'t> {
    t: &'t Target<'t>,
    seed: u64,
    budget: Budget,
    started: Instant,
    claimed: AtomicU64,
    done: AtomicU64,
    parsed: AtomicU64,
    crashes: Crashes,
}

impl Fuzzing<'_> {
    /// Whether the budget allows another execution (claimed, so workers share it).
    fn claim(&self) -> bool {
        match self.budget {
            Budget::Runs(n) => self.claimed.fetch_add(1, Ordering::Relaxed) < n,
            Budget::Time(d) => self.started.elapsed() < d,
        }
    }

    /// Runs `check` on mutated inputs as worker `worker` until the budget is spent.
    fn work(&self, worker: u64, check: &mut dyn FnMut(&mut Rng, &[u8])) {
        let stream = self.seed ^ fnv(self.t.name.as_bytes()) ^ worker.wrapping_mul(0x9E37_79B9);
        let mut rng = Rng::new(stream);
        let mut execution = 0;
        let parsed = PARSED.with(Cell::get);
        while self.claim() {
            let input = mutate(&mut rng, self.t);
            let inner = rng.next();
            if let Err(message) = attempt(check, inner, &input) {
                self.crashes.add(
                    self.t.name,
                    Crash {
                        input,
                        message,
                        seed: self.seed,
                        worker,
                        execution,
                        inner,
                    },
                );
            }
            execution += 1;
            self.done.fetch_add(1, Ordering::Relaxed);
        }
        let more = PARSED.with(Cell::get) - parsed;
        self.parsed.fetch_add(more, Ordering::Relaxed);
    }

    /// Reports the run; fails the test if anything crashed.
    fn finish(self) -> u64 {
        let done = self.done.load(Ordering::Relaxed);
        let crashes = self.crashes.count();
        let parsed = self.parsed.load(Ordering::Relaxed);
        report(self.t.name, done, self.started.elapsed(), parsed, crashes);
        self.crashes.fail_if_any(self.t.name, done);
        done
    }
}

/// `check` on one input; the panic's message if it panicked.
fn attempt(check: &mut dyn FnMut(&mut Rng, &[u8]), inner: u64, input: &[u8]) -> Result<(), String> {
    let mut rng = Rng::new(inner);
    catch_unwind(AssertUnwindSafe(|| check(&mut rng, input))).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn start<'t>(t: &'t Target<'t>) -> Fuzzing<'t> {
    #[allow(clippy::disallowed_methods)] // a fuzz budget is wall-clock time (scripts/fuzz.sh)
    let started = Instant::now();
    Fuzzing {
        t,
        seed: seed(),
        budget: budget(t.runs),
        started,
        claimed: AtomicU64::new(0),
        done: AtomicU64::new(0),
        parsed: AtomicU64::new(0),
        crashes: Crashes::default(),
    }
}

/// Runs `check` on mutated inputs until the budget is spent; returns the executions.
/// Crashes are saved as they happen; the test fails at the end if there were any. With
/// `FUZZ_REPLAY` set, runs only the saved input it names (if it is this target's).
pub fn run(t: &Target, mut check: impl FnMut(&mut Rng, &[u8])) -> u64 {
    if let Some(replayed) = crate::crash::replay(t.name, &mut check) {
        return replayed;
    }
    let f = start(t);
    f.work(0, &mut check);
    f.finish()
}

/// `run` on `workers` threads at once, each with its own stream of inputs (for targets
/// that wait on I/O: the daemon answers one connection while the next is being written).
pub fn run_parallel(t: &Target, workers: u64, check: impl Fn(&mut Rng, &[u8]) + Sync) -> u64 {
    if let Some(replayed) = crate::crash::replay(t.name, &mut |rng, input| check(rng, input)) {
        return replayed;
    }
    let f = start(t);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (f, check) = (&f, &check);
            s.spawn(move || f.work(w, &mut |rng, input| check(rng, input)));
        }
    });
    f.finish()
}

pub fn report(name: &str, done: u64, took: Duration, parsed: u64, crashes: usize) {
    let parsed = match parsed {
        0 => String::new(),
        n => format!(
            ", {n} parsed ({:.0}%)",
            100.0 * n as f64 / done.max(1) as f64
        ),
    };
    eprintln!(
        "fuzz {name}: {done} executions in {:.1} s ({:.0}/s){parsed}, {crashes} crashes",
        took.as_secs_f64(),
        done as f64 / took.as_secs_f64().max(1e-9)
    );
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
