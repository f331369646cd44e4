//! The `model:` LLM's HTTP API: one instruction in, one text out (each provider's shapes
//! are `llm::generate`'s). Called
//! directly (the driver's client), never through flakestorm's proxy. With a run seed the
//! call asks for temperature 0 and passes the seed where the provider takes one, so
//! reruns get the same variants as far as the provider allows.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};

use crate::agent::{DirectClient, body_head, direct_client, root_cause};
use crate::config::ModelSpec;
use crate::llm::generate;

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
        let p = self.spec.provider;
        let (path, body) = generate::request(p, &self.spec.name, instruction, temperature, seed);
        let url = format!("{}{path}", self.root);
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| ModelError::Unreachable {
                url: url.clone(),
                cause: e.to_string(),
            })?;
        let mut req = Request::post(uri).header(http::header::CONTENT_TYPE, "application/json");
        if let Some(key) = &self.spec.api_key {
            let (name, value) = generate::key_header(p, key);
            if let Ok(mut v) = HeaderValue::from_str(&value) {
                v.set_sensitive(true);
                req = req.header(name, v);
            }
        }
        for (name, value) in generate::fixed_headers(p) {
            req = req.header(*name, *value);
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
        generate::text_of(p, &body).ok_or_else(|| ModelError::NoText {
            provider: p.as_str().to_string(),
            head: body_head(&body),
        })
    }
}
