//! Checks of rules beyond their numbers: options that only mean something together
//! (`after_events` needs `in_stream`), modes a rule's provider has no real form of
//! (`content_filter` on Ollama), `fields:` entries that are no JSON path. Each problem
//! names its field, so the error says `chaos.llm_faults[2].provider: …`; config loading
//! and `PUT /v1/chaos` share it.

use super::{LlmMode, Rule, ToolMode};
use crate::exchange::Provider;

/// Every option of a tool fault `rule` that does not fit: `(field, message)`. Each
/// `fields:` entry that is no JSON path is reported with its index.
pub fn check_tool_rule(rule: &Rule<ToolMode>) -> Vec<(&'static str, String)> {
    let ToolMode::Corrupt { fields } = &rule.mode else {
        return vec![];
    };
    fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let why = crate::plant::JsonPath::parse(f).err()?;
            Some(("fields", crate::plant::not_a_path(f, i, &why)))
        })
        .collect()
}

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
    fn every_fields_entry_that_is_no_json_path_is_named_by_its_index() {
        let rule: Rule<ToolMode> = parse_rule(
            json!({"mode": "corrupt", "tool": "*", "fields": ["$.a", "$.b[*].c", "$.a[", "x"]}),
        )
        .unwrap();
        let p = check_tool_rule(&rule);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            (
                "fields",
                "`$.a[` (entry 2) is not a JSON path: unclosed `[` at character 4".to_string()
            )
        );
        assert!(
            p[1].1
                .starts_with("`x` (entry 3) is not a JSON path: a path starts with `$`")
        );
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
