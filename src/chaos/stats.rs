//! What an installed rule set did: per rule, how many requests it matched and how many it
//! fired on. Runs read these to prove a scenario's chaos happened, and to say why a rule
//! that never fired did not (nothing matched its scope or URL, or its probability and
//! `after_calls` held it back), and what limit stopped one (`times`).

use serde::{Deserialize, Serialize};

/// Which list of a `chaos:` spec a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    ToolFault,
    LlmFault,
    ContextAttack,
}

/// Counters and shape of one rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleStats {
    /// The rule's id (`tool_faults[0]` unless the config names it).
    pub rule: String,
    pub kind: RuleKind,
    pub mode: crate::exchange::FaultKind,
    /// Requests its scope and `match_url` matched.
    pub matched: u64,
    /// Requests it fired on (after `probability` and `after_calls`, at most `times` per
    /// install).
    pub fired: u64,
    /// Its `times`: at most this many firings per installed rule set (per case; summed
    /// installs may fire it more in all). Absent in reports of builds before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// What the rule is scoped to, in words: "tool `web_search`", "LLM calls".
    #[serde(skip)]
    pub scope: String,
    /// The tool it names, if any.
    #[serde(skip)]
    pub tool: Option<String>,
    #[serde(skip)]
    pub match_url: Option<String>,
    #[serde(skip)]
    pub probability: f64,
    #[serde(skip)]
    pub after_calls: u64,
}

impl RuleStats {
    /// Adds `other`'s counters (the same rule installed for another case's trace id); its
    /// shape (`times` among it) is the same rule's.
    pub fn absorb(&mut self, other: &RuleStats) {
        self.matched += other.matched;
        self.fired += other.fired;
        self.times = self.times.or(other.times);
    }
}

/// Sums the stats of several installs of the same spec, rule by rule (same order).
pub fn sum(all: &[Vec<RuleStats>]) -> Vec<RuleStats> {
    let mut out: Vec<RuleStats> = vec![];
    for stats in all {
        if out.is_empty() {
            out = stats.clone();
            continue;
        }
        for (mine, theirs) in out.iter_mut().zip(stats) {
            mine.absorb(theirs);
        }
    }
    out
}
