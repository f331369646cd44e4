use super::*;

const OPENAI: Provider = Provider::Openai;
const ANTHROPIC: Provider = Provider::Anthropic;
const GEMINI: Provider = Provider::Gemini;
const OLLAMA: Provider = Provider::Ollama;

fn llm(provider: Provider) -> Target {
    Target::Llm { provider }
}

fn embeddings(provider: Provider) -> Target {
    Target::Embeddings { provider }
}

#[test]
fn generation_paths_on_any_host() {
    let cases = [
        ("/v1/chat/completions", OPENAI),
        (
            "/openai/deployments/gpt/chat/completions?api-version=1",
            OPENAI,
        ),
        ("/v1/completions", OPENAI),
        ("/openai/deployments/gpt/completions", OPENAI),
        ("/v1/responses", OPENAI),
        ("/openai/responses?api-version=2025-03-01-preview", OPENAI),
        ("/v1/messages", ANTHROPIC),
        ("/v1/messages?beta=true", ANTHROPIC),
        ("/v1beta/models/gemini-2.5-flash:generateContent", GEMINI),
        ("/v1beta/models/g:streamGenerateContent?alt=sse", GEMINI),
        (
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent",
            GEMINI,
        ),
        ("/api/chat", OLLAMA),
        ("/api/generate", OLLAMA),
    ];
    for (path, provider) in cases {
        assert_eq!(detect("127.0.0.1", path), llm(provider), "{path}");
    }
}

#[test]
fn embedding_paths_are_their_own_kind() {
    let cases = [
        ("/v1/embeddings", OPENAI),
        ("/openai/deployments/ada/embeddings?api-version=1", OPENAI),
        ("/v1beta/models/text-embedding-004:embedContent", GEMINI),
        (
            "/v1beta/models/text-embedding-004:batchEmbedContents",
            GEMINI,
        ),
        ("/api/embed", OLLAMA),
        ("/api/embeddings", OLLAMA),
    ];
    for (path, provider) in cases {
        assert_eq!(detect("gpu.local", path), embeddings(provider), "{path}");
    }
}

#[test]
fn provider_hosts_decide_the_provider_of_generation_and_embeddings() {
    assert_eq!(detect("API.Anthropic.com.", "/v1/messages"), llm(ANTHROPIC));
    assert_eq!(
        detect(
            "my.openai.azure.com",
            "/openai/deployments/d/chat/completions"
        ),
        llm(OPENAI)
    );
    assert_eq!(
        detect("my.openai.azure.com", "/openai/deployments/d/embeddings"),
        embeddings(OPENAI)
    );
    assert_eq!(
        detect(
            "us-central1-aiplatform.googleapis.com",
            "/v1/projects/p/locations/l/publishers/google/models/g:streamGenerateContent"
        ),
        llm(GEMINI)
    );
    assert_eq!(
        detect(
            "generativelanguage.googleapis.com",
            "/v1beta/models/e:embedContent"
        ),
        embeddings(GEMINI)
    );
    assert_eq!(
        detect("api.openai.com", "/v1/embeddings"),
        embeddings(OPENAI)
    );
}

#[test]
fn non_generation_paths_on_provider_hosts_are_other() {
    let cases = [
        ("api.openai.com", "/v1/traces/ingest"),
        ("api.openai.com", "/v1/models"),
        ("api.openai.com", "/v1/models/gpt-4o"),
        ("api.openai.com", "/v1/files"),
        ("api.openai.com", "/v1/files/file-1/content"),
        ("api.openai.com", "/v1/batches"),
        ("api.openai.com", "/v1/fine_tuning/jobs"),
        ("api.openai.com", "/v1/responses/resp_1"),
        ("api.openai.com", "/v1/responses/resp_1/input_items?limit=5"),
        ("api.openai.com", "/v1/chat/completions/chatcmpl-1"),
        ("api.openai.com", "/v1/realtime"),
        ("api.anthropic.com", "/v1/messages/count_tokens"),
        ("api.anthropic.com", "/v1/messages/batches"),
        ("api.anthropic.com", "/v1/messages/batches/b1/results"),
        ("api.anthropic.com", "/v1/models"),
        ("generativelanguage.googleapis.com", "/v1beta/models"),
        (
            "generativelanguage.googleapis.com",
            "/v1beta/models/g:countTokens",
        ),
        ("generativelanguage.googleapis.com", "/upload/v1beta/files"),
        ("my.openai.azure.com", "/openai/deployments"),
        ("us-central1-aiplatform.googleapis.com", "/v1/projects/p"),
    ];
    for (host, path) in cases {
        assert_eq!(detect(host, path), Target::Other, "{host}{path}");
    }
}

#[test]
fn unknown_paths_elsewhere_are_other() {
    for path in [
        "/v1/search",
        "/api/chats",
        "/",
        "/v1/messages2",
        "/models/x/generate",
    ] {
        assert_eq!(detect("127.0.0.1", path), Target::Other, "{path}");
    }
}

#[test]
fn declared_endpoints_keep_unknown_paths_and_drop_known_auxiliary_ones() {
    let cases = [
        ("/generate", llm(OLLAMA)),
        ("/v1/chat/completions?x=1", llm(OLLAMA)),
        ("/v1/messages", llm(OLLAMA)),
        ("/models/llama/generate", llm(OLLAMA)),
        (
            "/v1/projects/p/publishers/anthropic/models/c:rawPredict",
            llm(OLLAMA),
        ),
        ("/v1/embeddings", embeddings(OLLAMA)),
        ("/api/embed", embeddings(OLLAMA)),
        ("/v1/models", Target::Other),
        ("/v1/traces/ingest", Target::Other),
        ("/v1/files?purpose=batch", Target::Other),
        ("/v1/messages/count_tokens", Target::Other),
        ("/v1/responses/resp_1", Target::Other),
        ("/api/tags", Target::Other),
        ("/api/blobs/sha256:abc", Target::Other),
    ];
    for (path, want) in cases {
        assert_eq!(declared(OLLAMA, path), want, "{path}");
    }
}

#[test]
fn api_ignores_queries_fragments_and_a_trailing_slash() {
    assert_eq!(api("/v1/chat/completions/"), Api::Generate(OPENAI));
    assert_eq!(api("/v1/models?limit=1#x"), Api::Auxiliary);
    assert_eq!(api("/v1/embeddings?a=/v1/messages"), Api::Embed(OPENAI));
    assert_eq!(api("/v1/batches/b1:cancel"), Api::Auxiliary);
    assert_eq!(api("/x/y:rawPredict"), Api::Unknown);
}

#[test]
fn provider_hosts() {
    assert_eq!(provider_host("api.openai.com"), Some(OPENAI));
    assert_eq!(provider_host("r.openai.azure.com."), Some(OPENAI));
    assert_eq!(
        provider_host("europe-west4-aiplatform.googleapis.com"),
        Some(GEMINI)
    );
    assert_eq!(provider_host("openai.com"), None);
    assert_eq!(provider_host("127.0.0.1"), None);
}

#[test]
fn below_needs_the_endpoint_followed_by_a_slash() {
    assert!(below("/v1/chat/completions/abc", "/chat/completions"));
    assert!(below("/chat/completions/", "/chat/completions"));
    assert!(below("/a/a/a/", "/a/a"));
    assert!(!below("/v1/chat/completions", "/chat/completions"));
    assert!(!below("/v1/chat/completionsX/y", "/chat/completions"));
    assert!(!below("/chat", "/chat/completions"));
    assert!(!below("", "/a"));
}
