//! What requests a rule is about: its scope (a tool, a provider, any tool, the context
//! attacks' tool responses and LLM requests) and the MCP messages it takes (its
//! `mcp_method`, else its kind's default methods, and its `mcp_tool`).
#![warn(clippy::wildcard_enum_match_arm)]

use crate::chaos::spec::{AttackMode, McpSelect};
use crate::exchange::{McpCall, Provider, TOOLS_CALL, TOOLS_LIST, Target};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Scope {
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
    pub(super) fn applies(&self, target: &Target) -> bool {
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

    pub(super) fn named(&self) -> bool {
        !matches!(self, Scope::AnyTool | Scope::Llm(None))
    }

    /// The tool this scope names, if one.
    pub(super) fn tool(&self) -> Option<&str> {
        match self {
            Scope::Tool(name) => Some(name),
            Scope::Attack { tool: Some(t), .. } if t != "*" => Some(t),
            Scope::AnyTool | Scope::Llm(_) | Scope::Attack { .. } => None,
        }
    }

    /// In words, for reports that explain why a rule never fired.
    pub(super) fn describe(&self) -> String {
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

/// The MCP methods an attack takes without `mcp_method`: a tool result's text, or the
/// tool list; the attacks on LLM requests take none.
pub(super) fn attack_methods(mode: &AttackMode) -> &'static [&'static str] {
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
#[derive(Debug)]
pub(super) struct McpRule {
    pub select: McpSelect,
    pub methods: &'static [&'static str],
    pub only: bool,
}

impl McpRule {
    /// `scope` (in words) with the MCP messages the rule takes.
    pub(super) fn describe(&self, scope: String) -> String {
        if !self.only && !self.select.any() {
            return scope;
        }
        let methods = match &self.select.method {
            Some(g) => g.glob().glob().to_string(),
            None => self.methods.join(", "),
        };
        let tool = match &self.select.tool {
            Some(g) => format!(" of MCP tools `{}`", g.glob().glob()),
            None => String::new(),
        };
        format!("{scope}, MCP {methods}{tool}")
    }

    /// Whether the rule takes this request as MCP sees it: an MCP request of one of its
    /// methods (and of its `mcp_tool`, for a `tools/call`), or a request that is not MCP
    /// when the rule is not MCP's alone. `initialize`, listings and notifications are left
    /// alone unless a rule's methods name them.
    pub(super) fn takes(&self, mcp: Option<&McpCall>) -> bool {
        let Some(call) = mcp else {
            return !self.only && !self.select.any();
        };
        let method = match &self.select.method {
            Some(g) => g.is_match(&call.method),
            None => self.methods.contains(&call.method.as_str()),
        };
        let tool = match (&self.select.tool, call.tool_call()) {
            (None, _) => true,
            (Some(g), Some(t)) => g.is_match(t),
            (Some(_), None) => call.method != TOOLS_CALL,
        };
        method && tool
    }
}
