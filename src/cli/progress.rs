//! Progress of a run on stderr while its cases run: a bar with the cases done out of those
//! planned and the pass rate so far when stderr is a terminal, else one line per case (CI
//! logs), each saying how the case ended and the pass rate so far.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::run::{CaseResult, Judged, Progress, SoFar};

pub struct Display {
    bar: Option<indicatif::ProgressBar>,
    planned: Arc<AtomicUsize>,
    tally: Arc<Tally>,
}

/// Cases ended so far, and how many passed and failed on their answers.
#[derive(Default)]
struct Tally {
    done: AtomicUsize,
    passed: AtomicUsize,
    failed: AtomicUsize,
}

impl Tally {
    /// Counts a case; the pass rate so far in words, if any case was judged.
    fn count(&self, so_far: SoFar) -> (usize, Option<String>) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match so_far {
            SoFar::Passed => self.passed.fetch_add(1, Ordering::Relaxed),
            SoFar::Failed => self.failed.fetch_add(1, Ordering::Relaxed),
            SoFar::NotJudged | SoFar::Unscored => 0,
        };
        let (p, f) = (
            self.passed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        );
        let rate = (p + f > 0).then(|| {
            format!(
                "pass rate so far {:.0}% ({p} of {} judged)",
                p as f64 * 100.0 / (p + f) as f64,
                p + f
            )
        });
        (n, rate)
    }
}

impl Display {
    pub fn new() -> Display {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Display {
            bar: tty.then(bar),
            planned: Arc::default(),
            tally: Arc::default(),
        }
    }

    /// The hooks a run calls.
    pub fn hooks(&self) -> Progress {
        let (bar, planned, tally) = (self.bar.clone(), self.planned.clone(), self.tally.clone());
        let bar2 = bar.clone();
        let total = planned.clone();
        Progress {
            planned: Arc::new(move |n| {
                total.fetch_add(n, Ordering::Relaxed);
                if let Some(b) = &bar2 {
                    b.inc_length(n as u64);
                }
            }),
            phase: Arc::new(|_| {}),
            // Lines say how cases end; a start adds nothing a reader needs.
            started: Arc::new(|_: &str, _: &str| {}),
            case: Arc::new(move |c: &CaseResult, judged: &Judged| {
                let so_far = judged.so_far;
                let (n, rate) = tally.count(so_far);
                // A mutated prompt can be 100 KB (length_extremes): show its start.
                let line = format!(
                    "{}: {:?}: {}",
                    c.scenario,
                    crate::text::cut(&c.prompt, 100),
                    ended(c, so_far)
                );
                match &bar {
                    Some(b) => {
                        b.inc(1);
                        b.set_message(match rate {
                            Some(r) => format!("{r}  {line}"),
                            None => line,
                        });
                    }
                    None => eprintln!(
                        "flakestorm: [{n}/{}] {line}{}",
                        planned.load(Ordering::Relaxed),
                        rate.map(|r| format!("; {r}")).unwrap_or_default()
                    ),
                }
            }),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// How a case ended, in a few words.
fn ended(c: &CaseResult, so_far: SoFar) -> String {
    let how = CaseHow {
        not_judged: c.not_judged.as_deref(),
        answered: c.answer.is_some(),
        error: c.error.as_deref(),
        latency_ms: c.latency_ms,
        faults: c.faults.len(),
    };
    how.said(so_far)
}

/// What a progress line says of a case, here or on a daemon (`--server`).
pub(super) struct CaseHow<'a> {
    pub not_judged: Option<&'a str>,
    pub answered: bool,
    pub error: Option<&'a str>,
    pub latency_ms: f64,
    pub faults: usize,
}

impl CaseHow<'_> {
    pub fn said(&self, so_far: SoFar) -> String {
        let faults = match self.faults {
            0 => String::new(),
            n => format!(", {n} fault(s)"),
        };
        let how = match (self.not_judged, self.answered) {
            (Some(why), _) => return format!("not judged: {}", crate::text::cut(why, 100)),
            (None, true) => format!("answered in {:.0} ms{faults}", self.latency_ms),
            (None, false) => format!(
                "no answer ({}){faults}",
                crate::text::cut(self.error.unwrap_or(""), 100)
            ),
        };
        match so_far {
            SoFar::Passed => format!("{how}: passed"),
            SoFar::Failed => format!("{how}: failed"),
            SoFar::NotJudged | SoFar::Unscored => how,
        }
    }
}

fn bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    let style = indicatif::ProgressStyle::with_template("{bar:20} {pos}/{len} cases  {wide_msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pass_rate_counts_only_judged_cases() {
        let t = Tally::default();
        assert_eq!(t.count(SoFar::NotJudged), (1, None), "nothing judged yet");
        assert_eq!(
            t.count(SoFar::Passed),
            (2, Some("pass rate so far 100% (1 of 1 judged)".into()))
        );
        t.count(SoFar::Failed);
        assert_eq!(
            t.count(SoFar::Passed),
            (4, Some("pass rate so far 67% (2 of 3 judged)".into()))
        );
        let contract = Tally::default();
        assert_eq!(contract.count(SoFar::Unscored), (1, None));
    }
}
