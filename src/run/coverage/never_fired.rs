//! Why a chaos rule that matched requests never fired, and what would make it fire: the
//! coverage's reason for such a rule (`why_not`).

use crate::chaos::RuleStats;

/// Why a rule that matched requests never fired, and what would make it: `after_calls`
/// counts per case, so more prompts help only a `probability` below 1, and only when some
/// case went past `after_calls`.
pub(super) fn never_fired(rule: &RuleStats, cases: usize) -> String {
    let (p, after, matched) = (rule.probability, rule.after_calls, rule.matched);
    let mut fixes = vec![];
    if p < 1.0 {
        fixes.push("raise the probability".to_string());
    }
    if after > 0 {
        fixes.push(format!(
            "lower after_calls (it counts per case: {matched} matching request(s) over \
             {cases} case(s), so no case may have gone past {after})"
        ));
    }
    if p < 1.0 && (after == 0 || matched > cases as u64) {
        fixes.push("run more prompts".into());
    }
    if fixes.is_empty() {
        fixes.push("another rule that takes the same requests fired first".into());
    }
    format!(
        "it matched {matched} request(s) but never fired (probability {p}, after_calls \
         {after}): {}",
        fixes.join(", or ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::rule;
    use super::*;

    #[test]
    fn a_rule_after_calls_held_back_in_every_case_is_not_helped_by_more_prompts() {
        let held = RuleStats {
            matched: 6,
            after_calls: 1,
            ..rule()
        };
        let why = never_fired(&held, 6);
        assert!(
            why.contains("lower after_calls (it counts per case"),
            "{why}"
        );
        assert!(!why.contains("more prompts"), "{why}");
        let unlucky = RuleStats {
            matched: 2,
            probability: 0.3,
            ..rule()
        };
        let why = never_fired(&unlucky, 2);
        assert!(
            why.ends_with("raise the probability, or run more prompts"),
            "{why}"
        );
    }
}
