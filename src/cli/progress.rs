//! Progress of a run on stderr while its cases run: a bar with the cases done out of those
//! planned when stderr is a terminal, else one line per case (CI logs), each saying how
//! the case ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::run::{CaseResult, Progress};

pub struct Display {
    bar: Option<indicatif::ProgressBar>,
    planned: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

impl Display {
    pub fn new() -> Display {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Display {
            bar: tty.then(bar),
            planned: Arc::default(),
            done: Arc::default(),
        }
    }

    /// The hooks a run calls.
    pub fn hooks(&self) -> Progress {
        let (bar, planned, done) = (self.bar.clone(), self.planned.clone(), self.done.clone());
        let bar2 = bar.clone();
        let total = planned.clone();
        Progress {
            planned: Arc::new(move |n| {
                total.fetch_add(n, Ordering::Relaxed);
                if let Some(b) = &bar2 {
                    b.inc_length(n as u64);
                }
            }),
            case: Arc::new(move |c: &CaseResult| {
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                // A mutated prompt can be 100 KB (length_extremes): show its start.
                let line = format!("{}: {:?}: {}", c.scenario, cut(&c.prompt), ended(c));
                match &bar {
                    Some(b) => {
                        b.inc(1);
                        b.set_message(line);
                    }
                    None => eprintln!(
                        "flakestorm: [{n}/{}] {line}",
                        planned.load(Ordering::Relaxed)
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
fn ended(c: &CaseResult) -> String {
    let faults = match c.faults.len() {
        0 => String::new(),
        n => format!(", {n} fault(s)"),
    };
    match (&c.not_judged, &c.answer, &c.error) {
        (Some(why), _, _) => format!("not judged: {}", cut(why)),
        (None, Some(_), _) => format!("answered in {:.0} ms{faults}", c.latency_ms),
        (None, None, e) => format!("no answer ({}){faults}", cut(e.as_deref().unwrap_or(""))),
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
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
