//! One case of a section as the report shows it: its prompt and answer (capped), its
//! checks, the faults it met, its outcome class with the evidence, next steps and the
//! timeline of its calls (the calls the evidence names marked).

use serde::Serialize;

use super::advice::{self, Facts};
use super::marks;
use super::timeline::{self, Timeline};
use super::{CAP, reason, text, verdict_look};
use crate::checks::Verdict;
use crate::report::outcomes::{self, Piece};
use crate::report::view::{CaseView, Section};
use crate::run::CaseOutcome;

#[derive(Serialize)]
pub(super) struct CaseCtx {
    anchor: String,
    class: &'static str,
    mark: &'static str,
    summary: String,
    prompt: String,
    prompt_more: usize,
    mutation: Option<(String, String)>,
    answer: Option<String>,
    answer_more: usize,
    error: Option<String>,
    latency: String,
    /// Its trial, when cases run several times.
    trial: Option<u32>,
    attempts: u32,
    /// The pool instance it ran on.
    instance: Option<usize>,
    /// How many of its calls began after its answer.
    after_answer: usize,
    not_judged: Option<String>,
    checks: Vec<CheckCtx>,
    faults: Vec<String>,
    outcome: Option<OutcomeCtx>,
    /// Its LLM calls' tokens and cost, and what fault rules' retries spent of them.
    usage: Option<String>,
    steps: Vec<String>,
    timeline: Option<Timeline>,
    /// Why there is no timeline.
    no_calls: Option<&'static str>,
}

/// A case's outcome class: its badge, why, and the evidence, one line each.
#[derive(Serialize)]
pub(super) struct OutcomeCtx {
    /// The class as named in the JSON: the badge's CSS class.
    class: &'static str,
    word: &'static str,
    reason: String,
    evidence: Vec<Vec<Piece>>,
}

pub(super) fn outcome(o: &CaseOutcome) -> OutcomeCtx {
    OutcomeCtx {
        class: o.class.as_str(),
        word: outcomes::word(o.class),
        reason: text::line(&o.reason, 500),
        evidence: o.evidence.iter().map(outcomes::evidence).collect(),
    }
}

#[derive(Serialize)]
struct CheckCtx {
    label: String,
    class: &'static str,
    reason: String,
}

pub(super) fn case(s: &Section<'_>, cv: &CaseView<'_>, index: usize) -> CaseCtx {
    let c = cv.case;
    let (class, mark) = match cv.passed {
        Some(true) => ("pass", "✓"),
        Some(false) => ("fail", "✗"),
        None => ("nj", "–"),
    };
    let (prompt, prompt_more) = text::capped(&c.prompt, CAP);
    let (answer, answer_more) = match &c.answer {
        Some(a) => {
            let (a, more) = text::capped(a, CAP);
            (Some(a), more)
        }
        None => (None, 0),
    };
    // Contract cases' next steps are their cells'.
    let steps = if cv.passed == Some(false) && s.cells.is_empty() {
        let failures = cv
            .checks
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Fail(_)))
            .map(|(_, v)| reason(v))
            .collect();
        advice::next_steps(&Facts::of(c, failures, s.coverage))
    } else {
        vec![]
    };
    let marks = marks::of(c.outcome.as_ref());
    let timeline = c.traffic.as_deref().and_then(|t| timeline::of(t, &marks));
    let no_calls = match &c.traffic {
        None => Some("its calls could not be attributed to it (see the JSON report's coverage)"),
        Some(t) if t.is_empty() => Some("no call of the agent's reached the proxy during it"),
        Some(_) => None,
    };
    CaseCtx {
        anchor: CaseView::anchor(s.phase, index),
        class,
        mark,
        summary: text::line(&c.prompt, 100),
        prompt,
        prompt_more,
        mutation: cv
            .mutation
            .as_ref()
            .map(|(kind, original)| (text::line(kind, 40), text::line(original, 300))),
        answer,
        answer_more,
        error: c.error.as_deref().map(|e| text::line(e, 500)),
        latency: text::duration(c.latency_ms),
        trial: c.trial,
        attempts: c.attempts,
        instance: c.instance,
        after_answer: c.after_answer.len(),
        not_judged: c.not_judged.as_deref().map(|n| text::line(n, 300)),
        checks: cv
            .checks
            .iter()
            .map(|(label, v)| CheckCtx {
                label: text::line(label, 60),
                class: verdict_look(v).0,
                reason: text::line(reason(v), 300),
            })
            .collect(),
        faults: c.faults.iter().map(fault).collect(),
        outcome: c.outcome.as_ref().map(outcome),
        usage: c.usage.as_ref().map(spent),
        steps,
        timeline,
        no_calls,
    }
}

/// A fault the case met: its rule and mode, and why it was not applied when it was not.
fn fault(f: &crate::exchange::FaultRecord) -> String {
    let note = match (&f.note, f.applied) {
        (_, true) => String::new(),
        (Some(n), false) => format!(", not applied: {}", text::line(n, 200)),
        (None, false) => ", not applied".into(),
    };
    format!("{} ({}{note})", text::line(&f.rule, 60), f.mode)
}

/// A case's usage in one line, with what fault rules' retries spent of it.
fn spent(u: &crate::cost::CaseUsage) -> String {
    let mut line = crate::cost::line(&u.spent);
    for r in &u.because_of_faults {
        let tokens = r.spent.tokens().map_or("unknown".into(), |n| n.to_string());
        line.push_str(&format!(
            "; {tokens} tokens spent on retries after `{}` ({})",
            r.rule,
            r.mode.as_str()
        ));
    }
    text::line(&line, 400)
}
