//! `response_drift`: the same model, subtly changed, as after a silent version bump.
//! Rewrites text (verbosity, format, tone, refusals) and renames JSON fields (tool-call
//! arguments, JSON answers). `severity` scales how much changes.

use serde_json::{Map, Value};

use crate::chaos::budget::{Budget, TooLarge};
use crate::chaos::spec::{Direction, DriftType, LlmMode, Severity};
use crate::llm::{Kind, Wire};

pub struct Drift {
    spec: Option<(DriftType, Severity, Direction, f64)>,
    /// Whether the first text piece of a stream has been seen.
    started: bool,
    /// What the rewritten body may grow to (`proxy.max_rewrite_bytes`).
    budget: Budget,
}

impl Drift {
    pub fn new(mode: &LlmMode, _draw: u64, budget: Budget) -> Self {
        let spec = match mode {
            LlmMode::ResponseDrift {
                drift_type,
                severity,
                direction,
                factor,
            } => Some((*drift_type, *severity, *direction, factor.max(1.0))),
            LlmMode::Timeout { .. }
            | LlmMode::TruncatedResponse { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::Empty {}
            | LlmMode::Garbage {}
            | LlmMode::ServerError { .. }
            | LlmMode::StreamCut { .. }
            | LlmMode::SlowStream { .. }
            | LlmMode::ToolCallCorruption { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. }
            | LlmMode::ContentFilter { .. } => None,
        };
        Drift {
            spec,
            started: false,
            budget,
        }
    }

    /// A whole body of `n` bytes is about to be drifted: the cap is on its new size.
    pub fn body_size(&mut self, n: usize) {
        self.budget = Budget::new(self.budget.limit(), n);
    }

    /// Drifts a whole response; true when something changed. The body's size is counted
    /// against the budget piece by piece; the one rewrite that can grow without bound
    /// (`verbosity_shift` `expand`) is sized before it is built.
    pub fn whole(&mut self, w: &dyn Wire, v: &mut Value) -> Result<bool, TooLarge> {
        let Some((kind, sev, dir, factor)) = self.spec else {
            return Ok(false);
        };
        let mut changed = false;
        if kind == DriftType::JsonFieldRename {
            w.for_each_tool_args(v, false, &mut |a| changed |= rename_in(a, sev));
        }
        let budget = &mut self.budget;
        let mut over = None;
        w.for_each_text(v, false, &mut |s| {
            if over.is_some() {
                return;
            }
            if kind == DriftType::VerbosityShift && dir == Direction::Expand {
                let len = expanded_len(s, factor);
                if let Err(e) = budget.replace(s.len(), len) {
                    over = Some(e);
                    return;
                }
            }
            let new = match kind {
                DriftType::JsonFieldRename => rename_json_text(s, sev),
                DriftType::VerbosityShift => Some(verbosity(s, dir, factor)),
                DriftType::FormatChange => Some(format_change(s, sev)),
                DriftType::RefusalRephrase => Some(refusal(sev).to_string()),
                DriftType::ToneShift => Some(tone(s, sev, true)),
            };
            // The other rewrites grow a piece by a bounded factor: count them once built.
            if !(kind == DriftType::VerbosityShift && dir == Direction::Expand)
                && let Some(n) = &new
                && let Err(e) = budget.replace(s.len(), n.len())
            {
                over = Some(e);
                return;
            }
            if let Some(n) = new.filter(|n| n != s) {
                *s = n;
                changed = true;
            }
        });
        match over {
            Some(e) => Err(e),
            None => Ok(changed),
        }
    }

    /// Drifts one stream event; true when it changed. Only what the rewrite adds to the
    /// stream counts against the budget.
    pub fn stream_event(
        &mut self,
        w: &dyn Wire,
        v: &mut Value,
        kind: Kind,
    ) -> Result<bool, TooLarge> {
        let Some((dt, sev, dir, factor)) = self.spec else {
            return Ok(false);
        };
        if kind != Kind::Content && kind != Kind::Finish {
            return Ok(false);
        }
        let mut changed = false;
        if dt == DriftType::JsonFieldRename {
            // Whole argument objects (Gemini, Ollama) can be renamed; streamed fragments cannot.
            w.for_each_tool_args(v, true, &mut |a| {
                changed |= a.is_object() && rename_in(a, sev)
            });
            return Ok(changed);
        }
        let mut first = !self.started;
        let budget = &mut self.budget;
        let mut over = None;
        w.for_each_text(v, true, &mut |s| {
            if s.is_empty() || over.is_some() {
                return;
            }
            if dt == DriftType::VerbosityShift
                && dir == Direction::Expand
                && first
                && let Err(e) = budget.grow(preamble_len(factor))
            {
                over = Some(e);
                return;
            }
            let new = match dt {
                DriftType::VerbosityShift if dir == Direction::Compress => {
                    let words = s.split_whitespace().count().max(1);
                    let keep = ((words as f64 / factor).ceil() as u32).max(1);
                    s[..super::take_tokens(s, keep).0].to_string()
                }
                DriftType::VerbosityShift if first => format!("{}{s}", preamble(factor)),
                DriftType::FormatChange if first => format!("**Answer:**\n\n{s}"),
                DriftType::RefusalRephrase if first => refusal(sev).to_string(),
                DriftType::RefusalRephrase => String::new(),
                DriftType::ToneShift => tone(s, sev, first),
                // Past the first piece, or handled before the text (field renames).
                DriftType::JsonFieldRename
                | DriftType::VerbosityShift
                | DriftType::FormatChange => s.clone(),
            };
            first = false;
            if dt != DriftType::VerbosityShift
                && let Err(e) = budget.replace(s.len(), new.len())
            {
                over = Some(e);
                return;
            }
            if new != *s {
                *s = new;
                changed = true;
            }
        });
        self.started |= !first;
        match over {
            Some(e) => Err(e),
            None => Ok(changed),
        }
    }
}

const SENTENCE: &str = "Great question! Let me walk you through this carefully and in detail. ";
const SUMMARY: &str = "\n\nIn summary: ";

/// How many times `expand` repeats the sentence (ranges keep `factor` in 1..=100; the cast
/// saturates whatever it is).
fn repeats(factor: f64) -> usize {
    factor.round().max(1.0) as usize
}

fn preamble_len(factor: f64) -> usize {
    SENTENCE.len().saturating_mul(repeats(factor))
}

/// The length `verbosity` `expand` gives `s`, computed without building it.
fn expanded_len(s: &str, factor: f64) -> usize {
    preamble_len(factor)
        .saturating_add(s.len().saturating_mul(2))
        .saturating_add(SUMMARY.len())
}

/// Only called once `preamble_len` has passed the budget.
fn preamble(factor: f64) -> String {
    SENTENCE.repeat(repeats(factor))
}

fn verbosity(s: &str, dir: Direction, factor: f64) -> String {
    match dir {
        Direction::Expand => format!("{}{s}{SUMMARY}{s}", preamble(factor)),
        Direction::Compress => {
            let words = s.split_whitespace().count();
            let keep = ((words as f64 / factor).ceil() as u32).max(1);
            s[..super::take_tokens(s, keep).0].to_string()
        }
    }
}

fn format_change(s: &str, sev: Severity) -> String {
    match sev {
        Severity::Subtle => format!("**Answer:** {s}"),
        Severity::Moderate => s
            .split(". ")
            .map(|l| format!("- {}", l.trim()))
            .collect::<Vec<_>>()
            .join("\n"),
        Severity::Significant => format!("```\n{s}\n```"),
    }
}

fn refusal(sev: Severity) -> &'static str {
    match sev {
        Severity::Subtle => {
            "I'd prefer not to answer that directly, but I can help with something related."
        }
        Severity::Moderate => "I'm not able to help with that request.",
        Severity::Significant => {
            "I'm sorry, but I cannot assist with this. This request may violate the usage policies."
        }
    }
}

fn tone(s: &str, sev: Severity, first: bool) -> String {
    match sev {
        Severity::Subtle if first => format!("Honestly, {s}"),
        Severity::Moderate if first => format!("lol ok so basically {s}"),
        Severity::Significant => s.to_uppercase(),
        Severity::Subtle | Severity::Moderate => s.to_string(),
    }
}

/// snake_case -> camelCase; names without `_` get a `Value` suffix (a schema change).
fn renamed(key: &str) -> String {
    if key.contains('_') {
        let mut out = String::new();
        let mut up = false;
        for c in key.chars() {
            if c == '_' {
                up = true;
            } else if up {
                out.extend(c.to_uppercase());
                up = false;
            } else {
                out.push(c);
            }
        }
        out
    } else {
        format!("{key}Value")
    }
}

/// Renames keys of an object, or of a JSON-text object; how many by `sev`.
fn rename_in(v: &mut Value, sev: Severity) -> bool {
    match v {
        Value::Object(map) if !map.is_empty() => {
            let n = match sev {
                Severity::Subtle => 1,
                Severity::Moderate => map.len().div_ceil(2),
                Severity::Significant => map.len(),
            };
            let old = std::mem::take(map);
            let mut new = Map::new();
            for (i, (k, val)) in old.into_iter().enumerate() {
                new.insert(if i < n { renamed(&k) } else { k }, val);
            }
            *map = new;
            true
        }
        Value::String(s) => match rename_json_text(s, sev) {
            Some(n) => {
                *s = n;
                true
            }
            None => false,
        },
        // An empty object has no key to rename.
        Value::Object(_) | Value::Array(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {
            false
        }
    }
}

fn rename_json_text(s: &str, sev: Severity) -> Option<String> {
    let mut v: Value = serde_json::from_str(s).ok().filter(Value::is_object)?;
    rename_in(&mut v, sev).then(|| v.to_string())
}
