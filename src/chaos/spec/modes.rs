//! The closed mode enums of chaos rules: what each tool fault, LLM fault and context
//! attack takes, with defaults, and their stable names (metrics labels, journals).

use crate::exchange::FaultKind;
use serde::{Deserialize, Serialize};

/// What a timed-out call ends with once `delay_ms` has passed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutEnd {
    /// A `504 Gateway Timeout`, as a gateway in front of the service would answer.
    #[default]
    #[serde(rename = "status_504", alias = "status504")]
    Status504,
    /// The connection closes with no response, as a dead upstream behind a load balancer.
    Close,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolMode {
    /// Hold the call `delay_ms`, then `then`.
    Timeout {
        #[serde(default = "d30000")]
        delay_ms: u64,
        #[serde(default)]
        then: TimeoutEnd,
    },
    /// Answer `error_code` without calling the tool.
    Error {
        #[serde(default = "d503")]
        error_code: u16,
        #[serde(default)]
        message: Option<String>,
    },
    /// The tool's real response with its body corrupted (same content type).
    Malformed {},
    /// The real response, delayed by `delay_ms` and optionally dripped at a byte rate.
    Slow {
        #[serde(default = "d3000")]
        delay_ms: u64,
        #[serde(default)]
        bytes_per_second: Option<u64>,
    },
    /// The real status and headers with `payload` as the body.
    MaliciousResponse { payload: String },
    /// The connection drops after `after_bytes` of the body.
    Reset {
        #[serde(default)]
        after_bytes: u64,
    },
    /// The body ends cleanly after `after_bytes` (no length header): a short read.
    Partial {
        #[serde(default = "d64")]
        after_bytes: u64,
    },
    /// MCP: the tool call answered as a failed tool run (a result with `isError: true`).
    McpToolError {
        #[serde(default)]
        message: Option<String>,
    },
    /// MCP: the call answered with a JSON-RPC error (`-32603` internal error by default).
    McpError {
        #[serde(default = "d_internal")]
        code: i32,
        #[serde(default)]
        message: Option<String>,
    },
    /// MCP: the session is gone: `404` to a request that carries `Mcp-Session-Id`.
    McpSessionExpired {},
    /// The real response with chosen values (`fields:` JSON paths, else its numbers, dates
    /// and short strings) replaced by believable canaries; status, headers, shape kept.
    Corrupt {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fields: Vec<String>,
    },
    /// A successful response whose body is an empty value of its own kind (`[]`, `{}`, ``).
    Empty {},
    /// The real response with its dates (and Unix times under time keys) `days` older.
    Stale { days: u32 },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftType {
    #[default]
    JsonFieldRename,
    VerbosityShift,
    FormatChange,
    RefusalRephrase,
    ToneShift,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    #[default]
    Subtle,
    Moderate,
    Significant,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Expand,
    Compress,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corruption {
    /// Tool-call arguments that are not valid JSON.
    #[default]
    InvalidJson,
    /// A tool name the agent never declared.
    UnknownTool,
}

// Provider-facing forms of faults: the wire formats (`llm`) act on them.
pub use crate::llm::signals::{ClientErrorKind, FilterSignal, ResponsesEvent};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum LlmMode {
    Timeout {
        #[serde(default = "d15000")]
        delay_ms: u64,
        #[serde(default)]
        then: TimeoutEnd,
    },
    /// Content cut to `max_tokens` tokens with the provider's truncation finish reason.
    TruncatedResponse {
        #[serde(default = "d10")]
        max_tokens: u32,
    },
    /// 429 with the provider's error body and `retry-after`.
    RateLimit {
        #[serde(default = "d1f")]
        retry_after_s: f64,
        /// OpenAI `insufficient_quota`: not retryable (`x-should-retry: false`).
        #[serde(default)]
        quota: bool,
    },
    /// A well-formed answer with no content.
    Empty {},
    /// 200 with a body that is not what the SDK expects (not JSON / invalid frames).
    Garbage {},
    ResponseDrift {
        #[serde(default)]
        drift_type: DriftType,
        #[serde(default)]
        severity: Severity,
        #[serde(default)]
        direction: Direction,
        #[serde(default = "d2f")]
        factor: f64,
    },
    /// 500/503 (Anthropic: 529 `overloaded_error`). `in_stream`: a streaming answer starts
    /// and then carries the provider's mid-stream error event, after `after_events`
    /// content events (default 1); `responses_event` picks the Responses API's form.
    ServerError {
        #[serde(default)]
        status: Option<u16>,
        #[serde(default)]
        in_stream: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_events: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        responses_event: Option<ResponsesEvent>,
    },
    /// The stream ends without its terminal event after `after_events` events. `loud`:
    /// the connection is dropped instead of ending cleanly.
    StreamCut {
        #[serde(default = "d2u")]
        after_events: u32,
        #[serde(default)]
        loud: bool,
    },
    SlowStream {
        #[serde(default = "d2000")]
        first_token_ms: u64,
        #[serde(default = "d200")]
        between_ms: u64,
    },
    ToolCallCorruption {
        #[serde(default)]
        corruption: Corruption,
    },
    ContextLengthExceeded {},
    /// The provider refuses the request (a bad key, billing, permission, an unknown model,
    /// a body too large): never retried by the SDKs.
    ClientError {
        #[serde(default)]
        error: ClientErrorKind,
    },
    /// A gateway in front of the provider (a load balancer, an API gateway, a corporate
    /// proxy) answers with its own HTML error page instead of the provider's JSON.
    HtmlErrorPage {
        #[serde(default)]
        status: Option<u16>,
    },
    /// The provider's content filter or safety system stops the answer, blocks the
    /// prompt, or the model refuses, each in the provider's own form.
    ContentFilter {
        #[serde(default)]
        signal: FilterSignal,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    Prepend,
    #[default]
    Append,
    Replace,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AttackMode {
    /// Payloads hidden in tool responses and in tool-result messages sent to the LLM.
    IndirectInjection {
        #[serde(default)]
        payloads: Vec<String>,
        #[serde(default)]
        payload: Option<String>,
    },
    /// Rewrites the last user message of outgoing LLM requests.
    MemoryPoisoning {
        payload: String,
        #[serde(default)]
        strategy: Strategy,
    },
    /// `inject_tokens` of filler in the outgoing LLM request.
    Overflow {
        #[serde(default = "d50000")]
        inject_tokens: u32,
    },
    /// A system instruction that contradicts the agent's own.
    ConflictingContext {
        #[serde(default)]
        payload: Option<String>,
    },
    /// A fabricated earlier turn carrying the payload.
    InjectionViaContext { payload: String },
    /// MCP: hidden instructions in the listed tools' descriptions (or their parameters').
    McpToolPoisoning {
        #[serde(default)]
        payload: Option<String>,
        #[serde(default)]
        place: PoisonPlace,
    },
    /// MCP: the tool list changes after it was first read (`after_calls` listings,
    /// default 1): the later listings carry the instructions.
    McpRugPull {
        #[serde(default)]
        payload: Option<String>,
        #[serde(default)]
        place: PoisonPlace,
    },
    /// MCP: a tool added to the list whose description redirects the calls meant for
    /// `shadows` to it.
    McpShadowing {
        shadows: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        payload: Option<String>,
    },
}

pub use crate::mcp::PoisonPlace;

/// For an option only some modes take, given to another: which take it.
pub(super) fn taken_only_by(field: &str) -> Option<&'static str> {
    match field {
        "fields" => Some(
            "`fields` chooses the values of `corrupt` (`empty` empties the whole body, \
             `stale` moves every date)",
        ),
        "days" => Some("`days` is how far `stale` moves dates back"),
        _ => None,
    }
}

fn d_internal() -> i32 {
    -32603
}
fn d30000() -> u64 {
    30_000
}
fn d15000() -> u64 {
    15_000
}
fn d3000() -> u64 {
    3000
}
fn d2000() -> u64 {
    2000
}
fn d200() -> u64 {
    200
}
fn d503() -> u16 {
    503
}
fn d64() -> u64 {
    64
}
fn d10() -> u32 {
    10
}
fn d2u() -> u32 {
    2
}
fn d50000() -> u32 {
    50_000
}
fn d1f() -> f64 {
    1.0
}
fn d2f() -> f64 {
    2.0
}

impl ToolMode {
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// What the journal records this rule did.
    pub fn kind(&self) -> FaultKind {
        match self {
            ToolMode::Timeout { .. } => FaultKind::Timeout,
            ToolMode::Error { .. } => FaultKind::Error,
            ToolMode::Malformed {} => FaultKind::Malformed,
            ToolMode::Slow { .. } => FaultKind::Slow,
            ToolMode::MaliciousResponse { .. } => FaultKind::MaliciousResponse,
            ToolMode::Reset { .. } => FaultKind::Reset,
            ToolMode::Partial { .. } => FaultKind::Partial,
            ToolMode::McpToolError { .. } => FaultKind::McpToolError,
            ToolMode::McpError { .. } => FaultKind::McpError,
            ToolMode::McpSessionExpired {} => FaultKind::McpSessionExpired,
            ToolMode::Corrupt { .. } => FaultKind::Corrupt,
            ToolMode::Empty {} => FaultKind::Empty,
            ToolMode::Stale { .. } => FaultKind::Stale,
        }
    }
}

impl LlmMode {
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// What the journal records this rule did.
    pub fn kind(&self) -> FaultKind {
        match self {
            LlmMode::Timeout { .. } => FaultKind::Timeout,
            LlmMode::TruncatedResponse { .. } => FaultKind::TruncatedResponse,
            LlmMode::RateLimit { .. } => FaultKind::RateLimit,
            LlmMode::Empty {} => FaultKind::Empty,
            LlmMode::Garbage {} => FaultKind::Garbage,
            LlmMode::ResponseDrift { .. } => FaultKind::ResponseDrift,
            LlmMode::ServerError { .. } => FaultKind::ServerError,
            LlmMode::StreamCut { .. } => FaultKind::StreamCut,
            LlmMode::SlowStream { .. } => FaultKind::SlowStream,
            LlmMode::ToolCallCorruption { .. } => FaultKind::ToolCallCorruption,
            LlmMode::ContextLengthExceeded {} => FaultKind::ContextLengthExceeded,
            LlmMode::ClientError { .. } => FaultKind::ClientError,
            LlmMode::HtmlErrorPage { .. } => FaultKind::HtmlErrorPage,
            LlmMode::ContentFilter { .. } => FaultKind::ContentFilter,
        }
    }
}

impl AttackMode {
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// What the journal records this rule did.
    pub fn kind(&self) -> FaultKind {
        match self {
            AttackMode::IndirectInjection { .. } => FaultKind::IndirectInjection,
            AttackMode::MemoryPoisoning { .. } => FaultKind::MemoryPoisoning,
            AttackMode::Overflow { .. } => FaultKind::Overflow,
            AttackMode::ConflictingContext { .. } => FaultKind::ConflictingContext,
            AttackMode::InjectionViaContext { .. } => FaultKind::InjectionViaContext,
            AttackMode::McpToolPoisoning { .. } => FaultKind::McpToolPoisoning,
            AttackMode::McpRugPull { .. } => FaultKind::McpRugPull,
            AttackMode::McpShadowing { .. } => FaultKind::McpShadowing,
        }
    }
}
