//! Installed rules: a `CompiledChaos` (checked and compiled once, at load or by the control
//! API) given what the hot path needs besides: scopes and per-rule call counters. Which rule
//! applies to a request, and whether it fires, is decided here.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use globset::GlobSet;

use super::Fault;
use super::canary::Canary;
pub use super::fired::{Fired, ToolGlob};
use super::replay::{Replay, ReplayTable};
use super::rng;
use super::scope::{McpRule, Scope, attack_methods};
use super::stats::{RuleKind, RuleStats};
use crate::chaos::spec::{AttackMode, ChaosSpec, Common, CompiledChaos, Rule};
use crate::exchange::{McpCall, TOOLS_CALL, Target};

#[derive(Debug)]
struct Compiled<T> {
    id: Arc<str>,
    scope: Scope,
    /// Index of this rule's `match_url` in the GlobSet.
    glob: Option<usize>,
    /// Literal characters in `match_url`: longer literal patterns are more specific.
    literal_len: usize,
    probability: f64,
    after_calls: u64,
    /// At most this many firings (`times`); `None`: no limit.
    times: Option<u64>,
    stream: u64,
    calls: AtomicU64,
    fired: AtomicU64,
    /// A rug pull has told (or is telling) its sessionless traffic the list changed.
    notified: crate::mcp::Told,
    /// A rug pull's sessions, each counted on its own.
    sessions: super::rug_pull::Sessions,
    kind: RuleKind,
    mode: crate::exchange::FaultKind,
    match_url: Option<String>,
    /// The MCP messages the rule takes.
    mcp: McpRule,
    what: T,
}

impl<T: Clone> Compiled<T> {
    /// Counts this matching call and says whether the rule fires for it.
    fn trigger(&self, seed: u64) -> Option<Fired<T>> {
        self.trigger_past(seed, None)
    }

    /// `trigger`, where `past` says whether this call is past `after_calls` when something
    /// else counts that (a rug pull's session); `None`: the rule's own count does.
    fn trigger_past(&self, seed: u64, past: Option<bool>) -> Option<Fired<T>> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let draw = rng::draw(seed, self.stream, n);
        let past = past.unwrap_or(n > self.after_calls);
        let fires = past && rng::unit(draw) < self.probability && self.claim();
        fires.then(|| Fired {
            rule_id: self.id.clone(),
            what: self.what.clone(),
            draw,
            mcp_tool: self.mcp.select.tool.clone().map(ToolGlob),
            notice: None,
        })
    }

    /// Counts a firing, unless `times` were already fired: checked and counted at once, so
    /// concurrent calls of one rule set never fire more than `times` between them.
    fn claim(&self) -> bool {
        let Some(max) = self.times else {
            self.fired.fetch_add(1, Ordering::Relaxed);
            return true;
        };
        self.fired
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| {
                (f < max).then_some(f + 1)
            })
            .is_ok()
    }

    fn stats(&self) -> RuleStats {
        RuleStats {
            rule: self.id.to_string(),
            kind: self.kind,
            mode: self.mode,
            matched: self.calls.load(Ordering::Relaxed),
            fired: self.fired.load(Ordering::Relaxed),
            scope: self.mcp.describe(self.scope.describe()),
            tool: self.scope.tool().map(str::to_string),
            match_url: self.match_url.clone(),
            probability: self.probability,
            after_calls: self.after_calls,
            times: self.times,
        }
    }

    fn matches(&self, target: &Target, url_hits: &[usize], mcp: Option<&McpCall>) -> bool {
        self.scope.applies(target)
            && self.glob.is_none_or(|g| url_hits.contains(&g))
            && self.mcp.takes(mcp)
    }
}

impl Compiled<AttackMode> {
    /// The MCP session a rug pull counts this message in (its own listings), if any.
    fn rug_session<'a>(&self, mcp: Option<&'a McpCall>) -> Option<&'a str> {
        let rug = matches!(self.what, AttackMode::McpRugPull { .. });
        mcp.filter(|_| rug).and_then(|c| c.session.as_deref())
    }

    /// `trigger`, a rug pull counting a session's listings on their own.
    fn fire(&self, seed: u64, mcp: Option<&McpCall>) -> Option<Fired<AttackMode>> {
        // A rug pull changes tool lists: a tool call (under an `mcp_method` that takes it)
        // is no listing, and its answer carries only the notice (`list_changed`).
        let rug = matches!(self.what, AttackMode::McpRugPull { .. });
        if rug && mcp.and_then(McpCall::tool_call).is_some() {
            return None;
        }
        let listed = self.rug_session(mcp).and_then(|s| self.sessions.listed(s));
        self.trigger_past(seed, listed.map(|n| n > self.after_calls))
    }

    /// A rug pull tells the session whose tool list it is about to change: once the first
    /// listings (`after_calls`) went by untouched, the next `tools/call` answer carries
    /// `notifications/tools/list_changed`, until one went out (a JSON answer has no room
    /// for it, a fault may answer in its place: the next call tries again). The claim is
    /// taken here, so parallel calls of the session do not each carry a notice. Not a
    /// draw: nothing is counted.
    fn list_changed(
        &self,
        target: &Target,
        url_hits: &[usize],
        mcp: Option<&McpCall>,
    ) -> Option<Fired<AttackMode>> {
        mcp.and_then(McpCall::tool_call)?;
        let applies = matches!(self.what, AttackMode::McpRugPull { .. })
            && self.scope.applies(target)
            && self.glob.is_none_or(|g| url_hits.contains(&g));
        if !applies {
            return None;
        }
        let after = self.after_calls.max(1);
        // A session is told once it has listed; sessionless traffic by the rule's count.
        let notice = match self.rug_session(mcp) {
            Some(s) => self.sessions.to_tell(s, after),
            None => (self.calls.load(Ordering::Relaxed) >= after)
                .then(|| crate::mcp::Notice::claim(&self.notified))
                .flatten(),
        };
        notice.map(|n| Fired {
            rule_id: self.id.clone(),
            what: self.what.clone(),
            draw: 0,
            mcp_tool: None,
            notice: Some(n),
        })
    }
}

/// The active rules. Swapped whole by the engine; counters live and die with it.
#[derive(Debug)]
pub struct RuleSet {
    pub spec: ChaosSpec,
    /// Canaries to plant in tool responses (`no_exfiltration`); set by runs, never by specs.
    pub canary: Option<Arc<Canary>>,
    /// A replay session's recorded tool answers (replay runs), consulted before the rules.
    pub replay: Option<Arc<ReplayTable>>,
    faults: Vec<Compiled<Fault>>,
    attacks: Vec<Compiled<AttackMode>>,
    globs: GlobSet,
}

/// What the rules decided for one request.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub fault: Option<Fired<Fault>>,
    pub attacks: Vec<Fired<AttackMode>>,
    /// Plant canaries in this response and look for others in this request.
    pub canary: Option<Arc<Canary>>,
    /// Whether a faulted response carries `x-flakestorm-fault` (`mark_responses`).
    pub mark: bool,
    /// A replay session answers this tool call (or misses it) instead of its upstream;
    /// no fault or attack applies then.
    pub replay: Option<Replay>,
    /// A replay session's tape answers this call by its request key (the proxy reads the
    /// body to key it), or `on_miss` applies.
    pub tape: Option<(Arc<crate::tape::TapeTable>, crate::config::replays::OnMiss)>,
    /// For rules installed for the request's trace id (one case of a run): that case's own
    /// memory of each upstream's response format, dropped with its rules.
    pub formats: Option<Formats>,
}

/// Whether each upstream (by `format_key`) last answered JSON.
pub type Formats = Arc<std::sync::Mutex<std::collections::HashMap<String, bool>>>;

impl RuleSet {
    /// The runtime form of rules compiled at load: scopes and counters only, nothing is
    /// checked again (ranges and globs were, by `CompiledChaos::compile`).
    pub fn new(chaos: &CompiledChaos) -> RuleSet {
        let spec = chaos.spec();
        let mut glob_of = chaos.glob_of().iter().copied();
        let mut mcp_of = chaos.mcp_of().iter().cloned();
        let mut next = |methods, only| {
            let mcp = McpRule {
                select: mcp_of.next().unwrap_or_default(),
                methods,
                only,
            };
            (glob_of.next().flatten(), mcp)
        };
        let mut faults = vec![];
        for (i, r) in spec.tool_faults.iter().enumerate() {
            let scope = match r.common.tool.as_deref() {
                None | Some("*") => Scope::AnyTool,
                Some(name) => Scope::Tool(name.to_string()),
            };
            faults.push(compiled(
                r,
                &format!("tool_faults[{i}]"),
                (scope, RuleKind::ToolFault, r.mode.kind()),
                Fault::Tool(r.mode.clone()),
                next(&[TOOLS_CALL], r.mode.mcp_only()),
            ));
        }
        for (i, r) in spec.llm_faults.iter().enumerate() {
            let scope = Scope::Llm(r.common.provider);
            faults.push(compiled(
                r,
                &format!("llm_faults[{i}]"),
                (scope, RuleKind::LlmFault, r.mode.kind()),
                Fault::Llm(r.mode.clone()),
                next(&[], false),
            ));
        }
        let mut attacks = vec![];
        for (i, r) in spec.context_attacks.rules().iter().enumerate() {
            let scope = Scope::Attack {
                tool: r.common.tool.clone(),
                provider: r.common.provider,
            };
            let mut rule = compiled(
                r,
                &format!("context_attacks[{i}]"),
                (scope, RuleKind::ContextAttack, r.mode.kind()),
                r.mode.clone(),
                next(attack_methods(&r.mode), r.mode.mcp_only()),
            );
            // A rug pull changes the list once it has been read: after the first listing.
            if matches!(r.mode, AttackMode::McpRugPull { .. }) && r.common.after_calls.is_none() {
                rule.after_calls = 1;
            }
            attacks.push(rule);
        }
        RuleSet {
            spec: spec.clone(),
            canary: None,
            replay: None,
            faults,
            attacks,
            globs: chaos.globs().clone(),
        }
    }

    /// These rules, planting `canary` in tool responses.
    pub fn with_canary(mut self, canary: Option<Arc<Canary>>) -> Self {
        self.canary = canary;
        self
    }

    /// These rules, answering tool calls from a replay session first.
    pub fn with_replay(mut self, replay: Option<Arc<ReplayTable>>) -> Self {
        self.replay = replay;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty() && self.attacks.is_empty()
    }

    /// Each rule's counters since it was installed, faults first, in spec order.
    pub fn stats(&self) -> Vec<RuleStats> {
        let faults = self.faults.iter().map(Compiled::stats);
        faults
            .chain(self.attacks.iter().map(Compiled::stats))
            .collect()
    }

    /// Offers the call to the matching fault rules, most specific first (longest literal
    /// `match_url`, then named tool/provider, then declaration order) until one fires, so
    /// rules with probabilities mix; every matching attack decides on its own.
    pub fn decide(&self, url: &str, target: &Target, mcp: Option<&McpCall>, seed: u64) -> Decision {
        let mut decision = Decision {
            canary: self.canary.clone(),
            mark: self.spec.mark_responses,
            ..Decision::default()
        };
        // A session's tool answers are for tool calls: an MCP `tools/call` by its MCP tool
        // (the rest of an MCP session is no tool call), an HTTP call by its `tools:` name.
        let answered = match (mcp, target) {
            (Some(call), _) => call.tool_call(),
            (None, Target::Tool { name }) => Some(name.as_str()),
            (None, Target::Llm { .. } | Target::Embeddings { .. } | Target::Other) => None,
        };
        if let (Some(table), Some(name)) = (&self.replay, answered)
            && let Some(replay) = table.answer(name)
        {
            decision.replay = Some(replay);
            return decision;
        }
        if let Some(table) = &self.replay
            && let Some(tape) = table.tape_for(target)
        {
            decision.tape = Some((tape.clone(), table.on_miss()));
            return decision;
        }
        if self.is_empty() {
            return decision;
        }
        let hits = self.globs.matches(url);
        let mut matching: Vec<(usize, &Compiled<Fault>)> = self
            .faults
            .iter()
            .enumerate()
            .filter(|(_, r)| r.matches(target, &hits, mcp))
            .collect();
        matching.sort_by_key(|(i, r)| (std::cmp::Reverse((r.literal_len, r.scope.named())), *i));
        decision.fault = matching.iter().find_map(|(_, r)| r.trigger(seed));
        decision.attacks = self
            .attacks
            .iter()
            .filter(|r| r.matches(target, &hits, mcp))
            .filter_map(|r| r.fire(seed, mcp))
            .collect();
        let notices = self.attacks.iter();
        decision
            .attacks
            .extend(notices.filter_map(|r| r.list_changed(target, &hits, mcp)));
        decision
    }
}

fn compiled<M, T>(
    rule: &Rule<M>,
    default_id: &str,
    (scope, kind, mode): (Scope, RuleKind, crate::exchange::FaultKind),
    what: T,
    (glob, mcp): (Option<usize>, McpRule),
) -> Compiled<T> {
    let Common {
        id,
        match_url,
        probability,
        after_calls,
        times,
        ..
    } = &rule.common;
    let id: Arc<str> = id.clone().unwrap_or_else(|| default_id.to_string()).into();
    let literal_len = match_url
        .as_deref()
        .map_or(0, |p| p.chars().filter(|c| !"*?[]{}".contains(*c)).count());
    Compiled {
        stream: rng::stream(&id),
        id,
        scope,
        glob,
        literal_len,
        probability: probability.unwrap_or(1.0),
        after_calls: after_calls.unwrap_or(0),
        times: *times,
        calls: AtomicU64::new(0),
        fired: AtomicU64::new(0),
        notified: Default::default(),
        sessions: Default::default(),
        kind,
        mode,
        match_url: match_url.clone(),
        mcp,
        what,
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
