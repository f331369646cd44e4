//! The allowed range of every numeric field of a chaos rule (docs/faults.md, "Ranges"),
//! and the one check that enforces it. Config loading, `PUT /v1/chaos`, profiles and
//! specs built in code all compile through `CompiledChaos`, which calls `check_rule`, so a
//! value the daemon cannot act on safely (a NaN probability, a `factor` that asks for
//! petabytes, a latency of centuries) is refused with its path before any rule runs.

use std::fmt;

use serde_json::Value;

use super::{AttackMode, LlmMode, Rule, ToolMode};

/// The strings a non-finite YAML number becomes on its way to JSON (`config::finite`),
/// which no number field accepts: a `.nan` probability is refused with its path, never
/// read as "not set".
pub const MARKERS: &[&str] = &[".nan", ".inf", "-.inf"];

/// Whether `s` is what the loader made of a non-finite number.
pub fn is_marker(s: &str) -> bool {
    MARKERS.contains(&s)
}

/// An inclusive range; `note` says what the bounds mean when the number alone does not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub note: &'static str,
}

const fn r(min: f64, max: f64, note: &'static str) -> Range {
    Range { min, max, note }
}

/// Ten minutes: the proxy's own default upstream response limit.
const TEN_MIN_MS: f64 = 600_000.0;

/// Every numeric rule field by name. A name means the same thing in every mode that has it.
pub const RANGES: &[(&str, Range)] = &[
    ("probability", r(0.0, 1.0, "")),
    ("after_calls", r(0.0, 1e9, "")),
    (
        "times",
        r(1.0, 1e9, "a rule that must never fire should be removed"),
    ),
    ("days", r(1.0, 36_500.0, "up to a hundred years")),
    (
        "delay_ms",
        r(0.0, TEN_MIN_MS, "milliseconds, up to 10 minutes"),
    ),
    ("error_code", r(100.0, 599.0, "an HTTP status")),
    ("bytes_per_second", r(1.0, 1_073_741_824.0, "up to 1 GiB/s")),
    ("after_bytes", r(0.0, 1_099_511_627_776.0, "up to 1 TiB")),
    ("max_tokens", r(1.0, 10_000_000.0, "")),
    ("retry_after_s", r(0.0, 86_400.0, "seconds, up to a day")),
    ("factor", r(1.0, 100.0, "")),
    ("status", r(500.0, 599.0, "a 5xx status")),
    ("after_events", r(0.0, 1_000_000.0, "")),
    (
        "first_token_ms",
        r(0.0, TEN_MIN_MS, "milliseconds, up to 10 minutes"),
    ),
    (
        "between_ms",
        r(0.0, TEN_MIN_MS, "milliseconds, up to 10 minutes"),
    ),
    (
        "inject_tokens",
        r(1.0, 2_000_000.0, "about 13.5 MB of filler at most"),
    ),
];

/// The range of a numeric rule field, if `field` is one.
pub fn of(field: &str) -> Option<Range> {
    RANGES.iter().find(|(f, _)| *f == field).map(|(_, r)| *r)
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..={}", num(self.min), num(self.max))?;
        if !self.note.is_empty() {
            write!(f, " ({})", self.note)?;
        }
        Ok(())
    }
}

/// A number as a person would write it: `0.5`, `4294967295`, `1e300`, `NaN`.
fn num(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e15 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Checks one value of `field`; the error says what is wrong and what is allowed.
pub fn check(field: &str, value: f64) -> Result<(), String> {
    let Some(range) = of(field) else {
        return Ok(());
    };
    if !value.is_finite() {
        return Err(format!(
            "{} is not a finite number; allowed: {range}",
            num(value)
        ));
    }
    if value < range.min || value > range.max {
        return Err(format!("{} is outside {range}", num(value)));
    }
    Ok(())
}

/// The numeric fields a mode carries, by name. Exhaustive: a new mode must say its own.
pub trait Numbers {
    fn numbers(&self) -> Vec<(&'static str, f64)>;
}

impl Numbers for ToolMode {
    fn numbers(&self) -> Vec<(&'static str, f64)> {
        match self {
            ToolMode::Timeout { delay_ms, .. } => vec![("delay_ms", *delay_ms as f64)],
            ToolMode::Error { error_code, .. } => vec![("error_code", f64::from(*error_code))],
            ToolMode::Slow {
                delay_ms,
                bytes_per_second,
            } => {
                let mut out = vec![("delay_ms", *delay_ms as f64)];
                out.extend(bytes_per_second.map(|b| ("bytes_per_second", b as f64)));
                out
            }
            ToolMode::Reset { after_bytes } | ToolMode::Partial { after_bytes } => {
                vec![("after_bytes", *after_bytes as f64)]
            }
            ToolMode::Stale { days } => vec![("days", f64::from(*days))],
            // An MCP error code is any i32 (JSON-RPC leaves servers the rest of the range).
            ToolMode::Malformed {}
            | ToolMode::MaliciousResponse { .. }
            | ToolMode::McpToolError { .. }
            | ToolMode::McpError { .. }
            | ToolMode::McpSessionExpired {}
            | ToolMode::Corrupt { .. }
            | ToolMode::Empty {} => vec![],
        }
    }
}

impl Numbers for LlmMode {
    fn numbers(&self) -> Vec<(&'static str, f64)> {
        match self {
            LlmMode::Timeout { delay_ms, .. } => vec![("delay_ms", *delay_ms as f64)],
            LlmMode::TruncatedResponse { max_tokens } => {
                vec![("max_tokens", f64::from(*max_tokens))]
            }
            LlmMode::RateLimit { retry_after_s, .. } => vec![("retry_after_s", *retry_after_s)],
            LlmMode::ResponseDrift { factor, .. } => vec![("factor", *factor)],
            LlmMode::ServerError {
                status,
                after_events,
                ..
            } => status
                .iter()
                .map(|s| ("status", f64::from(*s)))
                .chain(after_events.iter().map(|n| ("after_events", f64::from(*n))))
                .collect(),
            LlmMode::HtmlErrorPage { status } => {
                status.iter().map(|s| ("status", f64::from(*s))).collect()
            }
            LlmMode::StreamCut { after_events, .. } => {
                vec![("after_events", f64::from(*after_events))]
            }
            LlmMode::SlowStream {
                first_token_ms,
                between_ms,
            } => vec![
                ("first_token_ms", *first_token_ms as f64),
                ("between_ms", *between_ms as f64),
            ],
            LlmMode::Empty {}
            | LlmMode::Garbage {}
            | LlmMode::ToolCallCorruption { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::ContentFilter { .. } => vec![],
        }
    }
}

impl Numbers for AttackMode {
    fn numbers(&self) -> Vec<(&'static str, f64)> {
        match self {
            AttackMode::Overflow { inject_tokens } => {
                vec![("inject_tokens", f64::from(*inject_tokens))]
            }
            AttackMode::IndirectInjection { .. }
            | AttackMode::MemoryPoisoning { .. }
            | AttackMode::ConflictingContext { .. }
            | AttackMode::InjectionViaContext { .. }
            | AttackMode::McpToolPoisoning { .. }
            | AttackMode::McpRugPull { .. }
            | AttackMode::McpShadowing { .. } => vec![],
        }
    }
}

/// Every numeric field of `rule` out of its range: `(field, message)`.
pub fn check_rule<M: Numbers>(rule: &Rule<M>) -> Vec<(&'static str, String)> {
    let c = &rule.common;
    let common = c
        .probability
        .map(|p| ("probability", p))
        .into_iter()
        .chain(c.after_calls.map(|n| ("after_calls", n as f64)))
        .chain(c.times.map(|n| ("times", n as f64)));
    common
        .chain(rule.mode.numbers())
        .filter_map(|(field, v)| check(field, v).err().map(|e| (field, e)))
        .collect()
}

/// A parse error on a numeric field, with the allowed range added: `-1`, `4294967296` or a
/// string (`.nan`, see `config::finite`) never reach `check`, serde refuses them first.
pub fn explain(field: &str, raw: Option<&Value>, msg: String) -> String {
    let name = if field == "trigger_probability" {
        "probability"
    } else {
        field
    };
    let Some(range) = of(name) else {
        return msg;
    };
    // A field the mode does not take: its value is not the problem.
    if msg.starts_with("unknown field") {
        return msg;
    }
    match raw {
        Some(Value::String(s)) if is_marker(s) => {
            format!("{s} is not a finite number; allowed: {range}")
        }
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if (range.min..=range.max).contains(&f) => {
                format!("{n} is not a whole number; allowed: {range}")
            }
            _ => format!("{n} is outside {range}"),
        },
        _ => format!("{msg}; allowed: {range}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::spec::parse_rule;
    use serde_json::json;

    #[test]
    fn every_range_is_ordered_finite_and_named_once() {
        for (i, (field, r)) in RANGES.iter().enumerate() {
            assert!(
                r.min.is_finite() && r.max.is_finite() && r.min <= r.max,
                "{field}"
            );
            assert!(
                RANGES[i + 1..].iter().all(|(f, _)| f != field),
                "{field} twice"
            );
            assert!(check(field, r.min).is_ok() && check(field, r.max).is_ok());
        }
    }

    #[test]
    fn bounds_are_inclusive_and_everything_else_is_refused_with_the_range() {
        assert_eq!(check("probability", 0.0), Ok(()));
        assert_eq!(check("probability", 1.0), Ok(()));
        assert_eq!(
            check("probability", 1.5).unwrap_err(),
            "1.5 is outside 0..=1"
        );
        assert_eq!(
            check("probability", f64::NAN).unwrap_err(),
            "NaN is not a finite number; allowed: 0..=1"
        );
        assert_eq!(
            check("probability", f64::INFINITY).unwrap_err(),
            "inf is not a finite number; allowed: 0..=1"
        );
        assert_eq!(
            check("factor", 1e300).unwrap_err(),
            "1e300 is outside 1..=100"
        );
        assert_eq!(
            check("factor", 1e12).unwrap_err(),
            "1000000000000 is outside 1..=100"
        );
        assert!(check("factor", f64::NEG_INFINITY).is_err());
        assert_eq!(
            check("inject_tokens", 4_294_967_295.0).unwrap_err(),
            "4294967295 is outside 1..=2000000 (about 13.5 MB of filler at most)"
        );
        assert_eq!(
            check("delay_ms", 600_001.0).unwrap_err(),
            "600001 is outside 0..=600000 (milliseconds, up to 10 minutes)"
        );
        assert!(check("delay_ms", 600_000.0).is_ok());
        assert!(check("retry_after_s", -0.5).is_err());
        assert!(check("error_code", 99.0).is_err() && check("error_code", 600.0).is_err());
        assert!(check("max_tokens", 0.0).is_err());
        assert!(check("bytes_per_second", 0.0).is_err());
        assert_eq!(check("not_a_number_field", f64::NAN), Ok(()));
    }

    #[test]
    fn every_numeric_field_of_every_mode_has_a_range() {
        let tool = [
            json!({"mode": "timeout"}),
            json!({"mode": "error"}),
            json!({"mode": "slow", "bytes_per_second": 10}),
            json!({"mode": "reset"}),
            json!({"mode": "partial"}),
            json!({"mode": "stale", "days": 30}),
        ];
        let llm = [
            json!({"mode": "timeout"}),
            json!({"mode": "truncated_response"}),
            json!({"mode": "rate_limit"}),
            json!({"mode": "response_drift"}),
            json!({"mode": "server_error", "status": 503}),
            json!({"mode": "stream_cut"}),
            json!({"mode": "slow_stream"}),
        ];
        let mut fields = vec!["probability", "after_calls", "times"];
        for v in tool {
            let rule = parse_rule::<ToolMode>(v).unwrap();
            fields.extend(rule.mode.numbers().iter().map(|(f, _)| *f));
            assert!(check_rule(&rule).is_empty(), "defaults are in range");
        }
        for v in llm {
            let rule = parse_rule::<LlmMode>(v).unwrap();
            fields.extend(rule.mode.numbers().iter().map(|(f, _)| *f));
            assert!(check_rule(&rule).is_empty(), "defaults are in range");
        }
        let overflow = parse_rule::<AttackMode>(json!({"type": "overflow"})).unwrap();
        fields.extend(overflow.mode.numbers().iter().map(|(f, _)| *f));
        assert!(check_rule(&overflow).is_empty());
        for f in &fields {
            assert!(of(f).is_some(), "{f} has no range");
        }
        for (f, _) in RANGES {
            assert!(fields.contains(f), "{f} is in the table but in no mode");
        }
    }

    #[test]
    fn a_rule_reports_each_field_out_of_range() {
        let rule = parse_rule::<LlmMode>(
            json!({"mode": "response_drift", "factor": 1e12, "probability": 2, "after_calls": 5}),
        )
        .unwrap();
        let got: Vec<&str> = check_rule(&rule).iter().map(|(f, _)| *f).collect();
        assert_eq!(got, ["probability", "factor"]);
    }

    use crate::config::load_errors;

    /// Issue #9: each of these loaded (`validate`: ok) and then crashed the daemon, or
    /// (NaN, infinity) read as "no probability" and fired always.
    #[test]
    fn the_issue_payloads_are_refused_at_load_with_path_and_range() {
        let cases = [
            (
                "llm_faults:\n    - {mode: response_drift, drift_type: verbosity_shift, direction: expand, factor: 1e12}",
                "chaos.llm_faults[0].factor: 1000000000000 is outside 1..=100",
            ),
            (
                "llm_faults:\n    - {mode: response_drift, factor: 1e300}",
                "chaos.llm_faults[0].factor: 1e300 is outside 1..=100",
            ),
            (
                "context_attacks:\n    - {type: overflow, inject_tokens: 4294967295}",
                "chaos.context_attacks[0].inject_tokens: 4294967295 is outside 1..=2000000",
            ),
            (
                "llm_faults:\n    - {mode: empty, probability: .nan}",
                "chaos.llm_faults[0].probability: .nan is not a finite number; allowed: 0..=1",
            ),
            (
                "llm_faults:\n    - {mode: empty, probability: .inf}",
                "chaos.llm_faults[0].probability: .inf is not a finite number; allowed: 0..=1",
            ),
            (
                "tool_faults:\n    - {tool: '*', mode: error, probability: -.inf}",
                "chaos.tool_faults[0].probability: -.inf is not a finite number; allowed: 0..=1",
            ),
            (
                "context_attacks:\n    - {type: overflow, trigger_probability: .nan}",
                "chaos.context_attacks[0].trigger_probability: .nan is not a finite number",
            ),
            (
                "llm_faults:\n    - {mode: rate_limit, retry_after_s: .nan}",
                "chaos.llm_faults[0].retry_after_s: .nan is not a finite number; allowed: 0..=86400",
            ),
            (
                "context_attacks:\n    - {type: overflow, inject_tokens: 4294967296}",
                "chaos.context_attacks[0].inject_tokens: 4294967296 is outside 1..=2000000",
            ),
            (
                "tool_faults:\n    - {tool: '*', mode: timeout, delay_ms: -1}",
                "chaos.tool_faults[0].delay_ms: -1 is outside 0..=600000",
            ),
        ];
        for (rules, expected) in cases {
            let errors = load_errors(&format!("chaos:\n  {rules}\n"));
            assert!(
                errors.len() == 1 && errors[0].starts_with(expected),
                "{rules}: want {expected:?}, got {errors:#?}"
            );
        }
        // The same spellings in a contract scenario go through the same check.
        let errors = load_errors(
            "contract:\n  name: c\n  invariants: [{type: latency, max_ms: 100}]\n  chaos_matrix:\n    - name: s\n      llm_faults: [{mode: empty, probability: .nan}]\n",
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("probability: .nan is not a finite number")),
            "{errors:#?}"
        );
    }

    #[test]
    fn a_spec_built_without_the_loader_cannot_be_compiled_out_of_range() {
        let spec: crate::chaos::spec::ChaosSpec = serde_json::from_value(
            json!({"llm_faults": [{"mode": "empty"}, {"mode": "response_drift", "factor": 1e12}]}),
        )
        .unwrap();
        assert_eq!(
            super::super::CompiledChaos::try_from(&spec)
                .unwrap_err()
                .to_string(),
            "llm_faults[1].factor: 1000000000000 is outside 1..=100"
        );
    }

    /// docs/faults.md ("Ranges") says what this table says.
    #[test]
    fn the_documented_ranges_are_the_checked_ones() {
        let doc = include_str!("../../../docs/faults.md");
        for (field, r) in RANGES {
            let bounds = format!("{}..={}", num(r.min), num(r.max));
            assert!(
                doc.lines().any(|l| l.starts_with('|')
                    && l.contains(&format!("`{field}`"))
                    && l.contains(&bounds)),
                "docs/faults.md has no row for `{field}` with {bounds}"
            );
        }
    }

    #[test]
    fn the_rewrite_cap_has_a_range_too() {
        for (cap, ok) in [("10", false), ("1024", true), ("2000000000", false)] {
            let errors = load_errors(&format!("proxy:\n  max_rewrite_bytes: {cap}\n"));
            assert_eq!(errors.is_empty(), ok, "{cap}: {errors:?}");
            if !ok {
                assert!(
                    errors[0].starts_with("proxy.max_rewrite_bytes: "),
                    "{errors:?}"
                );
                assert!(errors[0].contains("1024..=1073741824"), "{errors:?}");
            }
        }
    }

    #[test]
    fn parse_errors_on_numeric_fields_name_the_range() {
        assert_eq!(
            explain("probability", Some(&json!(".nan")), "invalid type".into()),
            ".nan is not a finite number; allowed: 0..=1"
        );
        assert_eq!(
            explain(
                "inject_tokens",
                Some(&json!(4294967296u64)),
                "invalid value".into()
            ),
            "4294967296 is outside 1..=2000000 (about 13.5 MB of filler at most)"
        );
        assert_eq!(
            explain("factor", Some(&json!("big")), "invalid type: string".into()),
            "invalid type: string; allowed: 1..=100"
        );
        assert_eq!(
            explain("delay_ms", Some(&json!(1.5)), "invalid type".into()),
            "1.5 is not a whole number; allowed: 0..=600000 (milliseconds, up to 10 minutes)"
        );
        assert_eq!(
            explain(
                "trigger_probability",
                Some(&json!(".inf")),
                "invalid type".into()
            ),
            ".inf is not a finite number; allowed: 0..=1"
        );
        assert_eq!(explain("payload", None, "missing".into()), "missing");
    }
}
