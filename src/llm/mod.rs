//! Provider wire formats, one file per provider behind one interface (`Wire`):
//! `openai` (Chat Completions, and the Responses API in `openai::responses`), `anthropic`,
//! `gemini`, `ollama`. `wire` is the registration: the one place a provider value becomes
//! its format. Shared machinery: `frame` (the one SSE/NDJSON framer), `path` (locations
//! in JSON), `request` (conversation edits), `synthetic` (built responses); `detect`
//! recognises LLM and embedding endpoints, `messages` reads a call's prompt and answer as
//! the GenAI conventions' messages, `tool_calls` reads the calls a response asked
//! for, `usage` the tokens it reported. Rewriting bodies and streams under a fault is the chaos engine's
//! (`chaos::rewrite`), against this interface only. Pure: no I/O.
#![deny(clippy::wildcard_enum_match_arm)]

pub mod answer_fields;
pub mod anthropic;
mod detect;
pub mod frame;
pub mod gemini;
pub mod generate;
pub mod messages;
pub mod ollama;
pub mod openai;
pub mod path;
pub mod request;
pub mod signals;
pub mod synthetic;
mod tool_calls;
mod usage;
pub mod wire;

pub use crate::exchange::Provider;
pub use detect::{Api, declared, detect, provider_host};
pub use request::{drop_early_turns, edit_text, longest_string};
pub use synthetic::Synthetic;
pub use tool_calls::tool_calls;
pub use usage::usage;
pub use wire::{ContextOverflow, Kind, Progress, Wire};

/// Every provider, in the order detection and tool-call reading try them (derived from the
/// enum: a new provider is tried at once).
pub fn all() -> impl Iterator<Item = Provider> {
    <Provider as strum::IntoEnumIterator>::iter()
}

/// The wire format of `p`. A new provider is a new file and an arm here.
pub fn wire(p: Provider) -> &'static dyn Wire {
    match p {
        Provider::Openai => &openai::OpenAi,
        Provider::Anthropic => &anthropic::Anthropic,
        Provider::Gemini => &gemini::Gemini,
        Provider::Ollama => &ollama::Ollama,
    }
}

/// The role of a stream event: an error in any provider's spelling, else what `w` says.
pub fn classify(w: &dyn Wire, ev: &frame::Event) -> Kind {
    let error = ev.json.as_ref().is_some_and(|j| {
        j.get("error").is_some()
            || j.get("type").and_then(serde_json::Value::as_str) == Some("error")
    });
    if error { Kind::Error } else { w.classify(ev) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every provider is tried, in declaration order, named as serde names it.
    #[test]
    fn all_lists_every_provider_named_as_serde_does() {
        let all: Vec<Provider> = all().collect();
        assert_eq!(
            all,
            [
                Provider::Openai,
                Provider::Anthropic,
                Provider::Gemini,
                Provider::Ollama
            ]
        );
        for p in all {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
    }
}
