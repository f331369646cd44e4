//! What a request is (design.md §2 "target"), from the `tools:` and `llm:` declared (the
//! daemon's, or a run's while it runs, kept by the `Engine`): `llm:` entries first, then `tools:` globs,
//! then well-known LLM hosts and API paths (`llm::detect`), else `other`. Explicit config
//! beats heuristics; among tools the first declared match wins. Under an `llm:` entry the
//! path still says what the call is (`llm::declared`): its provider's generation calls and
//! unknown paths are LLM calls, embeddings are `embeddings`, and the provider APIs that are
//! neither (models, files, traces, batches, token counts) are `other` (the entry decides:
//! `tools:` globs are not consulted).

use globset::{GlobSet, GlobSetBuilder};

use crate::config::{LlmEndpointSpec, ToolSpec};
use crate::exchange::{Provider, Target};

#[derive(Debug, Default)]
pub struct Classifier {
    llm: GlobSet,
    llm_of_pattern: Vec<Provider>,
    tools: GlobSet,
    tool_of_pattern: Vec<usize>,
    tool_names: Vec<String>,
    /// The `tools:` entries that speak MCP (`protocol: mcp`), by name.
    mcp_tools: Vec<String>,
}

/// The declared `tools:` and `llm:` globs could not be built into one set (globset's
/// reason; each glob was checked as the config was read).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ClassifierError(#[from] globset::Error);

impl Classifier {
    /// From the globs compiled when the config was read (validation reported any bad
    /// pattern; the set itself cannot fail for valid globs, but says so if it does).
    pub fn new(tools: &[ToolSpec], llm: &[LlmEndpointSpec]) -> Result<Self, ClassifierError> {
        let mut llm_set = GlobSetBuilder::new();
        let mut llm_of_pattern = vec![];
        for l in llm {
            for g in l.match_url.globs() {
                llm_set.add(g.clone());
                llm_of_pattern.push(l.provider);
            }
        }
        let mut tool_set = GlobSetBuilder::new();
        let mut tool_of_pattern = vec![];
        for (i, t) in tools.iter().enumerate() {
            for g in t.match_url.globs() {
                tool_set.add(g.clone());
                tool_of_pattern.push(i);
            }
        }
        Ok(Classifier {
            llm: llm_set.build()?,
            llm_of_pattern,
            tools: tool_set.build()?,
            tool_of_pattern,
            tool_names: tools.iter().map(|t| t.name.clone()).collect(),
            mcp_tools: tools
                .iter()
                .filter(|t| t.protocol == crate::config::ToolProtocol::Mcp)
                .map(|t| t.name.clone())
                .collect(),
        })
    }

    /// Whether the tool named `name` was declared `protocol: mcp`.
    pub fn speaks_mcp(&self, name: &str) -> bool {
        self.mcp_tools.iter().any(|t| t == name)
    }

    pub fn classify(&self, url: &str, host: &str, path: &str) -> Target {
        if let Some(i) = self.llm.matches(url).into_iter().min() {
            return crate::llm::declared(self.llm_of_pattern[i], path);
        }
        if let Some(i) = self
            .tools
            .matches(url)
            .into_iter()
            .map(|p| self.tool_of_pattern[p])
            .min()
        {
            return Target::Tool {
                name: self.tool_names[i].clone(),
            };
        }
        crate::llm::detect(host, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LlmProvider, OneOrMany, UrlGlobs};

    #[test]
    fn config_beats_heuristics_and_first_tool_wins() {
        let tools = vec![
            ToolSpec {
                name: "search".into(),
                match_url: "https://api.search.example/*".into(),
                protocol: Default::default(),
                transport: Default::default(),
            },
            ToolSpec {
                name: "all".into(),
                match_url: UrlGlobs::new(OneOrMany::Many(vec!["https://*".into()])),
                protocol: Default::default(),
                transport: Default::default(),
            },
        ];
        let llm = vec![LlmEndpointSpec {
            provider: LlmProvider::Ollama,
            match_url: "http://127.0.0.1:5102/v1/*".into(),
        }];
        let c = Classifier::new(&tools, &llm).unwrap();
        let t = |url: &str, host: &str, path: &str| c.classify(url, host, path);
        assert_eq!(
            t(
                "https://api.search.example/q?x=1",
                "api.search.example",
                "/q"
            ),
            Target::Tool {
                name: "search".into()
            }
        );
        assert_eq!(
            t(
                "http://127.0.0.1:5102/v1/chat/completions",
                "127.0.0.1",
                "/v1/chat/completions"
            ),
            Target::Llm {
                provider: Provider::Ollama
            }
        );
        assert_eq!(
            t("https://other.example/", "other.example", "/"),
            Target::Tool { name: "all".into() }
        );
        assert_eq!(
            t(
                "http://127.0.0.1:9/v1/messages",
                "127.0.0.1",
                "/v1/messages"
            ),
            Target::Llm {
                provider: Provider::Anthropic
            }
        );
        assert_eq!(t("http://10.0.0.1/x", "10.0.0.1", "/x"), Target::Other);
    }

    /// Classifies `url` as the proxy does: host and path from the URL, query excluded.
    fn of(c: &Classifier, url: &str) -> Target {
        let uri: http::Uri = url.parse().unwrap();
        c.classify(url, uri.host().unwrap(), uri.path())
    }

    fn llm(provider: Provider) -> Target {
        Target::Llm { provider }
    }

    #[test]
    fn an_llm_entry_keeps_unknown_paths_but_not_embeddings_or_provider_apis() {
        let tools = vec![ToolSpec {
            name: "gateway".into(),
            match_url: "http://127.0.0.1:5102/*".into(),
            protocol: Default::default(),
            transport: Default::default(),
        }];
        let llm_entries = vec![LlmEndpointSpec {
            provider: LlmProvider::Openai,
            match_url: UrlGlobs::new(OneOrMany::Many(vec!["http://127.0.0.1:5102/v1/*".into()])),
        }];
        let c = Classifier::new(&tools, &llm_entries).unwrap();
        let base = "http://127.0.0.1:5102";
        for (path, want) in [
            ("/v1/chat/completions?api-version=1", llm(Provider::Openai)),
            ("/v1/messages", llm(Provider::Openai)),
            ("/v1/generate", llm(Provider::Openai)),
            (
                "/v1/embeddings",
                Target::Embeddings {
                    provider: Provider::Openai,
                },
            ),
            ("/v1/models", Target::Other),
            ("/v1/traces/ingest", Target::Other),
            ("/v1/files?purpose=batch", Target::Other),
            ("/v1/messages/count_tokens", Target::Other),
            (
                "/health",
                Target::Tool {
                    name: "gateway".into(),
                },
            ),
        ] {
            assert_eq!(of(&c, &format!("{base}{path}")), want, "{path}");
        }
    }

    #[test]
    fn provider_hosts_are_llm_calls_only_on_generation_paths() {
        let c = Classifier::new(&[], &[]).unwrap();
        for (url, want) in [
            (
                "https://api.openai.com/v1/chat/completions?stream=true",
                llm(Provider::Openai),
            ),
            (
                "https://api.openai.com/v1/embeddings",
                Target::Embeddings {
                    provider: Provider::Openai,
                },
            ),
            ("https://api.openai.com/v1/traces/ingest", Target::Other),
            ("https://api.openai.com/v1/models", Target::Other),
            ("https://api.openai.com/v1/files", Target::Other),
            ("https://api.openai.com/v1/responses/resp_1", Target::Other),
            (
                "https://api.anthropic.com/v1/messages",
                llm(Provider::Anthropic),
            ),
            (
                "https://api.anthropic.com/v1/messages/count_tokens",
                Target::Other,
            ),
            (
                "https://api.anthropic.com/v1/messages/batches",
                Target::Other,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?alt=sse",
                llm(Provider::Gemini),
            ),
            ("http://gpu:11434/api/chat", llm(Provider::Ollama)),
            ("http://gpu:11434/api/tags", Target::Other),
        ] {
            assert_eq!(of(&c, url), want, "{url}");
        }
    }
}
