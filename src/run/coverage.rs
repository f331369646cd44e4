//! Proof that chaos happened. For each scenario: the exchanges the proxy recorded while it
//! ran, each rule's counters (requests matched, fired) and how often its fault or attack
//! was applied to the agent's traffic; a rule that never reached the traffic gets the
//! likely cause in words (nothing crossed the proxy, nothing matched its scope or URL,
//! with the hosts that were seen, or its probability held it back). Pure.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::cases::CaseResult;
use crate::chaos::{RuleKind, RuleStats};
use crate::config::{LlmEndpointSpec, ToolSpec, When};
use crate::exchange::{Exchange, Target};

mod bypass;
mod never_fired;
mod no_proxy;

pub use bypass::{Stack, Started};

/// What the config says the agent's traffic is and how the agent runs, to explain rules
/// that matched nothing and traffic that never crossed the proxy.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    pub tools: Vec<ToolSpec>,
    pub llm: Vec<LlmEndpointSpec>,
    pub started: Started,
}

impl Declared {
    /// Whether the config expects traffic to cross the proxy at all.
    pub fn any(&self) -> bool {
        !self.tools.is_empty() || !self.llm.is_empty()
    }
}

/// What the run saw before a scenario: tells an agent that bypasses the proxy from one
/// that sent nothing in this scenario only (answers it cached from earlier cases).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Before {
    /// Exchanges recorded in the run's earlier scenarios.
    pub exchanges: usize,
    /// `agent.reset_endpoint` is set.
    pub resets: bool,
}

impl Before {
    /// What the run saw before a scenario: the scenarios `earlier` than it.
    pub fn after(earlier: &[Coverage], resets: bool) -> Before {
        Before {
            exchanges: earlier.iter().map(|c| c.exchanges).sum(),
            resets,
        }
    }
}

/// One rule of a scenario and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleCoverage {
    #[serde(flatten)]
    pub stats: RuleStats,
    /// Times its fault or attack was applied to the agent's traffic (the journal's records).
    pub applied: usize,
    /// Why it never reached the agent's traffic; null when it did.
    pub why_not: Option<String>,
}

/// What a scenario's chaos did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub scenario: String,
    /// Exchanges the proxy recorded while the scenario ran.
    pub exchanges: usize,
    /// Of those, the ones that belong to no case (between cases, or an exporter's
    /// untraced uploads): reported, judged in none.
    pub outside_cases: usize,
    pub cases: usize,
    /// Cases that could be judged (no environment error, traffic attributed, the
    /// scenario's chaos reached the agent).
    pub judged: usize,
    pub rules: Vec<RuleCoverage>,
    /// Why the scenario tested nothing it claims; null when its chaos reached the agent
    /// (or it has none).
    pub not_tested: Option<String>,
    /// Why no request at all crossed the proxy while it ran (its traffic checks are then
    /// not tested); null when one did.
    #[serde(default)]
    pub silent: Option<String>,
    /// How many of its cases ended in each outcome class (scenarios with chaos).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outcomes: BTreeMap<crate::checks::spec::OutcomeClass, usize>,
}

/// The coverage of scenario `name` from its cases, the exchanges recorded while it ran,
/// its rules' counters and what the run saw `before` it.
pub(super) fn of(
    name: &str,
    cases: &[CaseResult],
    exchanges: &[Arc<Exchange>],
    stats: Vec<RuleStats>,
    declared: &Declared,
    before: Before,
) -> Coverage {
    // Cases whose traffic is not attributed (a lost trace id) say why better than the
    // empty list of exchanges would.
    let unattributed = cases.iter().find_map(|c| c.not_judged.as_deref());
    let none = exchanges.is_empty();
    let rules: Vec<RuleCoverage> = stats
        .into_iter()
        .map(|stats| {
            let applied = applied(&stats.rule, exchanges);
            let why_not = (applied == 0).then(|| match (unattributed, none) {
                (Some(why), true) => format!("its cases were not judged: {why}"),
                (None, true) => silent(before, declared),
                (_, false) => why_not(&stats, exchanges, declared, cases.len()),
            });
            RuleCoverage {
                stats,
                applied,
                why_not,
            }
        })
        .collect();
    let not_tested = match rules.iter().any(|r| r.applied > 0) {
        true => None,
        false => rules
            .first()
            .and_then(|r| r.why_not.clone())
            .map(|why| format!("none of its rules reached the agent's traffic: {why}")),
    };
    let inside: HashSet<u64> = cases.iter().flat_map(|c| c.window_ids()).collect();
    Coverage {
        scenario: name.to_string(),
        exchanges: exchanges.len(),
        outside_cases: exchanges.iter().filter(|e| !inside.contains(&e.id)).count(),
        cases: cases.len(),
        // A scenario whose chaos never happened judged nothing it is about.
        judged: match not_tested {
            Some(_) => 0,
            None => cases.iter().filter(|c| c.not_judged.is_none()).count(),
        },
        rules,
        not_tested,
        // Unattributed calls (a lost trace id) crossed the proxy, though none is the
        // scenario's: not silence.
        silent: (none && cases.iter().all(sent_nothing)).then(|| silent(before, declared)),
        outcomes: super::outcome::counts(cases.iter().filter_map(|c| c.outcome.as_ref())),
    }
}

/// Whether a case is known to have sent nothing through the proxy: its attributed traffic
/// is empty or, unattributed, nothing at all was recorded while it ran (journal ids start
/// at 1, so an empty window ends before it starts).
fn sent_nothing(c: &CaseResult) -> bool {
    match &c.traffic {
        Some(t) => t.is_empty(),
        None => c.window.1 < c.window.0,
    }
}

/// Why nothing crossed the proxy while a scenario ran. Without traffic before it, the
/// agent's calls bypass the proxy (`Declared::bypass` says why, for the way it runs); with
/// some, it sent nothing in this scenario alone, which an agent that answers from a cache
/// of earlier cases does.
fn silent(before: Before, declared: &Declared) -> String {
    match (before.exchanges, before.resets) {
        (0, _) => format!(
            "no request crossed the proxy while it ran: {}",
            declared.bypass()
        ),
        (n, false) => format!(
            "the agent sent nothing through the proxy in this scenario but did earlier in the \
             run ({n} request(s)): does it answer from a cache of earlier cases? set \
             `agent.reset_endpoint` so that each case starts clean"
        ),
        (n, true) => format!(
            "the agent sent nothing through the proxy in this scenario but did earlier in the \
             run ({n} request(s)), though `agent.reset_endpoint` is called before each case: \
             does it answer from a cache its reset does not clear?"
        ),
    }
}

impl Coverage {
    /// Why a cell with this `when` tests nothing under this scenario: its chaos never
    /// reached the agent (the kind the `when` is about, for the `*_faults_active` ones).
    pub(super) fn untested(&self, when: When) -> Option<String> {
        let kind = match when {
            When::ToolFaultsActive => Some(RuleKind::ToolFault),
            When::LlmFaultsActive => Some(RuleKind::LlmFault),
            When::Always | When::AnyChaosActive | When::NoChaos => None,
        };
        let Some(kind) = kind else {
            return self.not_tested.clone();
        };
        let mut of_kind = self.rules.iter().filter(|r| r.stats.kind == kind);
        let first = of_kind.clone().next()?;
        if of_kind.any(|r| r.applied > 0) {
            return None;
        }
        let what = match kind {
            RuleKind::ToolFault => "no tool fault",
            RuleKind::LlmFault | RuleKind::ContextAttack => "no LLM fault",
        };
        let why = first.why_not.as_deref().unwrap_or("it never fired");
        Some(format!("{what} reached the agent's traffic: {why}"))
    }
}

/// Records of `rule` applied in `exchanges` (faults and attacks alike).
fn applied(rule: &str, exchanges: &[Arc<Exchange>]) -> usize {
    exchanges
        .iter()
        .flat_map(|e| e.fault.iter().chain(&e.attacks))
        .filter(|f| f.rule == rule && f.applied)
        .count()
}

/// The likely reason a rule never reached the traffic while some traffic crossed the
/// proxy, in words (`silent` says why none did).
fn why_not(
    rule: &RuleStats,
    exchanges: &[Arc<Exchange>],
    declared: &Declared,
    cases: usize,
) -> String {
    if rule.matched == 0 {
        let url = rule
            .match_url
            .as_deref()
            .map(|u| format!(" with match_url `{u}`"))
            .unwrap_or_default();
        let hint = hint(rule, declared);
        return format!(
            "no request matched {}{url}{hint}; the proxy saw {}",
            rule.scope,
            seen(exchanges)
        );
    }
    if rule.fired == 0 {
        return never_fired::never_fired(rule, cases);
    }
    let note = exchanges
        .iter()
        .flat_map(|e| e.fault.iter().chain(&e.attacks))
        .find(|f| f.rule == rule.rule)
        .and_then(|f| f.note.clone())
        .unwrap_or_else(|| "the request ended before it could act".into());
    format!(
        "it fired {} time(s) but could not be applied: {note}",
        rule.fired
    )
}

/// What the config says about where a rule's traffic should come from.
fn hint(rule: &RuleStats, declared: &Declared) -> String {
    match rule.kind {
        RuleKind::ToolFault | RuleKind::ContextAttack => {
            let named = rule
                .tool
                .as_deref()
                .and_then(|n| declared.tools.iter().find(|t| t.name == n));
            let mut said = match named {
                Some(t) => format!(" (tools: `{}` is {})", t.name, t.match_url.join(", ")),
                None => String::new(),
            };
            let mut targets: Vec<(String, Vec<String>)> = named
                .map(|t| (format!("tool `{}`", t.name), t.match_url.to_vec()))
                .into_iter()
                .collect();
            targets.extend(
                rule.match_url
                    .iter()
                    .map(|u| (rule.scope.clone(), vec![u.clone()])),
            );
            if let Some(why) = declared.no_proxy_in(&targets) {
                said.push_str(&format!(" ({why})"));
            }
            said
        }
        RuleKind::LlmFault if declared.llm.is_empty() => " (LLM calls are recognised by their \
             API path, e.g. /v1/chat/completions, or declared under llm:)"
            .into(),
        RuleKind::LlmFault => {
            let llms: Vec<(String, Vec<String>)> = declared
                .llm
                .iter()
                .map(|l| {
                    (
                        format!("the {} LLM", l.provider.as_str()),
                        l.match_url.to_vec(),
                    )
                })
                .collect();
            let why = declared.no_proxy_in(&llms);
            why.map(|w| format!(" ({w})")).unwrap_or_default()
        }
    }
}

/// The origins the proxy saw, with their kind and count, most frequent first (at most 6).
pub(super) fn seen(exchanges: &[Arc<Exchange>]) -> String {
    let mut by: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in exchanges {
        let mut kind = match &e.target {
            Target::Tool { name } => format!("tool {name}"),
            other @ (Target::Llm { .. } | Target::Embeddings { .. } | Target::Other) => {
                other.kind().to_string()
            }
        };
        // An MCP message by its method and tool; one that is not JSON-RPC says what it was.
        if let Some(m) = &e.mcp {
            kind.push_str(&format!(", MCP {}", m.method));
            if let Some(t) = m.tool_call() {
                kind.push_str(&format!(" {t}"));
            }
            if let Some(note) = &m.note {
                kind.push_str(&format!(": {note}"));
            }
        }
        *by.entry((origin(&e.request.url).to_string(), kind))
            .or_default() += 1;
    }
    let mut list: Vec<_> = by.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shown: Vec<String> = list
        .iter()
        .take(6)
        .map(|((o, kind), n)| format!("{o} ({kind}) ×{n}"))
        .collect();
    let more = list.len().saturating_sub(6);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{}{tail}", shown.join(", "))
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    url[after..].find('/').map_or(url, |i| &url[..after + i])
}

#[cfg(test)]
mod tests;
