//! The `chaos:` section (config.md): tool faults, LLM faults and context attacks, as closed
//! serde enums tagged by `mode` / `type`. These enums are the schema and the registry of
//! faults: adding a mode means adding a variant, and every `match` on them is exhaustive.
//!
//! Each rule has common fields (`id`, `tool`, `provider`, `match_url`, `probability`,
//! `after_calls`) and mode fields. `Rule<M>` splits the two so that both halves keep
//! `deny_unknown_fields`: a misspelt field is an error, never ignored.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};

use super::LlmProvider;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChaosSpec {
    pub tool_faults: Vec<Rule<ToolMode>>,
    pub llm_faults: Vec<Rule<LlmMode>>,
    pub context_attacks: ContextAttacks,
    /// Add `x-flakestorm-fault: <rule id>` to faulted responses (off: faults look real).
    pub mark_responses: bool,
}

impl ChaosSpec {
    pub fn is_empty(&self) -> bool {
        self.tool_faults.is_empty()
            && self.llm_faults.is_empty()
            && self.context_attacks.rules().is_empty()
    }
}

/// Fields every rule may have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Common {
    /// Stable name for journals, metrics and `mark_responses`; default `<list>[<index>]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool faults: a name from `tools:`, or `*` for every non-LLM request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// LLM faults: only this provider's calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<LlmProvider>,
    /// Glob on the full URL that narrows the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_url: Option<String>,
    /// 0..=1, default 1. Context attacks also accept `trigger_probability`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "trigger_probability"
    )]
    pub probability: Option<f64>,
    /// Fire only after this many matching calls went through untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_calls: Option<u64>,
}

const COMMON_FIELDS: &[&str] = &[
    "id",
    "tool",
    "provider",
    "match_url",
    "probability",
    "trigger_probability",
    "after_calls",
];

/// One rule: common fields plus a closed mode enum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule<M> {
    #[serde(flatten)]
    pub common: Common,
    #[serde(flatten)]
    pub mode: M,
}

impl<'de, M: DeserializeOwned> Deserialize<'de> for Rule<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_rule(serde_json::Value::deserialize(d)?).map_err(|(field, msg)| {
            D::Error::custom(if field.is_empty() {
                msg
            } else {
                format!("{field}: {msg}")
            })
        })
    }
}

/// Parses one rule; an error says which field (`mode`, `delay_ms`, …) and what is wrong.
pub fn parse_rule<M: DeserializeOwned>(v: serde_json::Value) -> Result<Rule<M>, (String, String)> {
    let serde_json::Value::Object(mut all) = v else {
        return Err((String::new(), "expected a mapping of rule fields".into()));
    };
    let original = all.clone();
    let mut common = serde_json::Map::new();
    for key in COMMON_FIELDS {
        if let Some(v) = all.remove(*key) {
            common.insert((*key).to_string(), v);
        }
    }
    let located = |e: serde_path_to_error::Error<serde_json::Error>| {
        let msg = e.inner().to_string();
        let path = e.path().to_string();
        let field = if path != "." {
            path
        } else {
            field_named_in(&msg, &original)
        };
        (field, msg)
    };
    let common: Common =
        serde_path_to_error::deserialize(serde_json::Value::Object(common)).map_err(located)?;
    let mode: M =
        serde_path_to_error::deserialize(serde_json::Value::Object(all)).map_err(located)?;
    Ok(Rule { common, mode })
}

/// The field an error message is about: the one it names (`unknown field `x``), or the one
/// holding the value it rejects (`unknown variant `x``), since tagged enums lose paths.
fn field_named_in(msg: &str, rule: &serde_json::Map<String, serde_json::Value>) -> String {
    let quoted = |prefix: &str| {
        msg.strip_prefix(prefix)
            .and_then(|r| r.split('`').next())
            .map(str::to_string)
    };
    if let Some(f) = quoted("unknown field `").or_else(|| quoted("missing field `")) {
        return f;
    }
    if let Some(v) = quoted("unknown variant `")
        && let Some((k, _)) = rule
            .iter()
            .find(|(_, val)| val.as_str() == Some(v.as_str()))
    {
        return k.clone();
    }
    String::new()
}

/// What a timed-out call ends with once `delay_ms` has passed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutEnd {
    /// A `504 Gateway Timeout`, as a gateway in front of the service would answer.
    #[default]
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
    /// and then carries the provider's mid-stream error event.
    ServerError {
        #[serde(default)]
        status: Option<u16>,
        #[serde(default)]
        in_stream: bool,
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
}

/// `context_attacks` as a list of rules or as a map `{type: {fields}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ContextAttacks(Vec<Rule<AttackMode>>);

impl ContextAttacks {
    pub fn new(rules: Vec<Rule<AttackMode>>) -> Self {
        ContextAttacks(rules)
    }

    pub fn rules(&self) -> &[Rule<AttackMode>] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ContextAttacks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = attack_list(serde_json::Value::deserialize(d)?).map_err(D::Error::custom)?;
        items
            .into_iter()
            .map(|v| Rule::<AttackMode>::deserialize(v).map_err(D::Error::custom))
            .collect::<Result<_, _>>()
            .map(ContextAttacks)
    }
}

/// `context_attacks` in list form: the map form `{type: {fields}}` becomes a list in type
/// name order.
pub fn attack_list(v: serde_json::Value) -> Result<Vec<serde_json::Value>, String> {
    match v {
        serde_json::Value::Null => Ok(vec![]),
        serde_json::Value::Array(items) => Ok(items),
        serde_json::Value::Object(map) => {
            let map: BTreeMap<String, serde_json::Value> = map.into_iter().collect();
            let mut items = vec![];
            for (kind, fields) in map {
                let mut fields = match fields {
                    serde_json::Value::Object(f) => f,
                    serde_json::Value::Null => serde_json::Map::new(),
                    _ => return Err(format!("{kind}: expected a mapping of fields")),
                };
                fields.insert("type".into(), serde_json::Value::String(kind));
                items.push(serde_json::Value::Object(fields));
            }
            Ok(items)
        }
        _ => Err("expected a list of attacks or a mapping of type -> fields".into()),
    }
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
        match self {
            ToolMode::Timeout { .. } => "timeout",
            ToolMode::Error { .. } => "error",
            ToolMode::Malformed {} => "malformed",
            ToolMode::Slow { .. } => "slow",
            ToolMode::MaliciousResponse { .. } => "malicious_response",
            ToolMode::Reset { .. } => "reset",
            ToolMode::Partial { .. } => "partial",
        }
    }
}

impl LlmMode {
    pub fn name(&self) -> &'static str {
        match self {
            LlmMode::Timeout { .. } => "timeout",
            LlmMode::TruncatedResponse { .. } => "truncated_response",
            LlmMode::RateLimit { .. } => "rate_limit",
            LlmMode::Empty {} => "empty",
            LlmMode::Garbage {} => "garbage",
            LlmMode::ResponseDrift { .. } => "response_drift",
            LlmMode::ServerError { .. } => "server_error",
            LlmMode::StreamCut { .. } => "stream_cut",
            LlmMode::SlowStream { .. } => "slow_stream",
            LlmMode::ToolCallCorruption { .. } => "tool_call_corruption",
            LlmMode::ContextLengthExceeded {} => "context_length_exceeded",
        }
    }
}

impl AttackMode {
    pub fn name(&self) -> &'static str {
        match self {
            AttackMode::IndirectInjection { .. } => "indirect_injection",
            AttackMode::MemoryPoisoning { .. } => "memory_poisoning",
            AttackMode::Overflow { .. } => "overflow",
            AttackMode::ConflictingContext { .. } => "conflicting_context",
            AttackMode::InjectionViaContext { .. } => "injection_via_context",
        }
    }
}
