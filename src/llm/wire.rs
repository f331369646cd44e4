//! The one interface to a provider's wire format (`Wire`), implemented once per provider
//! (`openai`, `anthropic`, `gemini`, `ollama`) and picked by `llm::wire`. Everything the
//! chaos engine needs to know about a provider is a method here, without default bodies,
//! so a new provider's file is complete when it compiles.

use serde_json::Value;

use crate::llm::signals::{FilterSignal, ResponsesEvent};

use super::detect::Api;
use super::frame::{Event, Framing};
use super::path::Call;
use super::synthetic::Synthetic;

/// What role an event plays in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Carries generated text or tool-call pieces.
    Content,
    /// Carries the finish reason (for Gemini and Ollama also the last event).
    Finish,
    /// Ends the stream (`[DONE]`, `message_stop`, `response.completed`).
    Terminal,
    Error,
    /// Anything else (`message_start`, `ping`, usage-only chunks).
    Meta,
}

/// What the provider does with a request over its context window.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextOverflow {
    /// It refuses with this error.
    Reject(Synthetic),
    /// It silently drops early turns and answers (Ollama).
    DropEarlyTurns,
}

/// What a stream has sent so far, for formats whose closing events repeat it (the
/// Responses API's `response.incomplete` / `response.failed` carry the response object,
/// the text and the next sequence number). The rewriter keeps it; the provider fills it
/// (`observe`, `record_sent`) and reads it.
#[derive(Debug, Default)]
pub struct Progress {
    /// The response object from `response.created`.
    pub base: Value,
    /// The text sent so far.
    pub said: String,
    /// The last sequence number seen.
    pub sequence: u64,
    /// The message item the text deltas belong to.
    pub item_id: Value,
}

/// A provider's wire format: detection, responses, streams, errors and requests.
pub trait Wire: Sync {
    // Detection.
    /// Whether `host` (lowercase, no trailing dot) is the provider's own API host.
    fn owns_host(&self, host: &str) -> bool;
    /// Path suffixes of its endpoints, on any host (a path *below* one is `Auxiliary`).
    fn endpoints(&self) -> &'static [(&'static str, Api)];
    /// What an exact path (no query, no trailing `/`) of its native API is for.
    fn exact_api(&self, path: &str) -> Option<Api>;
    /// What a `…/{resource}:method` path is for, by its method.
    fn method_api(&self, method: &str) -> Option<Api>;

    // Responses and streams.
    /// How its streams are framed.
    fn framing(&self) -> Framing;
    /// The role of a stream event that is not an error.
    fn classify(&self, ev: &Event) -> Kind;
    /// For formats whose streams repeat what they sent (the Responses API): how; `None`
    /// for a stream that says each thing once.
    fn recap(&self) -> Option<&'static dyn Recap>;
    /// Calls `f` on every piece of generated text in a stream chunk or a whole response.
    fn for_each_text(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut String));
    /// Where tool calls sit in a stream chunk (`stream`) or a whole response.
    fn calls(&self, stream: bool) -> &'static [&'static Call];
    /// Calls `f` on tool-call arguments: JSON text or objects.
    fn for_each_tool_args(&self, v: &mut Value, stream: bool, f: &mut dyn FnMut(&mut Value));
    /// Marks a whole response (or a closing chunk) as cut by the token limit.
    fn mark_truncated(&self, v: &mut Value);
    /// Whether a trimmed stream chunk ends the stream itself (marked with `mark_truncated`)
    /// rather than being followed by `truncation_tail`.
    fn truncation_closes(&self, v: &Value) -> bool;
    /// Events that end a stream as the provider does at the token limit, after `ev` (the
    /// last content event, already trimmed). `last` is the newest JSON chunk seen.
    fn truncation_tail(&self, ev: &Event, last: &Value, tokens: u32) -> Vec<Event>;
    /// The provider's mid-stream error (an overload after the 200 began); `form` picks the
    /// Responses API's event (`response.failed` or `error`), which others ignore.
    fn stream_error(&self, ev: &Event, progress: &Progress, form: ResponsesEvent) -> Event;
    /// The SSE event name a garbage frame carries, so every SDK version parses it.
    fn garbage_event(&self) -> Option<&'static str>;
    /// What the provider answers when the model wrote a broken call, when that is not the
    /// call with broken argument JSON (`None`); `Some(changed)` otherwise.
    fn malformed_call(&self, v: &mut Value) -> Option<bool>;

    // Usage.
    /// Notes the token counts (and the model) that `v`, a whole answer or one stream event,
    /// reports where this provider puts them, through `usage::note` (a later event's
    /// figures replace an earlier one's: streams report them cumulatively).
    fn usage(&self, v: &Value, into: &mut crate::exchange::Usage);

    // Content filters and refusals (`content_filter`).
    /// Whether the provider has any such signal (Ollama has none).
    fn has_filter_signal(&self) -> bool;
    /// A whole answer stopped by `signal`, in place.
    fn mark_filtered(&self, v: &mut Value, signal: FilterSignal);
    /// The events that replace `ev` and end a stream stopped by `signal`. For numbered
    /// streams `progress.sequence` is the last number sent.
    fn filter_tail(&self, ev: &Event, progress: &Progress, signal: FilterSignal) -> Vec<Event>;
    /// The error a blocked prompt gets before any answer (Azure OpenAI's 400); `None`
    /// where the answer itself carries the block.
    fn prompt_blocked(&self, draw: u64) -> Option<Synthetic>;

    // Errors.
    fn gateway_timeout(&self, draw: u64) -> Synthetic;
    fn rate_limit(&self, retry_after_s: f64, quota: bool, draw: u64) -> Synthetic;
    fn server_error(&self, status: Option<u16>, draw: u64) -> Synthetic;
    /// A refusal of the request (`client_error`), as this provider sends it.
    fn client_error(&self, kind: crate::llm::signals::ClientErrorKind, draw: u64) -> Synthetic;
    fn context_overflow(&self, draw: u64) -> ContextOverflow;

    // Requests (context attacks).
    /// The content of the last user message, however the provider spells it.
    fn last_user_content<'a>(&self, body: &'a mut Value) -> Option<&'a mut Value>;
    /// Calls `f` on the text of every tool result in the request; how many there were.
    fn for_each_tool_result(&self, body: &mut Value, f: &mut dyn FnMut(&mut String)) -> usize;
    /// Adds a system instruction after the agent's own.
    fn add_system(&self, body: &mut Value, text: &str) -> bool;
    /// Inserts a fabricated user/assistant exchange before the last user message.
    fn insert_turns(&self, body: &mut Value, user: &str, assistant: &str) -> bool;
}

/// A stream format that repeats what it sent: later events carry whole copies of the
/// deltas' text and arguments (`*.done`, `output_item.done`) and the closing event the
/// whole response (`response.completed`). A rewrite must keep the copies saying what the
/// deltas said, and end a cut stream with a summary of what was sent. Only the OpenAI
/// Responses API has one; other formats answer `None` to `Wire::recap`.
pub trait Recap: Sync {
    /// Whether this event belongs to a repeating stream (later events repeat its output).
    fn repeats_output(&self, v: &Value) -> bool;
    /// Whether a stream event carries a fragment of a call's arguments that later events
    /// repeat whole (`response.function_call_arguments.delta`).
    fn is_args_fragment(&self, v: &Value) -> bool;
    /// The text part a delta event adds to, as (item id, content index); `None` for any
    /// other event.
    fn text_delta_part(&self, v: &Value) -> Option<(String, u64)>;
    /// Every whole copy of a text part in an event (not the deltas), with its (item id,
    /// content index), so a rewrite of the deltas can make the copies say the same.
    fn for_each_repeated_text(&self, v: &mut Value, f: &mut dyn FnMut(&str, u64, &mut String));
    /// Notes what a stream event says about the stream (ids, sequence numbers).
    fn observe(&self, progress: &mut Progress, v: &Value);
    /// Notes the text an event sends, as the client gets it.
    fn record_sent(&self, progress: &mut Progress, v: &mut Value);
    /// The one event that ends a stream cut at the token limit: a summary of what was sent
    /// (`response.incomplete`); `None` for an event of another format.
    fn truncated_summary(&self, ev: &Event, progress: &Progress) -> Option<Event>;
}
