//! Outcome classes (docs/outcomes.md) as every format shows them: a class in words, each
//! piece of a case's evidence as a short line, the fault family a fault belongs to, and the
//! counts a resilience profile is drawn from. Pure. Values from the agent and its tools
//! (facts, planted values, reasons) are made inert and cut here; each format escapes them.

use std::collections::BTreeMap;

use super::text;
use crate::checks::spec::OutcomeClass;
use crate::exchange::{FaultKind, Target};
use crate::run::outcome::{Place, Reach};
use crate::run::{CaseOutcome, CaseResult, OutcomeEvidence as Evidence};

/// The agent's classes, worst first: the shares of a profile are of these.
pub const VERDICTS: [OutcomeClass; 5] = [
    OutcomeClass::Propagated,
    OutcomeClass::Fabricated,
    OutcomeClass::Failed,
    OutcomeClass::DegradedHonest,
    OutcomeClass::Recovered,
];

/// The classes that are no verdict on the agent, counted apart.
pub const APART: [OutcomeClass; 2] = [OutcomeClass::NotExercised, OutcomeClass::Undecided];

/// A class in words: `degraded honest`, `not exercised`.
pub fn word(class: OutcomeClass) -> &'static str {
    match class {
        OutcomeClass::Propagated => "propagated",
        OutcomeClass::Fabricated => "fabricated",
        OutcomeClass::Failed => "failed",
        OutcomeClass::DegradedHonest => "degraded honest",
        OutcomeClass::Recovered => "recovered",
        OutcomeClass::NotExercised => "not exercised",
        OutcomeClass::Undecided => "undecided",
    }
}

/// A case's class as a badge: its CSS class and its words (none without a class).
pub fn badge(o: Option<&crate::run::CaseOutcome>) -> Option<(&'static str, &'static str)> {
    o.map(|o| (o.class.as_str(), word(o.class)))
}

/// `3 recovered, 1 fabricated`, worst first; empty when there are none.
pub fn counted(counts: &BTreeMap<OutcomeClass, usize>) -> String {
    let parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{n} {}", word(*c)))
        .collect();
    parts.join(", ")
}

/// What a fault did, broadly: the columns of a resilience profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    ToolErrors,
    ToolData,
    Latency,
    LlmErrors,
    LlmOutput,
    ContextAttacks,
    Other,
}

impl Family {
    pub fn label(self) -> &'static str {
        match self {
            Family::ToolErrors => "tool errors",
            Family::ToolData => "tool data",
            Family::Latency => "latency",
            Family::LlmErrors => "LLM errors",
            Family::LlmOutput => "LLM output",
            Family::ContextAttacks => "context attacks",
            Family::Other => "other",
        }
    }

    /// The family of a fault of `mode` on a call to `target` (when known: a `timeout` or
    /// an `empty` is a tool's or the LLM's by its target).
    pub fn of(mode: FaultKind, target: Option<&Target>) -> Family {
        let tool = matches!(target, Some(Target::Tool { .. } | Target::Other));
        match mode {
            FaultKind::Timeout if tool || target.is_none() => Family::ToolErrors,
            FaultKind::Timeout => Family::LlmErrors,
            FaultKind::Empty if tool => Family::ToolData,
            FaultKind::Empty => Family::LlmOutput,
            FaultKind::Error
            | FaultKind::Reset
            | FaultKind::Partial
            | FaultKind::McpToolError
            | FaultKind::McpError
            | FaultKind::McpSessionExpired => Family::ToolErrors,
            FaultKind::Malformed
            | FaultKind::MaliciousResponse
            | FaultKind::Corrupt
            | FaultKind::Stale => Family::ToolData,
            FaultKind::Slow | FaultKind::SlowStream => Family::Latency,
            FaultKind::RateLimit
            | FaultKind::ServerError
            | FaultKind::ClientError
            | FaultKind::HtmlErrorPage
            | FaultKind::ContextLengthExceeded
            | FaultKind::ContentFilter => Family::LlmErrors,
            FaultKind::TruncatedResponse
            | FaultKind::Garbage
            | FaultKind::ResponseDrift
            | FaultKind::StreamCut
            | FaultKind::ToolCallCorruption => Family::LlmOutput,
            FaultKind::IndirectInjection
            | FaultKind::MemoryPoisoning
            | FaultKind::Overflow
            | FaultKind::ConflictingContext
            | FaultKind::InjectionViaContext
            | FaultKind::McpToolPoisoning
            | FaultKind::McpRugPull
            | FaultKind::McpShadowing => Family::ContextAttacks,
            FaultKind::Replayed | FaultKind::ReplayMiss | FaultKind::Unknown => Family::Other,
        }
    }
}

/// The families of the faults that reached `case` (its `fault` evidence), in order.
pub fn families(case: &CaseResult, o: &CaseOutcome) -> Vec<Family> {
    let target = |id: u64| {
        let calls = case.traffic.as_deref().unwrap_or(&[]);
        calls.iter().find(|e| e.id == id).map(|e| &e.target)
    };
    let mut out: Vec<Family> = o
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Fault { mode, exchange, .. } => Some(Family::of(*mode, target(*exchange))),
            Evidence::Planted { .. }
            | Evidence::Unsupported { .. }
            | Evidence::Carried { .. }
            | Evidence::Lacks { .. }
            | Evidence::Bypassed { .. }
            | Evidence::NoAnswer { .. } => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each of the five verdict classes' share of `counts` in whole percents that add up to
/// 100 (largest remainders get the rounding), in `VERDICTS` order; all 0 when none.
pub fn shares(counts: &BTreeMap<OutcomeClass, usize>) -> [u32; 5] {
    let n = VERDICTS.map(|c| counts.get(&c).copied().unwrap_or(0));
    let total: usize = n.iter().sum();
    if total == 0 {
        return [0; 5];
    }
    let mut out = n.map(|k| (k * 100 / total) as u32);
    let mut rest: Vec<usize> = (0..5).collect();
    // Larger remainders first; the worse class first among equals.
    rest.sort_by_key(|&i| std::cmp::Reverse(n[i] * 100 % total));
    let short = 100 - out.iter().sum::<u32>();
    for &i in rest.iter().take(short as usize) {
        out[i] += 1;
    }
    out
}

/// One piece of an evidence line: text, or a value shown as code.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Piece {
    pub text: String,
    pub code: bool,
}

fn t(s: impl Into<String>) -> Piece {
    Piece {
        text: s.into(),
        code: false,
    }
}

/// A value from the agent or a tool: inert, on one line, cut.
fn v(s: &str) -> Piece {
    Piece {
        text: text::line(s, 80),
        code: true,
    }
}

fn at(exchange: u64) -> Piece {
    t(format!(" (exchange {exchange})"))
}

fn place(r: &Reach) -> String {
    let what = match r.place {
        Place::Model => "the model",
        Place::ToolArgs => "a tool call's arguments",
        Place::Answer => "the answer",
    };
    match r.exchange {
        Some(x) => format!("{what} (exchange {x})"),
        None => what.to_string(),
    }
}

/// One piece of evidence as a line of pieces.
pub fn evidence(e: &Evidence) -> Vec<Piece> {
    match e {
        Evidence::Fault {
            rule,
            mode,
            exchange,
        } => vec![
            t("fault "),
            v(rule),
            t(format!(" ({mode}) on exchange {exchange}")),
        ],
        Evidence::Planted {
            exchange,
            path,
            original,
            planted,
            reached,
        } => {
            let mut out = vec![t("planted "), v(planted)];
            if let Some(o) = original {
                out.extend([t(" for "), v(o)]);
            }
            out.extend([t(" at "), v(path), at(*exchange)]);
            let places: Vec<String> = reached.iter().map(place).collect();
            out.push(t(match places.is_empty() {
                true => " → reached nothing after".to_string(),
                false => format!(" → reached: {}", places.join(", ")),
            }));
            out
        }
        Evidence::Unsupported { fact, why } => vec![
            t("unsupported fact "),
            v(fact),
            t(format!(": {}", text::line(why, 200))),
        ],
        Evidence::Carried {
            fact,
            exchange,
            tool,
        } => vec![t("carried "), v(fact), t(" from "), v(tool), at(*exchange)],
        Evidence::Lacks { facts } => {
            let mut out = vec![t("lacks what the no-chaos answer took from its tools:")];
            for (i, f) in facts.iter().enumerate() {
                out.push(t(if i == 0 { " " } else { ", " }));
                out.push(v(f));
            }
            out
        }
        Evidence::Bypassed { tool, exchange } => vec![
            t("the model asked for "),
            v(tool),
            at(*exchange),
            t(" and no call to it crossed the proxy"),
        ],
        Evidence::NoAnswer { why } => vec![t(format!("no answer: {}", text::line(why, 200)))],
    }
}

/// A line of pieces as plain text, values in backticks (JUnit bodies, tests).
pub fn plain(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p.code {
            true => format!("`{}`", p.text),
            false => p.text.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
