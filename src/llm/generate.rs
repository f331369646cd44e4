//! One-shot generation on each provider's own API, for flakestorm's own model calls (the
//! `model:` LLM that writes mutation variants): the public API root, the request's path
//! and body, the headers that carry the key and the API version, and where the answer's
//! text sits. Pure: the caller sends it.

use serde_json::{Value, json};

use super::Provider;

/// The provider's public API root (`model.base_url` when it is not set).
pub fn default_root(p: Provider) -> &'static str {
    match p {
        Provider::Ollama => "http://localhost:11434",
        Provider::Openai => "https://api.openai.com/v1",
        Provider::Anthropic => "https://api.anthropic.com",
        Provider::Gemini => "https://generativelanguage.googleapis.com",
    }
}

/// The path under the API root and the body asking `model` for one answer to
/// `instruction`; `seed` is passed where the provider takes one.
pub fn request(
    p: Provider,
    model: &str,
    instruction: &str,
    temperature: f64,
    seed: Option<u64>,
) -> (String, Value) {
    let messages = json!([{"role": "user", "content": instruction}]);
    match p {
        Provider::Openai => {
            let mut b = json!({"model": model, "temperature": temperature, "messages": messages});
            if let Some(s) = seed {
                b["seed"] = json!(s);
            }
            ("/chat/completions".into(), b)
        }
        Provider::Ollama => {
            let mut options = json!({"temperature": temperature});
            if let Some(s) = seed {
                options["seed"] = json!(s);
            }
            let b =
                json!({"model": model, "stream": false, "options": options, "messages": messages});
            ("/api/chat".into(), b)
        }
        Provider::Anthropic => {
            // Anthropic's temperature stops at 1.
            let b = json!({"model": model, "max_tokens": 1024,
                "temperature": temperature.min(1.0), "messages": messages});
            ("/v1/messages".into(), b)
        }
        Provider::Gemini => {
            let b = json!({"contents": [{"role": "user", "parts": [{"text": instruction}]}],
                "generationConfig": {"temperature": temperature}});
            (format!("/v1beta/models/{model}:generateContent"), b)
        }
    }
}

/// The header that carries an API key, and its value.
pub fn key_header(p: Provider, key: &str) -> (&'static str, String) {
    match p {
        Provider::Openai | Provider::Ollama => ("authorization", format!("Bearer {key}")),
        Provider::Anthropic => ("x-api-key", key.to_string()),
        Provider::Gemini => ("x-goog-api-key", key.to_string()),
    }
}

/// Headers the provider requires on every call.
pub fn fixed_headers(p: Provider) -> &'static [(&'static str, &'static str)] {
    match p {
        Provider::Anthropic => &[("anthropic-version", "2023-06-01")],
        Provider::Openai | Provider::Ollama | Provider::Gemini => &[],
    }
}

/// The answer's text, where the provider puts it.
pub fn text_of(p: Provider, body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = match p {
        Provider::Openai => v.pointer("/choices/0/message/content"),
        Provider::Ollama => v.pointer("/message/content"),
        Provider::Anthropic => v.pointer("/content/0/text"),
        Provider::Gemini => v.pointer("/candidates/0/content/parts/0/text"),
    };
    text.and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_answer_text_is_found_where_it_puts_it() {
        let cases = [
            (
                Provider::Openai,
                r#"{"choices":[{"message":{"content":"a"}}]}"#,
            ),
            (
                Provider::Ollama,
                r#"{"message":{"role":"assistant","content":"a"}}"#,
            ),
            (
                Provider::Anthropic,
                r#"{"content":[{"type":"text","text":"a"}]}"#,
            ),
            (
                Provider::Gemini,
                r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#,
            ),
        ];
        for (p, body) in cases {
            assert_eq!(text_of(p, body.as_bytes()).as_deref(), Some("a"), "{p:?}");
            assert_eq!(text_of(p, b"{}"), None);
        }
    }

    #[test]
    fn a_seed_goes_where_the_provider_takes_one() {
        let (_, openai) = request(Provider::Openai, "m", "hi", 0.0, Some(7));
        assert_eq!(openai["seed"], 7);
        let (_, ollama) = request(Provider::Ollama, "m", "hi", 0.0, Some(7));
        assert_eq!(ollama["options"]["seed"], 7);
        let (path, gemini) = request(Provider::Gemini, "gemini-2.5", "hi", 0.3, Some(7));
        assert_eq!(path, "/v1beta/models/gemini-2.5:generateContent");
        assert!(gemini.get("seed").is_none());
        let (_, anthropic) = request(Provider::Anthropic, "m", "hi", 1.5, None);
        assert_eq!(anthropic["temperature"], 1.0);
    }
}
