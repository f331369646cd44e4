//! The regexes of an invariant (`regex`, `excludes_pattern`), compiled once when the
//! invariant is parsed: loading reports the ones that failed, `checks::Invariant` runs the
//! others.

use super::{Check, InvariantSpec};

/// The regexes of a `regex` or `excludes_pattern` check, in pattern order, compiled once:
/// `check_invariant` reports the ones that failed (with their field), `checks::Invariant`
/// runs the others. Compared by pattern.
#[derive(Clone, Default)]
pub(super) struct Regexes(std::sync::Arc<[Result<regex::Regex, RegexError>]>);

/// A pattern that did not compile, and regex's (multi-line) message.
#[derive(Debug, Clone, PartialEq)]
struct RegexError {
    pattern: String,
    message: String,
}

impl Regexes {
    pub(super) fn of(check: &Check) -> Regexes {
        let patterns: &[String] = match check {
            Check::Regex { pattern } => std::slice::from_ref(pattern),
            Check::ExcludesPattern { patterns } => patterns,
            Check::Contains { .. }
            | Check::ContainsAny { .. }
            | Check::Latency { .. }
            | Check::ValidJson {}
            | Check::Similarity { .. }
            | Check::ExcludesPii {}
            | Check::RefusalCheck { .. }
            | Check::OutputNotEmpty {}
            | Check::Completes {}
            | Check::BehaviorUnchanged { .. }
            | Check::ToolCalled { .. }
            | Check::ToolNotCalled { .. }
            | Check::MaxToolCalls { .. }
            | Check::MaxLlmCalls { .. }
            | Check::MaxTokens { .. }
            | Check::MaxCost { .. }
            | Check::HonorsRetryAfter {}
            | Check::NoExfiltration {}
            | Check::Outcome { .. } => &[],
        };
        let compile = |p: &String| {
            regex::Regex::new(p).map_err(|e| RegexError {
                pattern: p.clone(),
                message: e.to_string(),
            })
        };
        Regexes(patterns.iter().map(compile).collect())
    }

    /// Why pattern `at` did not compile, in one line (regex's message spans lines:
    /// pattern, caret, message; the message is kept).
    pub(super) fn error(&self, at: usize) -> Option<String> {
        let e = self.0.get(at)?.as_ref().err()?;
        let why = e
            .message
            .lines()
            .last()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        Some(format!("invalid regex `{}`: {why}", e.pattern))
    }

    fn sources(&self) -> Vec<Result<&str, &RegexError>> {
        self.0
            .iter()
            .map(|r| r.as_ref().map(regex::Regex::as_str))
            .collect()
    }
}

impl PartialEq for Regexes {
    fn eq(&self, other: &Self) -> bool {
        self.sources() == other.sources()
    }
}

impl std::fmt::Debug for Regexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.sources()).finish()
    }
}

impl InvariantSpec {
    /// Why the check's pattern `at` did not compile, in one line (None: it compiled, or
    /// there is no such pattern); config validation reports it with the pattern's field.
    pub fn regex_error(&self, at: usize) -> Option<String> {
        self.regexes.error(at)
    }

    /// The check's compiled regexes (`regex`: one, `excludes_pattern`: one per pattern,
    /// others: none). Err names a pattern that does not compile; loading reported it already.
    pub fn regexes(&self) -> Result<Vec<regex::Regex>, String> {
        self.regexes
            .0
            .iter()
            .map(|r| {
                r.clone()
                    .map_err(|e| format!("`{}`: {}", e.pattern, e.message))
            })
            .collect()
    }
}
