//! What a request to an LLM API is, from its host and path alone.
//!
//! The path says what kind of call it is (`api`): generation, embeddings, another API of a
//! provider (models, files, batches, traces, token counts, a stored response…), or a path
//! flakestorm does not know. A well-known provider host decides the provider; on any other
//! host (vLLM, LM Studio, LiteLLM, self-hosted Ollama) the path does. Only generation calls
//! are LLM calls. Explicit `llm:` entries use `declared` (see `proxy::classify`). Each
//! provider's own hosts and paths are in its file (`Wire::owns_host`, `endpoints`,
//! `exact_api`, `method_api`); this module decides between them.

use super::{all, wire};
use crate::exchange::{Provider, Target};

/// What an API path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Generating text, with the provider whose path shape it is.
    Generate(Provider),
    /// Computing embeddings.
    Embed(Provider),
    /// Another provider API: models, files, uploads, batches, fine-tuning, traces,
    /// moderations, token counts, stored responses and completions, Ollama's model admin.
    Auxiliary,
    /// Not a path flakestorm knows.
    Unknown,
}

/// Path segments that name a provider's non-generation resources, anywhere in the path.
/// `models` is only `Auxiliary` as the last or next-to-last segment (list or get a model),
/// so a gateway's `/models/{m}/generate` stays unknown.
const RESOURCES: [&str; 9] = [
    "files",
    "uploads",
    "batches",
    "fine_tuning",
    "traces",
    "vector_stores",
    "moderations",
    "cachedContents",
    "tunedModels",
];

/// The target of a request to `host` and `path`, when no config entry names it.
pub fn detect(host: &str, path: &str) -> Target {
    let api = api(path);
    let provider = |p| provider_host(host).unwrap_or(p);
    match api {
        Api::Generate(p) => Target::Llm {
            provider: provider(p),
        },
        Api::Embed(p) => Target::Embeddings {
            provider: provider(p),
        },
        Api::Auxiliary | Api::Unknown => Target::Other,
    }
}

/// The target of a request under an `llm:` entry of `provider`: the user declared it an LLM
/// endpoint, so unknown paths (a gateway's `/generate`) are LLM calls too; embeddings and
/// known non-generation paths are not.
pub fn declared(provider: Provider, path: &str) -> Target {
    match api(path) {
        Api::Generate(_) | Api::Unknown => Target::Llm { provider },
        Api::Embed(_) => Target::Embeddings { provider },
        Api::Auxiliary => Target::Other,
    }
}

/// The provider whose own API host this is, if it is one.
pub fn provider_host(host: &str) -> Option<Provider> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    super::all().find(|p| super::wire(*p).owns_host(&host))
}

/// What `path` (query allowed) is for. The path alone decides: a `GET /v1/responses/{id}`
/// (a stored response) is `Auxiliary` like every path below a generation endpoint.
pub fn api(path: &str) -> Api {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_end_matches('/');
    let wires = || all().map(wire);
    // Exact native paths first: Ollama's `/api/embeddings` is not OpenAI's `/embeddings`.
    if let Some(api) = wires().find_map(|w| w.exact_api(path)) {
        return api;
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    if let Some((_, method)) = last.rsplit_once(':') {
        return wires()
            .find_map(|w| w.method_api(method))
            .unwrap_or_else(|| known_if(resource(path, false)));
    }
    let endpoints = || wires().flat_map(|w| w.endpoints().iter());
    if let Some((_, api)) = endpoints().find(|(s, _)| path.ends_with(s)) {
        return *api;
    }
    let below = endpoints().any(|(s, _)| below(path, s));
    known_if(below || resource(path, true))
}

fn known_if(auxiliary: bool) -> Api {
    if auxiliary {
        Api::Auxiliary
    } else {
        Api::Unknown
    }
}

/// Whether `suffix` occurs in `path` followed by `/`. Every request that no config entry
/// names asks this of each endpoint: a plain scan of a short path, where `match_indices`
/// would build a substring searcher each time.
fn below(path: &str, suffix: &str) -> bool {
    let (path, suffix) = (path.as_bytes(), suffix.as_bytes());
    (0..path.len().saturating_sub(suffix.len()))
        .any(|i| path[i..].starts_with(suffix) && path[i + suffix.len()] == b'/')
}

fn resource(path: &str, models: bool) -> bool {
    let mut tail = path.rsplit('/');
    let (last, before) = (tail.next(), tail.next());
    path.split('/').any(|s| RESOURCES.contains(&s))
        || (models && (last == Some("models") || before == Some("models")))
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
