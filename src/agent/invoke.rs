//! One invocation of the agent: the request template with the prompt JSON-escaped into it,
//! the configured method and headers, a per-attempt timeout, and the answer read at
//! `response_path`. The agent's own answer is judged, whatever it is: an HTTP 5xx or a
//! timeout is an answer (none), never retried. Only a failure before any response byte (the
//! connection refused or closed) is retried, `advanced.retries` times, and every attempt
//! is on a fresh connection, so a connection the agent closed is never reused.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use super::answer::{AnswersRead, PathTally, cause, extract, head, render};
use super::dial::{Connector, Dialer, host_port};
use crate::config::AgentTarget;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("TLS for the agent endpoint: {0}")]
    Tls(#[from] crate::tls::TlsError),
}

/// Why an invocation produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// No response byte came back: the connection failed or was closed. The only failure
    /// that is retried.
    #[error("agent at {url} is unreachable: {cause}")]
    Unreachable { url: String, cause: String },
    #[error("agent did not answer within {ms} ms")]
    Timeout { ms: u64 },
    #[error("agent answered HTTP {status}: {head}")]
    Status { status: u16, head: String },
    /// The response head arrived, then its body broke off.
    #[error("agent's response broke off after HTTP {status}: {cause}")]
    BodyFailed { status: u16, cause: String },
    /// A script agent (`agent::script`) exited with a failure status; `stderr` is the end
    /// of what it wrote there, as `: <text>`, or empty.
    #[error("agent script exited ({status}){stderr}")]
    ScriptFailed { status: String, stderr: String },
    /// A script agent's process could not be started (no `sh`, no process left): the
    /// machine's fault, not the agent's, so its case is not judged. The command is not
    /// quoted: it may hold secrets `${VAR}` expanded at load.
    #[error("`sh -c <agent.command>` did not start: {cause}")]
    ScriptNotStarted { cause: String },
    /// `agent.reset_endpoint` answered an error before the case (`agent::reset`): the
    /// agent was not invoked. `body` is the start of its answer, redacted.
    #[error("agent.reset_endpoint {url} answered HTTP {status}: {body}")]
    Reset {
        url: String,
        status: u16,
        body: String,
    },
    #[error("path `{path}` is null in response: {head}")]
    PathNull { path: String, head: String },
    /// `keys`: the response's top-level keys (none when it is not a JSON object).
    #[error("path `{path}` not found in response: {head}")]
    PathNotFound {
        path: String,
        head: String,
        keys: Vec<String>,
    },
}

impl InvokeError {
    /// Whether the agent sent no response byte: nothing of it was judged, so the attempt
    /// may be retried.
    pub fn before_response(&self) -> bool {
        match self {
            InvokeError::Unreachable { .. } => true,
            InvokeError::Timeout { .. }
            | InvokeError::Status { .. }
            | InvokeError::BodyFailed { .. }
            | InvokeError::ScriptFailed { .. }
            | InvokeError::ScriptNotStarted { .. }
            | InvokeError::Reset { .. }
            | InvokeError::PathNull { .. }
            | InvokeError::PathNotFound { .. } => false,
        }
    }
}

/// An attempt that failed before any response byte and was retried.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedAttempt {
    pub error: InvokeError,
    pub latency: Duration,
}

/// The outcome of one case's invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub answer: Result<String, InvokeError>,
    /// Time of the last attempt (the one whose outcome this is).
    pub latency: Duration,
    pub attempts: u32,
    pub status: Option<u16>,
    /// The attempts before the last one, oldest first.
    pub retried: Vec<FailedAttempt>,
    /// The answer's `flakestorm-settle` header, as sent (`done`: nothing more of this case
    /// will come; docs/config.md, "How a case settles").
    pub settle: Option<String>,
}

/// An HTTP(S) client for flakestorm's own calls (the agent, an embeddings endpoint): it
/// connects directly, never through the proxy, and trusts public and OS roots.
pub(crate) type DirectClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// `pooled: false` opens a fresh connection for every request and keeps none: an agent under
/// test may close a connection at any moment (after an error, on its keep-alive timeout),
/// and a request sent on such a connection fails for no fault of the agent's.
pub(crate) fn direct_client(pooled: bool) -> Result<DirectClient, crate::tls::TlsError> {
    let tls = crate::tls::client_config(&[])?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = HttpsConnectorBuilder::new()
        .with_tls_config((*tls.pooled).clone())
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    let mut builder = Client::builder(TokioExecutor::new());
    if !pooled {
        builder.pool_max_idle_per_host(0);
    }
    Ok(builder.build(https))
}

/// The driver's client to the agent: direct, through its [`Dialer`] (inside the agent's
/// namespace under `capture: netns`), never pooled (see `direct_client`).
pub(crate) type AgentClient = Client<HttpsConnector<Connector>, Full<Bytes>>;

/// `direct_client(false)` whose connections are made by `dialer`.
pub(crate) fn agent_client(dialer: &Dialer) -> Result<AgentClient, crate::tls::TlsError> {
    let tls = crate::tls::client_config(&[])?;
    let https = HttpsConnectorBuilder::new()
        .with_tls_config((*tls.pooled).clone())
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(Connector(dialer.clone()));
    let mut builder = Client::builder(TokioExecutor::new());
    builder.pool_max_idle_per_host(0);
    Ok(builder.build(https))
}

/// The driver of one agent: its compiled `agent:` section and a client. Cheap to clone;
/// the clones share what the answers said of `response_path`, and their dialer.
#[derive(Clone)]
pub struct Agent {
    client: AgentClient,
    dialer: Dialer,
    target: Arc<AgentTarget>,
    retries: u32,
    paths: Arc<PathTally>,
    /// What the run's report must say of this agent (`note`), shared by its clones.
    notes: Arc<super::notes::Notes>,
    /// How each case runs the agent when it is a script (`with_script`).
    pub(super) script: Option<Arc<super::script::Script>>,
}

impl Agent {
    /// `retries`: `advanced.retries`, extra attempts after one that got no response byte.
    pub fn new(target: &AgentTarget, retries: u32) -> Result<Agent, AgentError> {
        let dialer = Dialer::default();
        Ok(Agent {
            client: agent_client(&dialer)?,
            dialer,
            target: Arc::new(target.clone()),
            retries,
            paths: Arc::default(),
            notes: Arc::default(),
            script: None,
        })
    }

    /// This driver running `script` once per case instead of invoking an endpoint.
    pub(crate) fn with_script(mut self, script: super::script::Script) -> Agent {
        self.script = Some(Arc::new(script));
        self
    }

    /// How many answers were read so far, and how many lacked `response_path`: where a run
    /// starts, for `response_path_missing`.
    pub fn answers_read(&self) -> AnswersRead {
        self.paths.now()
    }

    /// Why `response_path` is a config error, when every answer read since `since` (one at
    /// least) lacked it: the keys the answers have instead.
    pub fn response_path_missing(&self, since: AnswersRead) -> Option<String> {
        self.paths.missing_since(since, &self.target.response_path)
    }

    pub fn endpoint(&self) -> &Uri {
        &self.target.endpoint
    }

    /// Where its connections to the agent are made (`capture: netns`: in the agent's
    /// namespace).
    pub fn dialer(&self) -> &Dialer {
        &self.dialer
    }

    /// Something the run's report must say of this agent, once (`take_notes`).
    pub fn note(&self, what: String) {
        self.notes.add(what);
    }

    /// What was noted so far (`note`), taken.
    pub fn take_notes(&self) -> Vec<String> {
        self.notes.take()
    }

    /// Its client to the agent (direct, never pooled).
    pub(super) fn client(&self) -> &AgentClient {
        &self.client
    }

    /// The compiled `agent:` section this driver uses.
    pub fn target(&self) -> &AgentTarget {
        &self.target
    }

    /// Checks the agent's endpoint accepts connections, before any case runs. Only a TCP
    /// connect: a probe request could change an agent's state, or crash a strict one.
    pub async fn preflight(&self) -> Result<(), InvokeError> {
        // A script starts with each case: nothing listens before.
        if self.target.script {
            return Ok(());
        }
        let (host, port) =
            host_port(&self.target.endpoint).map_err(|e| self.unreachable(e.to_string()))?;
        match tokio::time::timeout(self.target.timeout, self.dialer.connect(&host, port)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.unreachable(e.to_string())),
            Err(_) => Err(self.unreachable(format!(
                "connecting timed out after {} ms",
                self.target.timeout.as_millis()
            ))),
        }
    }

    /// Invokes the agent with `prompt`; `extra` headers (e.g. `traceparent`) are added.
    pub async fn invoke(&self, prompt: &str, extra: &HeaderMap) -> Reply {
        self.invoke_marked(prompt, extra, |_| {}).await
    }

    /// `invoke`, calling `mark(n)` just before attempt `n` (1-based) starts, so a run can
    /// tell the traffic of the judged attempt from that of earlier ones.
    pub async fn invoke_marked(
        &self,
        prompt: &str,
        extra: &HeaderMap,
        mut mark: impl FnMut(u32),
    ) -> Reply {
        let mut retried = vec![];
        loop {
            let attempts = retried.len() as u32 + 1;
            mark(attempts);
            let started = Instant::now();
            let (answer, status, settle) = self.attempt(prompt, extra).await;
            let latency = started.elapsed();
            match answer {
                Err(error) if error.before_response() && attempts <= self.retries => {
                    retried.push(FailedAttempt { error, latency });
                }
                answer => {
                    return Reply {
                        answer,
                        latency,
                        attempts,
                        status,
                        retried,
                        settle,
                    };
                }
            }
            // A short, growing pause; paused-time tests skip it.
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempts))).await;
        }
    }

    async fn attempt(
        &self,
        prompt: &str,
        extra: &HeaderMap,
    ) -> (Result<String, InvokeError>, Option<u16>, Option<String>) {
        if let Some(script) = &self.script {
            let answer = match script.run(prompt, self.target.timeout).await {
                Ok(out) => super::script::answer(&out, &self.target.response_path),
                Err(e) => return (Err(e), None, None),
            };
            self.paths.note(&answer);
            return (answer, None, None);
        }
        let body = render(&self.target.request_template, prompt);
        let mut req = Request::builder()
            .method(self.target.method.clone())
            .uri(self.target.endpoint.clone());
        if let Some(h) = req.headers_mut() {
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            h.extend(self.target.headers.clone());
            h.extend(extra.clone());
        }
        let req = match req.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            Err(e) => return (Err(self.unreachable(e.to_string())), None, None),
        };
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| self.unreachable(cause(&e)))?;
            let status = resp.status().as_u16();
            let settle = super::settle_said::header(resp.headers());
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| InvokeError::BodyFailed {
                    status,
                    cause: cause(&e),
                })?
                .to_bytes();
            Ok::<_, InvokeError>((status, body, settle))
        };
        match tokio::time::timeout(self.target.timeout, call).await {
            Err(_) => (
                Err(InvokeError::Timeout {
                    ms: self.target.timeout.as_millis() as u64,
                }),
                None,
                None,
            ),
            Ok(Err(e)) => (Err(e), None, None),
            Ok(Ok((status, body, settle))) if !(200..300).contains(&status) => (
                Err(InvokeError::Status {
                    status,
                    head: head(&body),
                }),
                Some(status),
                settle,
            ),
            Ok(Ok((status, body, settle))) => {
                let answer = extract(&body, &self.target.response_path);
                self.paths.note(&answer);
                (answer, Some(status), settle)
            }
        }
    }

    fn unreachable(&self, cause: String) -> InvokeError {
        InvokeError::Unreachable {
            url: self.target.endpoint.to_string(),
            cause,
        }
    }
}
