//! Checks of LLM fault rules beyond their numbers: options that only mean something
//! together (`after_events` needs `in_stream`) and modes a rule's provider has no real
//! form of (`content_filter` on Ollama). Each problem names its field, so the error says
//! `chaos.llm_faults[2].provider: …`; config loading and `PUT /v1/chaos` share it.

use super::{LlmMode, Rule};
use crate::exchange::Provider;

/// Every option of `rule` that does not fit its mode or provider: `(field, message)`.
pub fn check_llm_rule(rule: &Rule<LlmMode>) -> Vec<(&'static str, String)> {
    let mut out = vec![];
    if let LlmMode::ServerError {
        in_stream: false,
        after_events,
        responses_event,
        ..
    } = &rule.mode
    {
        if after_events.is_some() {
            out.push((
                "after_events",
                "only a mid-stream error has a position: set `in_stream: true`".into(),
            ));
        }
        if responses_event.is_some() {
            out.push((
                "responses_event",
                "only a mid-stream error has an event: set `in_stream: true`".into(),
            ));
        }
    }
    if matches!(rule.mode, LlmMode::ContentFilter { .. })
        && rule.common.provider == Some(Provider::Ollama)
    {
        out.push((
            "provider",
            "Ollama has no content-filter or refusal signal (a local model refuses in plain \
             text); use `response_drift` with `drift_type: refusal_rephrase` for the closest \
             real behaviour"
                .into(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::spec::parse_rule;
    use serde_json::json;

    fn problems(v: serde_json::Value) -> Vec<(&'static str, String)> {
        let rule: Rule<LlmMode> = parse_rule(v).expect("parses");
        check_llm_rule(&rule)
    }

    #[test]
    fn content_filter_on_ollama_is_refused_with_the_closest_real_behaviour() {
        let p = problems(json!({"mode": "content_filter", "provider": "ollama"}));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, "provider");
        assert!(p[0].1.contains("refusal_rephrase"), "{}", p[0].1);
        for provider in ["openai", "anthropic", "gemini"] {
            let v =
                json!({"mode": "content_filter", "signal": "blocked_prompt", "provider": provider});
            assert!(problems(v).is_empty(), "{provider}");
        }
        assert!(problems(json!({"mode": "content_filter"})).is_empty());
    }

    #[test]
    fn stream_error_options_need_in_stream() {
        let p = problems(json!({"mode": "server_error", "after_events": 3}));
        assert_eq!(p.iter().map(|p| p.0).collect::<Vec<_>>(), ["after_events"]);
        let p = problems(json!({"mode": "server_error", "responses_event": "error"}));
        assert_eq!(
            p.iter().map(|p| p.0).collect::<Vec<_>>(),
            ["responses_event"]
        );
        let ok = json!({"mode": "server_error", "in_stream": true, "after_events": 0, "responses_event": "error"});
        assert!(problems(ok).is_empty());
    }
}
