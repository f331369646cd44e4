//! One invocation of the agent: the request template with the prompt JSON-escaped into it,
//! the configured method and headers, a per-attempt timeout, retries on transport errors,
//! timeouts and 5xx, and the answer read at `response_path` (a non-JSON body is the answer
//! as is).

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use crate::config::{AgentSpec, ResponsePath};

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("agent.{field}: {message}")]
    Config {
        field: &'static str,
        message: String,
    },
    #[error("TLS for the agent endpoint: {0}")]
    Tls(#[from] crate::tls::TlsError),
}

/// Why an invocation produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    #[error("agent at {url} is unreachable: {cause}")]
    Unreachable { url: String, cause: String },
    #[error("agent did not answer within {ms} ms")]
    Timeout { ms: u64 },
    #[error("agent answered HTTP {status}: {head}")]
    Status { status: u16, head: String },
    #[error("path `{path}` is null in response: {head}")]
    PathNull { path: String, head: String },
    #[error("path `{path}` not found in response: {head}")]
    PathNotFound { path: String, head: String },
}

/// The outcome of one case's invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub answer: Result<String, InvokeError>,
    /// Time of the last attempt (the one whose outcome this is).
    pub latency: Duration,
    pub attempts: u32,
    pub status: Option<u16>,
}

/// An HTTP(S) client for flakestorm's own calls (the agent, an embeddings endpoint): it
/// connects directly, never through the proxy, and trusts public and OS roots.
pub(crate) type DirectClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

pub(crate) fn direct_client() -> Result<DirectClient, crate::tls::TlsError> {
    let tls = crate::tls::client_config(None)?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = HttpsConnectorBuilder::new()
        .with_tls_config((*tls.pooled).clone())
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

/// A compiled `agent:` section. Cheap to clone.
#[derive(Clone)]
pub struct Agent {
    client: DirectClient,
    endpoint: Uri,
    method: Method,
    headers: HeaderMap,
    template: String,
    path: ResponsePath,
    timeout: Duration,
    retries: u32,
    reset: Option<Uri>,
}

/// How much of a response an error quotes.
const HEAD: usize = 200;

/// The first 200 bytes of a body, for error messages.
pub(crate) fn head(body: &[u8]) -> String {
    let cut = body.len().min(HEAD);
    String::from_utf8_lossy(&body[..cut]).into_owned()
}

impl Agent {
    /// `retries`: `advanced.retries`, extra attempts after a failed one.
    pub fn new(spec: &AgentSpec, retries: u32) -> Result<Agent, AgentError> {
        let bad = |field: &'static str, message: String| AgentError::Config { field, message };
        let endpoint: Uri = spec
            .endpoint
            .parse()
            .map_err(|e| bad("endpoint", format!("{e}")))?;
        let method: Method = spec
            .method
            .parse()
            .map_err(|e| bad("method", format!("{e}")))?;
        let path = ResponsePath::parse(&spec.response_path).map_err(|e| bad("response_path", e))?;
        let reset = spec
            .reset_endpoint
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| bad("reset_endpoint", format!("{e}")))?;
        let mut headers = HeaderMap::new();
        for (k, v) in &spec.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| bad("headers", format!("`{k}`: {e}")))?;
            let value =
                HeaderValue::from_str(v).map_err(|e| bad("headers", format!("`{k}`: {e}")))?;
            headers.insert(name, value);
        }
        Ok(Agent {
            client: direct_client()?,
            endpoint,
            method,
            headers,
            template: spec.request_template.clone(),
            path,
            timeout: Duration::from_millis(spec.timeout),
            retries,
            reset,
        })
    }

    pub fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// Checks the agent's endpoint accepts connections, before any case runs. Only a TCP
    /// connect: a probe request could change an agent's state, or crash a strict one.
    pub async fn preflight(&self) -> Result<(), InvokeError> {
        let host = self
            .endpoint
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let https = self.endpoint.scheme_str() == Some("https");
        let port = self
            .endpoint
            .port_u16()
            .unwrap_or(if https { 443 } else { 80 });
        match tokio::time::timeout(self.timeout, tokio::net::TcpStream::connect((host, port))).await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.unreachable(e.to_string())),
            Err(_) => Err(self.unreachable(format!(
                "connecting timed out after {} ms",
                self.timeout.as_millis()
            ))),
        }
    }

    /// Whether a `reset_endpoint` is POSTed before every case.
    pub fn resets(&self) -> bool {
        self.reset.is_some()
    }

    /// POSTs `reset_endpoint`, if configured, so the next case starts clean.
    pub async fn reset(&self) -> Result<(), InvokeError> {
        let Some(url) = &self.reset else {
            return Ok(());
        };
        let req = Request::post(url.clone())
            .body(Full::default())
            .map_err(|e| self.unreachable(e.to_string()))?;
        let resp = match tokio::time::timeout(self.timeout, self.client.request(req)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(InvokeError::Unreachable {
                    url: url.to_string(),
                    cause: cause(&e),
                });
            }
            Err(_) => {
                return Err(InvokeError::Timeout {
                    ms: self.timeout.as_millis() as u64,
                });
            }
        };
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(InvokeError::Status {
                status: resp.status().as_u16(),
                head: format!("(reset endpoint {url})"),
            })
        }
    }

    /// Invokes the agent with `prompt`; `extra` headers (e.g. `traceparent`) are added.
    pub async fn invoke(&self, prompt: &str, extra: &HeaderMap) -> Reply {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let started = Instant::now();
            let (answer, status) = self.attempt(prompt, extra).await;
            let retryable = match &answer {
                Err(InvokeError::Unreachable { .. } | InvokeError::Timeout { .. }) => true,
                Err(InvokeError::Status { status, .. }) => *status >= 500,
                _ => false,
            };
            if !retryable || attempts > self.retries {
                return Reply {
                    answer,
                    latency: started.elapsed(),
                    attempts,
                    status,
                };
            }
            // A short, growing pause; paused-time tests skip it.
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempts))).await;
        }
    }

    async fn attempt(
        &self,
        prompt: &str,
        extra: &HeaderMap,
    ) -> (Result<String, InvokeError>, Option<u16>) {
        let body = render(&self.template, prompt);
        let mut req = Request::builder()
            .method(self.method.clone())
            .uri(self.endpoint.clone());
        if let Some(h) = req.headers_mut() {
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            h.extend(self.headers.clone());
            h.extend(extra.clone());
        }
        let req = match req.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            Err(e) => return (Err(self.unreachable(e.to_string())), None),
        };
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| self.unreachable(cause(&e)))?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| self.unreachable(e.to_string()))?
                .to_bytes();
            Ok::<_, InvokeError>((status, body))
        };
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => (
                Err(InvokeError::Timeout {
                    ms: self.timeout.as_millis() as u64,
                }),
                None,
            ),
            Ok(Err(e)) => (Err(e), None),
            Ok(Ok((status, body))) if !(200..300).contains(&status) => (
                Err(InvokeError::Status {
                    status,
                    head: head(&body),
                }),
                Some(status),
            ),
            Ok(Ok((status, body))) => (extract(&body, &self.path), Some(status)),
        }
    }

    fn unreachable(&self, cause: String) -> InvokeError {
        InvokeError::Unreachable {
            url: self.endpoint.to_string(),
            cause,
        }
    }
}

/// The template with `{prompt}` replaced by the prompt, JSON-escaped (quotes, newlines,
/// control characters), so `{"input": "{prompt}"}` stays valid JSON for any prompt.
pub fn render(template: &str, prompt: &str) -> String {
    let quoted = serde_json::to_string(prompt).unwrap_or_default();
    template.replace("{prompt}", &quoted[1..quoted.len().saturating_sub(1)])
}

/// The answer in a response body: the string at `path` (other JSON values as JSON text),
/// or the whole body when it is not JSON.
pub fn extract(body: &[u8], path: &ResponsePath) -> Result<String, InvokeError> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(String::from_utf8_lossy(body).into_owned());
    };
    match path.get(&v) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        // `null` is no answer, not the text "null".
        Some(serde_json::Value::Null) => Err(InvokeError::PathNull {
            path: path.as_str().to_string(),
            head: head(body),
        }),
        Some(other) => Ok(other.to_string()),
        None => Err(InvokeError::PathNotFound {
            path: path.as_str().to_string(),
            head: head(body),
        }),
    }
}

/// The root cause of a client error, e.g. "Connection refused (os error 111)".
pub(crate) fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_json_escaped_into_the_template() {
        let body = render(
            r#"{"input": "{prompt}", "n": 1}"#,
            "say \"hi\"\nthen\tstop \\",
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["input"], "say \"hi\"\nthen\tstop \\");
    }

    #[test]
    fn answers_by_path_or_as_text() {
        let path = ResponsePath::parse("data.answer").unwrap();
        assert_eq!(
            extract(br#"{"data": {"answer": "42"}}"#, &path),
            Ok("42".into())
        );
        assert_eq!(
            extract(br#"{"data": {"answer": {"n": 4}}}"#, &path),
            Ok(r#"{"n":4}"#.into())
        );
        assert_eq!(extract(b"plain words", &path), Ok("plain words".into()));
        assert_eq!(
            extract(br#"{"data": {"answer": null}}"#, &path)
                .unwrap_err()
                .to_string(),
            r#"path `data.answer` is null in response: {"data": {"answer": null}}"#,
            "null is no answer"
        );
        let err = extract(br#"{"result": "x"}"#, &path)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            r#"path `data.answer` not found in response: {"result": "x"}"#
        );
        let long = format!(r#"{{"pad": "{}"}}"#, "y".repeat(500));
        let err = extract(long.as_bytes(), &path).unwrap_err().to_string();
        assert_eq!(
            err.len(),
            "path `data.answer` not found in response: ".len() + 200
        );
    }
}
