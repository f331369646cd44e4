//! Which LLM provider a request is for, from its host and path alone.
//!
//! Well-known provider hosts are recognised first; then the API paths every
//! OpenAI-compatible, Anthropic, Gemini and Ollama server uses, on any host (vLLM, LM
//! Studio, LiteLLM, Azure, self-hosted Ollama). Explicit `llm:` entries in the config win
//! over this; see `proxy::classify`.

use crate::exchange::Provider;

/// The provider a request targets, or `None` when it does not look like an LLM call.
pub fn detect(host: &str, path: &str) -> Option<Provider> {
    by_host(host).or_else(|| by_path(path))
}

fn by_host(host: &str) -> Option<Provider> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    match host.as_str() {
        "api.openai.com" => Some(Provider::Openai),
        "api.anthropic.com" => Some(Provider::Anthropic),
        "generativelanguage.googleapis.com" => Some(Provider::Gemini),
        _ if host.ends_with(".openai.azure.com") => Some(Provider::Openai),
        _ if host.ends_with("-aiplatform.googleapis.com") => Some(Provider::Gemini),
        _ => None,
    }
}

fn by_path(path: &str) -> Option<Provider> {
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
        return Some(Provider::Gemini);
    }
    if path == "/api/chat" || path == "/api/generate" {
        return Some(Provider::Ollama);
    }
    if path.ends_with("/v1/messages") {
        return Some(Provider::Anthropic);
    }
    // `/chat/completions` also covers Azure's `/openai/deployments/{d}/chat/completions`.
    if path.ends_with("/chat/completions") || path.ends_with("/v1/responses") {
        return Some(Provider::Openai);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_hosts_win_whatever_the_path() {
        assert_eq!(
            detect("api.openai.com", "/v1/models"),
            Some(Provider::Openai)
        );
        assert_eq!(
            detect("API.Anthropic.com.", "/x"),
            Some(Provider::Anthropic)
        );
        assert_eq!(detect("my.openai.azure.com", "/x"), Some(Provider::Openai));
        assert_eq!(
            detect("us-central1-aiplatform.googleapis.com", "/v1/projects/p"),
            Some(Provider::Gemini)
        );
    }

    #[test]
    fn compatible_servers_by_path() {
        let cases = [
            ("/v1/chat/completions", Some(Provider::Openai)),
            (
                "/openai/deployments/gpt/chat/completions?api-version=1",
                Some(Provider::Openai),
            ),
            ("/v1/responses", Some(Provider::Openai)),
            ("/v1/messages", Some(Provider::Anthropic)),
            (
                "/v1beta/models/gemini-2.5-flash:generateContent",
                Some(Provider::Gemini),
            ),
            (
                "/v1beta/models/g:streamGenerateContent?alt=sse",
                Some(Provider::Gemini),
            ),
            ("/api/chat", Some(Provider::Ollama)),
            ("/api/generate", Some(Provider::Ollama)),
            ("/v1/search", None),
            ("/api/chats", None),
        ];
        for (path, want) in cases {
            assert_eq!(detect("127.0.0.1", path), want, "{path}");
        }
    }
}
