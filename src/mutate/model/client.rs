//! The `model:` LLM's HTTP API, per provider: one instruction in, one text out. Called
//! directly (the driver's client), never through flakestorm's proxy. With a run seed the
//! call asks for temperature 0 and passes the seed where the provider takes one, so
//! reruns get the same variants as far as the provider allows.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::agent::{DirectClient, body_head, direct_client, root_cause};
use crate::config::{ModelProvider, ModelSpec};

/// Why a generation produced no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("the model at {url} is unreachable: {cause}")]
    Unreachable { url: String, cause: String },
    #[error("the model did not answer within {ms} ms")]
    Timeout { ms: u64 },
    #[error("the model answered HTTP {status}: {head}")]
    Status { status: u16, head: String },
    #[error("the model's answer has no text where {provider} puts it: {head}")]
    NoText { provider: String, head: String },
}

impl ModelError {
    /// Whether the model cannot be used at all (every other call would fail the same way).
    pub fn fatal(&self) -> bool {
        match self {
            ModelError::Unreachable { .. } => true,
            ModelError::Status { status, .. } => matches!(status, 401 | 403 | 404),
            ModelError::Timeout { .. } | ModelError::NoText { .. } => false,
        }
    }
}

#[derive(Clone)]
pub struct ModelClient {
    client: DirectClient,
    spec: ModelSpec,
    root: String,
}

impl ModelClient {
    pub fn new(spec: &ModelSpec) -> Result<ModelClient, crate::tls::TlsError> {
        Ok(ModelClient {
            client: direct_client(true)?,
            spec: spec.clone(),
            root: spec.base_url.as_str().trim_end_matches('/').to_string(),
        })
    }

    /// The model's text for `instruction`; `seed` makes it temperature 0 (and seeded).
    pub async fn complete(
        &self,
        instruction: &str,
        seed: Option<u64>,
    ) -> Result<String, ModelError> {
        let temperature = if seed.is_some() {
            0.0
        } else {
            self.spec.temperature
        };
        let name = &self.spec.name;
        let (path, body) = match self.spec.provider {
            ModelProvider::Openai => {
                let mut b = json!({"model": name, "temperature": temperature,
                    "messages": [{"role": "user", "content": instruction}]});
                if let Some(s) = seed {
                    b["seed"] = json!(s);
                }
                ("/chat/completions".to_string(), b)
            }
            ModelProvider::Ollama => {
                let mut options = json!({"temperature": temperature});
                if let Some(s) = seed {
                    options["seed"] = json!(s);
                }
                let b = json!({"model": name, "stream": false, "options": options,
                    "messages": [{"role": "user", "content": instruction}]});
                ("/api/chat".to_string(), b)
            }
            ModelProvider::Anthropic => {
                let b = json!({"model": name, "max_tokens": 1024, "temperature": temperature.min(1.0),
                    "messages": [{"role": "user", "content": instruction}]});
                ("/v1/messages".to_string(), b)
            }
            ModelProvider::Google => {
                let b = json!({"contents": [{"role": "user", "parts": [{"text": instruction}]}],
                    "generationConfig": {"temperature": temperature}});
                (format!("/v1beta/models/{name}:generateContent"), b)
            }
        };
        let url = format!("{}{path}", self.root);
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| ModelError::Unreachable {
                url: url.clone(),
                cause: e.to_string(),
            })?;
        let mut req = Request::post(uri).header(http::header::CONTENT_TYPE, "application/json");
        if let Some(key) = &self.spec.api_key {
            let (name, value) = match self.spec.provider {
                ModelProvider::Openai | ModelProvider::Ollama => {
                    ("authorization", format!("Bearer {key}"))
                }
                ModelProvider::Anthropic => ("x-api-key", key.clone()),
                ModelProvider::Google => ("x-goog-api-key", key.clone()),
            };
            if let Ok(mut v) = HeaderValue::from_str(&value) {
                v.set_sensitive(true);
                req = req.header(name, v);
            }
        }
        if self.spec.provider == ModelProvider::Anthropic {
            req = req.header("anthropic-version", "2023-06-01");
        }
        let unreachable = |cause: String| ModelError::Unreachable {
            url: url.clone(),
            cause,
        };
        let req = req
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| unreachable(e.to_string()))?;
        let ms = self.spec.timeout_ms;
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| unreachable(root_cause(&e)))?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(root_cause(&e)))?
                .to_bytes();
            Ok::<_, ModelError>((status, body))
        };
        let (status, body) = tokio::time::timeout(Duration::from_millis(ms), call)
            .await
            .map_err(|_| ModelError::Timeout { ms })??;
        if !(200..300).contains(&status) {
            return Err(ModelError::Status {
                status,
                head: body_head(&body),
            });
        }
        text_of(self.spec.provider, &body).ok_or_else(|| ModelError::NoText {
            provider: format!("{:?}", self.spec.provider).to_lowercase(),
            head: body_head(&body),
        })
    }
}

/// Where each provider puts the answer's text.
fn text_of(provider: ModelProvider, body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = match provider {
        ModelProvider::Openai => v.pointer("/choices/0/message/content"),
        ModelProvider::Ollama => v.pointer("/message/content"),
        ModelProvider::Anthropic => v.pointer("/content/0/text"),
        ModelProvider::Google => v.pointer("/candidates/0/content/parts/0/text"),
    };
    text.and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_providers_text() {
        let cases = [
            (
                ModelProvider::Openai,
                r#"{"choices":[{"message":{"content":"a"}}]}"#,
            ),
            (
                ModelProvider::Ollama,
                r#"{"message":{"role":"assistant","content":"a"}}"#,
            ),
            (
                ModelProvider::Anthropic,
                r#"{"content":[{"type":"text","text":"a"}]}"#,
            ),
            (
                ModelProvider::Google,
                r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#,
            ),
        ];
        for (p, body) in cases {
            assert_eq!(text_of(p, body.as_bytes()).as_deref(), Some("a"), "{p:?}");
            assert_eq!(text_of(p, b"{}"), None);
        }
    }
}
