//! The provider-facing forms a fault takes, chosen in the config and produced by each wire
//! format: which refusal a `client_error` is, which content-filter signal, which event a
//! mid-stream Responses API error is. Closed enums; the config deserialises into them.

use serde::{Deserialize, Serialize};

/// Which refusal `client_error` answers with: each provider's own form of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientErrorKind {
    /// The key is wrong or revoked (401; Gemini: 400 `API key not valid`).
    #[default]
    Unauthorized,
    /// Billing (Anthropic 402 `billing_error`; where a provider has no 402, its own
    /// out-of-credit answer: OpenAI and Gemini 429 quota, Ollama 402).
    PaymentRequired,
    /// The key may not use this model or region (403).
    Forbidden,
    /// The model does not exist or is not pulled (404; Ollama's "try pulling it first").
    ModelNotFound,
    /// The request body is over the provider's size limit (413; Gemini: 400).
    RequestTooLarge,
}

/// Which content-filter or safety signal `content_filter` answers with, in each provider's
/// own form (docs/faults.md, `content_filter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterSignal {
    /// The provider's output filter stops the answer after its first piece (OpenAI
    /// `finish_reason: content_filter`, Responses `incomplete_details.reason:
    /// content_filter`, Anthropic `stop_reason: refusal`, Gemini `finishReason: SAFETY`).
    #[default]
    Filtered,
    /// Gemini's `finishReason: RECITATION` (the answer quoted protected text); elsewhere
    /// the same as `filtered`, their only output-filter signal.
    Recitation,
    /// The prompt is blocked before any answer (Azure OpenAI's 400 `content_filter`,
    /// Gemini `promptFeedback.blockReason` with no candidates, Anthropic a `refusal` with
    /// no content).
    BlockedPrompt,
    /// The model refuses (OpenAI `message.refusal`, a Responses `refusal` content part,
    /// Anthropic `stop_reason: refusal`; Gemini has none: `SAFETY`).
    Refusal,
}

impl FilterSignal {
    /// How many content events pass before the signal: a filtered answer has begun, a
    /// blocked prompt or a refusal has no answer text.
    pub fn passes(self) -> u32 {
        match self {
            FilterSignal::Filtered | FilterSignal::Recitation => 1,
            FilterSignal::BlockedPrompt | FilterSignal::Refusal => 0,
        }
    }
}

/// Which event a mid-stream `server_error` is on a Responses API stream: both are real.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponsesEvent {
    /// `response.failed` (the response object with `status: failed` and its `error`).
    #[default]
    Failed,
    /// The top-level `error` event, its fields under `error` as the live API sends them.
    Error,
}
