//! `advanced.embeddings`: a client for an OpenAI-compatible `/v1/embeddings` endpoint
//! (`Embedder`), and `measure`, the one call the run engine makes before judging cells: it
//! embeds every text the similarity checks will compare and hands them the resulting
//! `checks::Similarity`. Requests go straight to the endpoint, never through the proxy (no
//! chaos on the harness's own calls). The comparison itself stays in `checks` (pure).

mod measure;
mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};

use crate::agent::{DirectClient, body_head, direct_client, root_cause};
use crate::config::{Config, EmbeddingsSpec};

pub(crate) use measure::measure;
pub use wire::Cause;

/// Most inputs sent in one request (OpenAI accepts 2048; local servers are slower).
const BATCH: usize = 256;

/// Why texts got no vectors: the endpoint (without query or credentials) and the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embeddings endpoint {url}: {cause}")]
pub struct EmbedError {
    pub url: String,
    pub cause: Cause,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedderError {
    #[error("advanced.embeddings.{field}: {message}")]
    Config {
        field: &'static str,
        message: String,
    },
    #[error("TLS for the embeddings endpoint: {0}")]
    Tls(#[from] crate::tls::TlsError),
    /// The endpoint did not answer a first request as an embeddings endpoint does.
    #[error("{0} (pre-flight of advanced.embeddings)")]
    Preflight(EmbedError),
}

/// A compiled `advanced.embeddings`. Cheap to clone; clones share one cache of vectors, so
/// a text is sent once however many scenarios compare it.
#[derive(Clone)]
pub struct Embedder {
    client: DirectClient,
    url: Uri,
    shown: String,
    model: String,
    auth: Option<HeaderValue>,
    timeout: Duration,
    cache: Arc<Mutex<HashMap<String, Vec<f32>>>>,
}

impl Embedder {
    /// `advanced.embeddings` of `config`, tried with one request when an invariant
    /// compares texts (so a run never starts with an endpoint it cannot use).
    pub async fn for_config(config: &Config) -> Result<Option<Embedder>, EmbedderError> {
        let Some(spec) = &config.advanced.embeddings else {
            return Ok(None);
        };
        let embedder = Embedder::new(spec)?;
        if config.compares_answers() {
            embedder
                .preflight()
                .await
                .map_err(EmbedderError::Preflight)?;
        }
        Ok(Some(embedder))
    }

    pub fn new(spec: &EmbeddingsSpec) -> Result<Embedder, EmbedderError> {
        let bad = |field, message| EmbedderError::Config { field, message };
        // Compiled at load; a config that loaded has neither error.
        let url = spec.url.get().map_err(|e| bad("url", e.into()))?.0.clone();
        let auth = match &spec.api_key {
            Some(k) => Some(k.header().map_err(|e| bad("api_key", e.into()))?.clone()),
            None => None,
        };
        let shown = format!(
            "{}://{}{}",
            url.scheme_str().unwrap_or("http"),
            url.host().unwrap_or_default(),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        ) + url.path();
        Ok(Embedder {
            client: direct_client(true)?,
            url,
            shown,
            model: spec.model.clone(),
            auth,
            timeout: Duration::from_millis(spec.timeout_ms),
            cache: Arc::default(),
        })
    }

    /// Embeds one short text before any case runs, so a wrong URL, model or key stops the
    /// run at once instead of leaving every similarity cell not applicable.
    pub async fn preflight(&self) -> Result<(), EmbedError> {
        self.request(&["flakestorm pre-flight"]).await.map(|_| ())
    }

    /// The vector of each distinct non-blank text, in requests of at most 256 inputs.
    pub async fn embed(&self, texts: &[&str]) -> Result<HashMap<String, Vec<f32>>, EmbedError> {
        let mut wanted: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !t.trim().is_empty())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let missing: Vec<&str> = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            wanted
                .iter()
                .copied()
                .filter(|t| !cache.contains_key(*t))
                .collect()
        };
        for batch in missing.chunks(BATCH) {
            let vectors = self.request(batch).await?;
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.extend(batch.iter().map(|t| t.to_string()).zip(vectors));
        }
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        Ok(wanted
            .iter()
            .filter_map(|t| cache.get(*t).map(|v| (t.to_string(), v.clone())))
            .collect())
    }

    async fn request(&self, input: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let fail = |cause| EmbedError {
            url: self.shown.clone(),
            cause,
        };
        let mut req = Request::post(self.url.clone()).header(CONTENT_TYPE, "application/json");
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let body = Full::new(Bytes::from(wire::request_body(&self.model, input)));
        let req = req
            .body(body)
            .map_err(|e| fail(Cause::Unreachable(e.to_string())))?;
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| Cause::Unreachable(root_cause(&e)))?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| Cause::Unreachable(root_cause(&e)))?
                .to_bytes();
            if !status.is_success() {
                let head = body_head(&body);
                return Err(Cause::Status {
                    status: status.as_u16(),
                    head,
                });
            }
            wire::parse(&body, input.len())
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result.map_err(fail),
            Err(_) => Err(fail(Cause::Timeout(self.timeout.as_millis() as u64))),
        }
    }
}
