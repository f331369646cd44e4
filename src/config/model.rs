//! The `model:` section (config.md): the LLM that writes the mutation types that need one
//! (`paraphrase`, `semantic_similarity_attack`). Not the agent's LLM: flakestorm calls it
//! directly, never through its proxy. A literal `api_key` is refused by `literal_secrets`;
//! the key never reaches `{:?}`.

use std::fmt;

use serde::Deserialize;

use super::{ConfigError, HttpUrl, Parsed};
use crate::exchange::Provider;

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default = "ollama")]
    provider: Provider,
    #[serde(default = "default_name")]
    name: String,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default = "default_temperature")]
    temperature: f64,
    #[serde(default)]
    api_key: Option<String>,
    /// Added by flakestorm: the limit for one generation.
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
}

fn ollama() -> Provider {
    Provider::Ollama
}
fn default_name() -> String {
    "qwen3:8b".into()
}
fn default_temperature() -> f64 {
    0.8
}
fn default_timeout_ms() -> u64 {
    60_000
}

/// A checked `model:` section.
#[derive(Clone, PartialEq)]
pub struct ModelSpec {
    /// `google` (Flakestorm v2's word) is Gemini.
    pub provider: Provider,
    pub name: String,
    /// The provider's API root (`…/v1` for OpenAI-compatible servers).
    pub base_url: Parsed<HttpUrl>,
    /// Used when the run has no seed; with a seed, generation is at temperature 0.
    pub temperature: f64,
    pub api_key: Option<String>,
    pub timeout_ms: u64,
}

impl fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSpec")
            .field("provider", &self.provider)
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("temperature", &self.temperature)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// Parses and checks `model:`; every problem at its path.
pub(super) fn model_section(
    v: serde_json::Value,
    errors: &mut Vec<ConfigError>,
) -> Option<ModelSpec> {
    if v.is_null() {
        return None; // `model: null`: no model, as leaving the section out
    }
    let raw = super::de::section::<Raw>(v, "model", errors)?;
    let before = errors.len();
    let base_url: Parsed<HttpUrl> = raw
        .base_url
        .as_deref()
        .unwrap_or(crate::llm::generate::default_root(raw.provider))
        .into();
    if let Err(e) = base_url.get() {
        errors.push(ConfigError::new("model.base_url", e));
    }
    if raw.name.trim().is_empty() {
        errors.push(ConfigError::new("model.name", "must not be empty"));
    }
    if !(0.0..=2.0).contains(&raw.temperature) {
        errors.push(ConfigError::new(
            "model.temperature",
            format!("{} is outside 0.0..=2.0", raw.temperature),
        ));
    }
    if raw.timeout_ms == 0 {
        errors.push(ConfigError::new(
            "model.timeout_ms",
            "must be greater than 0",
        ));
    }
    let key = raw.api_key.filter(|k| !k.is_empty());
    let bad_key = key
        .as_deref()
        .is_some_and(|k| http::HeaderValue::from_str(k).is_err());
    if bad_key {
        errors.push(ConfigError::new(
            "model.api_key",
            "must be usable as an HTTP header value (no control characters)",
        ));
    }
    (errors.len() == before).then_some(ModelSpec {
        provider: raw.provider,
        name: raw.name,
        base_url,
        temperature: raw.temperature,
        api_key: key,
        timeout_ms: raw.timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: serde_json::Value) -> (Option<ModelSpec>, Vec<String>) {
        let mut errors = vec![];
        let m = model_section(v, &mut errors);
        (m, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn defaults_follow_the_provider_and_the_key_is_hidden() {
        let (m, e) = load(json!({"provider": "openai", "name": "gpt-4o-mini", "api_key": "sk-x"}));
        let m = m.unwrap_or_else(|| panic!("{e:?}"));
        assert_eq!(m.base_url.as_str(), "https://api.openai.com/v1");
        assert_eq!(m.temperature, 0.8);
        assert!(!format!("{m:?}").contains("sk-x"));
        let (m, _) = load(json!({}));
        assert_eq!(m.unwrap().provider, Provider::Ollama);
        // v2 files say `google`; the agent's `llm:` entries say `gemini`: one provider.
        for name in ["google", "gemini"] {
            let (m, e) = load(json!({"provider": name, "name": "gemini-2.5-flash"}));
            let m = m.unwrap_or_else(|| panic!("{e:?}"));
            assert_eq!(m.provider, Provider::Gemini);
            assert_eq!(
                m.base_url.as_str(),
                "https://generativelanguage.googleapis.com"
            );
        }
    }

    #[test]
    fn bad_values_are_errors_at_their_paths() {
        let (m, e) = load(
            json!({"provider": "openai", "base_url": "ftp://x", "temperature": 3, "name": " ", "timeout_ms": 0}),
        );
        assert!(m.is_none());
        assert_eq!(e.len(), 4, "{e:#?}");
        for want in [
            "model.base_url:",
            "model.name:",
            "model.temperature: 3 is outside",
            "model.timeout_ms:",
        ] {
            assert!(e.iter().any(|g| g.starts_with(want)), "{want} in {e:#?}");
        }
        let (_, e) = load(json!({"provider": "mistral"}));
        assert!(
            e[0].starts_with("model.provider: unknown variant `mistral`"),
            "{e:?}"
        );
    }
}
