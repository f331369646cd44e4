//! `advanced.embeddings`: an OpenAI-compatible `/v1/embeddings` endpoint for `similarity`
//! and `behavior_unchanged` (absent: the built-in lexical similarity). The spec and its
//! checks only; the client lives in `run::embed`.

use std::fmt;

use http::{HeaderValue, Uri};
use serde::{Deserialize, Serialize};

use super::{ConfigError, FromText, Parsed};

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsSpec {
    /// Full URL of the endpoint, e.g. `http://127.0.0.1:11434/v1/embeddings`.
    pub url: Parsed<EmbeddingsUrl>,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    #[serde(default)]
    pub api_key: Option<BearerKey>,
    /// Limit for one request (a batch of texts).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    30_000
}

impl super::schema::Config {
    /// Whether a check compares answers (`similarity`, `behavior_unchanged`): the runs
    /// and merges of such a config ask `advanced.embeddings`, if set.
    pub fn compares_answers(&self) -> bool {
        use crate::checks::spec::Check;
        let contract = self.contract.iter().flat_map(|c| &c.invariants);
        let mut invariants = self.invariants.iter().chain(contract.map(|i| &i.invariant));
        invariants.any(|i| {
            matches!(
                i.check,
                Check::Similarity { .. } | Check::BehaviorUnchanged { .. }
            )
        })
    }
}

/// The key never reaches logs, even through `{:?}` of the whole config.
impl fmt::Debug for EmbeddingsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingsSpec")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// `advanced.embeddings.url`: an absolute http(s) URL with a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsUrl(pub Uri);

impl FromText for EmbeddingsUrl {
    fn from_text(value: &str) -> Result<Self, String> {
        value
            .parse::<Uri>()
            .ok()
            .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
            .map(EmbeddingsUrl)
            .ok_or_else(|| {
                format!(
                    "`{value}` is not an http(s) URL with a host, e.g. http://127.0.0.1:11434/v1/embeddings"
                )
            })
    }
}

/// `advanced.embeddings.api_key`, compiled as read into the `Authorization` value sent
/// (marked sensitive). Never shown: not by `{:?}`, not when serialized.
#[derive(Clone, PartialEq)]
pub struct BearerKey(Result<HeaderValue, String>);

impl BearerKey {
    /// `Bearer <key>`, or why the key cannot be sent (reported at load).
    pub fn header(&self) -> Result<&HeaderValue, &str> {
        self.0.as_ref().map_err(String::as_str)
    }
}

impl FromText for BearerKey {
    fn from_text(key: &str) -> Result<Self, String> {
        if key.is_empty() {
            return Ok(BearerKey(Err(
                "is empty (an unset variable?); leave it out for endpoints without a key".into(),
            )));
        }
        let value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map(|mut v| {
                v.set_sensitive(true);
                v
            })
            .map_err(|_| "must be usable as an HTTP header value (no control characters)".into());
        Ok(BearerKey(value))
    }
}

impl fmt::Debug for BearerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for BearerKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for BearerKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        BearerKey::from_text(&key).map_err(serde::de::Error::custom)
    }
}

pub(super) fn check_embeddings(e: &EmbeddingsSpec, errors: &mut Vec<ConfigError>) {
    let at = |field: &str| format!("advanced.embeddings.{field}");
    if let Err(m) = e.url.get() {
        errors.push(ConfigError::new(at("url"), m));
    }
    if e.model.trim().is_empty() {
        errors.push(ConfigError::new(at("model"), "must not be empty"));
    }
    if e.timeout_ms == 0 {
        errors.push(ConfigError::new(at("timeout_ms"), "must be greater than 0"));
    }
    if let Some(Err(m)) = e.api_key.as_ref().map(BearerKey::header) {
        errors.push(ConfigError::new(at("api_key"), m));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Overrides, load_with_env};

    fn load(yaml: &str) -> Result<super::super::Config, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flakestorm.yaml");
        std::fs::write(&path, yaml).unwrap();
        let vars = [("KEY".to_string(), "sk-test".to_string())].into();
        load_with_env(Some(&path), &Overrides::default(), &vars)
            .map(|l| l.config)
            .map_err(|e| e.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_full_section_loads_with_defaults_and_expanded_key() {
        let c = load("advanced:\n  embeddings: {url: 'http://127.0.0.1:1/v1/embeddings', model: m, api_key: '${KEY}'}\n")
            .unwrap();
        let e = c.advanced.embeddings.unwrap();
        assert_eq!((e.model.as_str(), e.timeout_ms), ("m", 30_000));
        assert_eq!(
            e.api_key.as_ref().unwrap().header().unwrap(),
            "Bearer sk-test"
        );
        assert!(!format!("{e:?}").contains("sk-test"), "Debug hides the key");
        assert_eq!(
            load("advanced: {seed: 1}\n").unwrap().advanced.embeddings,
            None
        );
    }

    #[test]
    fn bad_values_are_errors_with_their_paths() {
        let errors = load(
            "advanced:\n  embeddings: {url: 'ftp://x/v1/embeddings', model: ' ', timeout_ms: 0, api_key: ''}\n",
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "advanced.embeddings.url: `ftp://x/v1/embeddings` is not an http(s) URL with a host, e.g. http://127.0.0.1:11434/v1/embeddings",
                "advanced.embeddings.model: must not be empty",
                "advanced.embeddings.timeout_ms: must be greater than 0",
                "advanced.embeddings.api_key: is empty (an unset variable?); leave it out for endpoints without a key",
            ]
        );
        let errors = load("advanced:\n  embeddings: {url: 'not a url', model: m}\n").unwrap_err();
        assert!(
            errors[0].starts_with("advanced.embeddings.url: `not a url`"),
            "{errors:?}"
        );
        let errors = load("advanced:\n  embeddings: {url: 'http://h/', modle: m}\n").unwrap_err();
        assert!(
            errors[0].starts_with("advanced.embeddings.modle: unknown field `modle`"),
            "{errors:?}"
        );
    }
}
