//! Installed rules: a `CompiledChaos` (checked and compiled once, at load or by the control
//! API) given what the hot path needs besides: scopes and per-rule call counters. Which rule
//! applies to a request, and whether it fires, is decided here.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use globset::GlobSet;

use super::canary::Canary;
use super::replay::{Replay, ReplayTable};
use super::rng;
use super::stats::{RuleKind, RuleStats};
use crate::config::chaos::{
    AttackMode, ChaosSpec, Common, CompiledChaos, LlmMode, McpSelect, Rule, ToolMode,
};
use crate::exchange::{McpCall, Provider, TOOLS_CALL, TOOLS_LIST, Target};

/// What a rule does when it fires.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    Tool(ToolMode),
    Llm(LlmMode),
}

/// A rule that fired for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired<T> {
    pub rule_id: Arc<str>,
    pub what: T,
    /// The rule's draw for this call; picks payloads deterministically.
    pub draw: u64,
    /// The rule's `mcp_tool` glob: edits of a tool list touch only the tools it matches.
    pub mcp_tool: Option<ToolGlob>,
}

/// An `mcp_tool` glob, compared by its text.
#[derive(Debug, Clone)]
pub struct ToolGlob(pub globset::GlobMatcher);

impl PartialEq for ToolGlob {
    fn eq(&self, other: &Self) -> bool {
        self.0.glob() == other.0.glob()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Scope {
    /// `tool: "*"`: every request that is not an LLM call (nor an embeddings call).
    AnyTool,
    Tool(String),
    Llm(Option<Provider>),
    /// Context attacks: tool responses and LLM requests, narrowed by tool/provider.
    Attack {
        tool: Option<String>,
        provider: Option<Provider>,
    },
}

impl Scope {
    /// Embeddings calls are model infrastructure, neither an LLM call nor a tool: no scope
    /// applies to them.
    fn applies(&self, target: &Target) -> bool {
        let (tool, provider) = match target {
            Target::Embeddings { .. } => return false,
            Target::Llm { provider } => (None, Some(*provider)),
            Target::Tool { name } => (Some(name.as_str()), None),
            Target::Other => (None, None),
        };
        match self {
            Scope::AnyTool => provider.is_none(),
            Scope::Tool(name) => tool == Some(name.as_str()),
            Scope::Llm(want) => provider.is_some_and(|got| want.is_none_or(|p| p == got)),
            Scope::Attack {
                tool: want_tool,
                provider: want_provider,
            } => match provider {
                Some(got) => want_provider.is_none_or(|p| p == got) && want_tool.is_none(),
                None => {
                    want_provider.is_none()
                        && want_tool
                            .as_deref()
                            .is_none_or(|t| t == "*" || Some(t) == tool)
                }
            },
        }
    }

    fn named(&self) -> bool {
        !matches!(self, Scope::AnyTool | Scope::Llm(None))
    }

    /// The tool this scope names, if one.
    fn tool(&self) -> Option<&str> {
        match self {
            Scope::Tool(name) => Some(name),
            Scope::Attack { tool: Some(t), .. } if t != "*" => Some(t),
            Scope::AnyTool | Scope::Llm(_) | Scope::Attack { .. } => None,
        }
    }

    /// In words, for reports that explain why a rule never fired.
    fn describe(&self) -> String {
        match self {
            Scope::AnyTool => "any request that is not an LLM call".into(),
            Scope::Tool(name) => format!("calls to tool `{name}`"),
            Scope::Llm(None) => "LLM calls".into(),
            Scope::Llm(Some(p)) => format!("{} LLM calls", p.as_str()),
            Scope::Attack { tool, provider } => match (tool.as_deref(), provider) {
                (_, Some(p)) => format!("{} LLM calls", p.as_str()),
                (Some(t), None) if t != "*" => format!("responses of tool `{t}`"),
                _ => "tool responses and LLM calls".into(),
            },
        }
    }
}

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
    stream: u64,
    calls: AtomicU64,
    fired: AtomicU64,
    kind: RuleKind,
    mode: &'static str,
    match_url: Option<String>,
    /// `mcp_tool`, `mcp_method`; and which MCP methods the rule takes without
    /// `mcp_method`, and whether it applies to MCP requests only.
    mcp: McpSelect,
    mcp_methods: &'static [&'static str],
    mcp_only: bool,
    what: T,
}

impl<T: Clone> Compiled<T> {
    /// Counts this matching call and says whether the rule fires for it.
    fn trigger(&self, seed: u64) -> Option<Fired<T>> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let draw = rng::draw(seed, self.stream, n);
        let fires = n > self.after_calls && rng::unit(draw) < self.probability;
        if fires {
            self.fired.fetch_add(1, Ordering::Relaxed);
        }
        fires.then(|| Fired {
            rule_id: self.id.clone(),
            what: self.what.clone(),
            draw,
            mcp_tool: self.mcp.tool.clone().map(ToolGlob),
        })
    }

    fn stats(&self) -> RuleStats {
        RuleStats {
            rule: self.id.to_string(),
            kind: self.kind,
            mode: self.mode.to_string(),
            matched: self.calls.load(Ordering::Relaxed),
            fired: self.fired.load(Ordering::Relaxed),
            scope: self.describe(),
            tool: self.scope.tool().map(str::to_string),
            match_url: self.match_url.clone(),
            probability: self.probability,
            after_calls: self.after_calls,
        }
    }

    /// The scope in words, with the MCP messages the rule takes.
    fn describe(&self) -> String {
        let scope = self.scope.describe();
        if !self.mcp_only && !self.mcp.any() {
            return scope;
        }
        let methods = match &self.mcp.method {
            Some(g) => g.glob().glob().to_string(),
            None => self.mcp_methods.join(", "),
        };
        let tool = match &self.mcp.tool {
            Some(g) => format!(" of MCP tools `{}`", g.glob().glob()),
            None => String::new(),
        };
        format!("{scope}, MCP {methods}{tool}")
    }

    fn matches(&self, target: &Target, url_hits: &[usize], mcp: Option<&McpCall>) -> bool {
        self.scope.applies(target)
            && self.glob.is_none_or(|g| url_hits.contains(&g))
            && self.takes(mcp)
    }

    /// Whether the rule takes this request as MCP sees it: an MCP request of one of its
    /// methods (and of its `mcp_tool`, for a `tools/call`), or a request that is not MCP
    /// when the rule is not MCP's alone. `initialize`, listings and notifications are left
    /// alone unless a rule's methods name them.
    fn takes(&self, mcp: Option<&McpCall>) -> bool {
        let Some(call) = mcp else {
            return !self.mcp_only && !self.mcp.any();
        };
        let method = match &self.mcp.method {
            Some(g) => g.is_match(&call.method),
            None => self.mcp_methods.contains(&call.method.as_str()),
        };
        let tool = match (&self.mcp.tool, call.tool_call()) {
            (None, _) => true,
            (Some(g), Some(t)) => g.is_match(t),
            (Some(_), None) => call.method != TOOLS_CALL,
        };
        method && tool
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
                (scope, RuleKind::ToolFault, r.mode.name()),
                Fault::Tool(r.mode.clone()),
                next(&[TOOLS_CALL], r.mode.mcp_only()),
            ));
        }
        for (i, r) in spec.llm_faults.iter().enumerate() {
            let scope = Scope::Llm(r.common.provider);
            faults.push(compiled(
                r,
                &format!("llm_faults[{i}]"),
                (scope, RuleKind::LlmFault, r.mode.name()),
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
                (scope, RuleKind::ContextAttack, r.mode.name()),
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
        if let (Some(table), Target::Tool { name }) = (&self.replay, target)
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
            .filter_map(|r| r.trigger(seed))
            .collect();
        decision
    }
}

/// The MCP methods an attack takes without `mcp_method`: a tool result's text, or the
/// tool list; the attacks on LLM requests take none.
fn attack_methods(mode: &AttackMode) -> &'static [&'static str] {
    match mode {
        AttackMode::IndirectInjection { .. } => &[TOOLS_CALL],
        AttackMode::McpToolPoisoning { .. }
        | AttackMode::McpRugPull { .. }
        | AttackMode::McpShadowing { .. } => &[TOOLS_LIST],
        AttackMode::MemoryPoisoning { .. }
        | AttackMode::Overflow { .. }
        | AttackMode::ConflictingContext { .. }
        | AttackMode::InjectionViaContext { .. } => &[],
    }
}

/// How a rule meets MCP: its selectors, its default methods, whether it is MCP's alone.
struct McpRule {
    select: McpSelect,
    methods: &'static [&'static str],
    only: bool,
}

fn compiled<M, T>(
    rule: &Rule<M>,
    default_id: &str,
    (scope, kind, mode): (Scope, RuleKind, &'static str),
    what: T,
    (glob, mcp): (Option<usize>, McpRule),
) -> Compiled<T> {
    let Common {
        id,
        match_url,
        probability,
        after_calls,
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
        calls: AtomicU64::new(0),
        fired: AtomicU64::new(0),
        kind,
        mode,
        match_url: match_url.clone(),
        mcp: mcp.select,
        mcp_methods: mcp.methods,
        mcp_only: mcp.only,
        what,
    }
}
