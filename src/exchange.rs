//! The exchange record: one intercepted request and its outcome (a response or an error,
//! never both), its target, timings and byte counts. Plain serde data; depends on nothing
//! else in the crate so every module (journal, checks, reports, tapes) can share it, as
//! they share the set of bytes a URL part keeps unescaped.

use serde::{Deserialize, Serialize};

mod fault_kind;
mod mcp_call;
mod planted;
mod usage;
pub use fault_kind::FaultKind;
pub use mcp_call::{McpCall, TOOLS_CALL, TOOLS_LIST, TcpBytes};
pub use planted::{CanaryLeak, Planted};
pub use usage::Usage;

/// An LLM provider whose wire format flakestorm understands. Declaration order is the
/// order detection and tool-call reading try them (`llm::all`); names are serde's.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Provider {
    Openai,
    Anthropic,
    /// Also read as `google` (the `model:` provider of Flakestorm v2 files).
    #[serde(alias = "google")]
    Gemini,
    Ollama,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What an intercepted request is: a generation call to an LLM, an embeddings call, a call
/// to a named tool, or anything else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Llm {
        provider: Provider,
    },
    /// Model infrastructure, not an LLM call and not a tool: no chaos rule applies to it.
    Embeddings {
        provider: Provider,
    },
    Tool {
        name: String,
    },
    Other,
}

impl Target {
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Llm { .. } => "llm",
            Target::Embeddings { .. } => "embeddings",
            Target::Tool { .. } => "tool",
            Target::Other => "other",
        }
    }
}

/// How the request reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Absolute-form `http://` request on the proxy port, or a plain HTTP request inside
    /// a `CONNECT` tunnel.
    Forward,
    /// Decrypted from a TLS-intercepted `CONNECT` tunnel.
    Intercepted,
    /// Origin-form request matched by a `proxy.reverse` prefix.
    Reverse,
    /// A TCP connection captured in the agent's namespace (`agent.capture: netns`) that
    /// carried neither HTTP nor TLS: relayed untouched; `tcp` counts its bytes.
    Tcp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestHead {
    pub method: String,
    /// Full URL, `scheme://host[:port]/path?query` (query values redacted in the journal).
    pub url: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseHead {
    pub status: u16,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

/// Who produced an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSource {
    /// The upstream server or the network to it.
    Upstream,
    /// The client (agent) side: bad request, failed auth, bad TLS.
    Downstream,
    /// A fault flakestorm injected on purpose.
    Injected,
    /// A flakestorm bug or resource problem.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub source: ErrorSource,
    /// Stable machine name, also sent as `x-flakestorm-error` (e.g. `upstream_connect`).
    pub kind: ErrorKind,
    pub message: String,
}

/// What ended an exchange in an error rather than a response: flakestorm's own errors (sent
/// as `x-flakestorm-error`), the client giving up, or a fault closing the connection. Names
/// are serde's, derived (`name`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    UpstreamConnect,
    UpstreamTimeout,
    UpstreamTls,
    UpstreamProtocol,
    BadRequest,
    BadConnectTarget,
    ProxyAuthRequired,
    /// The destination is one the proxy refuses (its own listeners; loopback or link-local
    /// when listening off loopback).
    ForbiddenTarget,
    /// The client aborted the TLS handshake inside a CONNECT tunnel (it does not trust
    /// flakestorm's CA). Never answered: journaled only.
    ClientTls,
    /// A chaos rewrite would have made the request bigger than `proxy.max_rewrite_bytes`;
    /// the exchange fails instead of the process.
    RewriteTooLarge,
    Internal,
    /// The client gave up before the answer (it closed the connection or cancelled).
    ClientCancelled,
    /// A fault closed the connection without a response (`timeout` with `then: close`,
    /// `reset` before any byte).
    ConnectionClosed,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a response body ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum BodyEnd {
    Complete,
    /// The client went away before the body was delivered; not an error of anyone's.
    ClientDisconnected,
    /// The upstream broke the body off after the head was sent.
    UpstreamAborted {
        message: String,
    },
    /// The connection was upgraded (101, e.g. WebSocket); bytes after it are not recorded.
    Upgraded,
    /// The proxy broke the body off after the head was sent: a chaos rewrite would have
    /// gone over `proxy.max_rewrite_bytes`.
    ProxyAborted {
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Response {
        response: ResponseHead,
        body: BodyEnd,
    },
    /// `status` is what the proxy answered with (502, 504, 407, …), if it answered at all.
    Error {
        error: ErrorInfo,
        status: Option<u16>,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Unix time in milliseconds when the request head was received.
    pub started_at_ms: u64,
    /// Milliseconds until the upstream's response head arrived (absent for errors).
    pub upstream_headers_ms: Option<f64>,
    /// Milliseconds until the response body ended or the error was answered.
    pub total_ms: f64,
}

/// The bytes a URL part keeps as they are: RFC 3986's unreserved characters (letters,
/// digits, `-._~`). Every other byte is written `%XX` (`percent_encoding`'s
/// `utf8_percent_encode` and `percent_encode` with this set).
pub const URL_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Now, in Unix milliseconds: the wall-clock time exchanges, runs and reports are stamped
/// with (facts about the real world, kept across restarts; nothing waits on it).
#[allow(clippy::disallowed_methods)]
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A chaos rule that fired on an exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// The rule's id (`tool_faults[0]` unless the config names it).
    pub rule: String,
    /// The mode or attack type, e.g. `rate_limit`, `indirect_injection`.
    pub mode: FaultKind,
    /// False when the fault could not be applied (a response it cannot parse passes
    /// through unchanged); `note` says why.
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub id: u64,
    /// Peer address of the agent's connection to the proxy.
    pub client_addr: String,
    /// Proxy user name (`Proxy-Authorization`), when the client sent one.
    pub client_user: Option<String>,
    pub route: Route,
    pub target: Target,
    pub request: RequestHead,
    pub outcome: Outcome,
    pub timings: Timings,
    /// Response body bytes delivered to the client.
    pub response_bytes: u64,
    /// The fault injected into this exchange, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultRecord>,
    /// Context attacks applied to this exchange.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attacks: Vec<FaultRecord>,
    /// Tools the LLM's response asked the agent to call, by name, one per call (LLM
    /// exchanges with an uncompressed body of at most 8 MiB).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_tool_calls: Vec<String>,
    /// The W3C trace id of the request's `traceparent`, which `attribution: header` runs
    /// use to tell which case an exchange belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The canary token planted in this response (`no_exfiltration` runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// Canaries that another source served, found in this request on its way out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canary_leaks: Vec<CanaryLeak>,
    /// The MCP message this request carried (a `protocol: mcp` tool, or MCP traffic
    /// recognised on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpCall>,
    /// A `tcp` route's bytes each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpBytes>,
    /// Wrong values a fault or attack put into what the agent received in this exchange
    /// (`corrupt`, `stale`, an injected payload), so a run can trace where they went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planted: Vec<Planted>,
    /// The tokens a successful LLM answer reported (`llm` targets with a 2xx response;
    /// figures it did not carry are unknown), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What the proxy saw of the exchange that its outcome does not say: an upstream that
    /// ended a close-delimited body by closing TLS without `close_notify` (taken as the
    /// body's end, as curl and browsers take it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Whether a `Content-Type` value is a Server-Sent Events stream, in any case and with
/// any parameters (`text/event-stream; charset=utf-8`).
pub fn is_event_stream(content_type: &str) -> bool {
    // Asked of response heads and MCP requests: no allocation.
    const NAME: &[u8] = b"event-stream";
    content_type
        .as_bytes()
        .windows(NAME.len())
        .any(|w| w.eq_ignore_ascii_case(NAME))
}

/// The `traceparent` the run's driver sends for its case of `trace` (`attribution:
/// header`): its parent span id is the trace id's first half, which marks a request's
/// parent as the driver's, not an agent's span (`driver_sent`).
pub fn driver_traceparent(trace: &str) -> String {
    format!("00-{trace}-{}-01", driver_span(trace))
}

/// Whether `span`, a parent span id in a `traceparent` of `trace`, is the driver's own.
pub fn driver_sent(trace: &str, span: &str) -> bool {
    span == driver_span(trace)
}

fn driver_span(trace: &str) -> &str {
    trace.get(..16).unwrap_or(trace)
}

/// The trace id of a W3C `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`), if valid.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    let valid =
        hex(version, 2) && version != "ff" && hex(trace, 32) && hex(parent, 16) && hex(flags, 2);
    (valid && trace.bytes().any(|b| b != b'0')).then_some(trace)
}

impl Exchange {
    /// HTTP status the client saw, if any.
    pub fn status(&self) -> Option<u16> {
        match &self.outcome {
            Outcome::Response { response, .. } => Some(response.status),
            Outcome::Error { status, .. } => *status,
        }
    }
}

/// Fake exchanges for unit tests, in the spirit of mitmproxy's `tflow`: a complete `200`
/// `POST` for a URL, changed field by field (`exchange(t, url).status(503).build()`).
#[cfg(test)]
pub mod tests_support {
    use super::*;

    pub struct Builder(Exchange);

    pub fn exchange(target: Target, url: &str) -> Builder {
        Builder(Exchange {
            id: 1,
            client_addr: "127.0.0.1:1".into(),
            client_user: None,
            route: Route::Intercepted,
            target,
            request: RequestHead {
                method: "POST".into(),
                url: url.into(),
                version: "HTTP/1.1".into(),
                headers: vec![],
            },
            outcome: Outcome::Response {
                response: ResponseHead {
                    status: 200,
                    version: "HTTP/1.1".into(),
                    headers: vec![],
                },
                body: BodyEnd::Complete,
            },
            timings: Timings::default(),
            response_bytes: 0,
            fault: None,
            attacks: vec![],
            llm_tool_calls: vec![],
            trace_id: None,
            canary: None,
            canary_leaks: vec![],
            mcp: None,
            tcp: None,
            planted: vec![],
            usage: None,
            note: None,
        })
    }

    fn pairs(headers: &[(&str, &str)]) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    impl Builder {
        pub fn id(mut self, id: u64) -> Self {
            self.0.id = id;
            self
        }

        pub fn method(mut self, method: &str) -> Self {
            self.0.request.method = method.into();
            self
        }

        pub fn request_headers(mut self, headers: &[(&str, &str)]) -> Self {
            self.0.request.headers = pairs(headers);
            self
        }

        /// A response with this status and these headers (replacing an error).
        pub fn response(mut self, status: u16, headers: &[(&str, &str)]) -> Self {
            let response = ResponseHead {
                status,
                version: "HTTP/1.1".into(),
                headers: pairs(headers),
            };
            self.0.outcome = Outcome::Response {
                response,
                body: BodyEnd::Complete,
            };
            self
        }

        /// An error of `source` named `kind`, answered with `status` if any.
        pub fn error(mut self, source: ErrorSource, kind: ErrorKind, status: Option<u16>) -> Self {
            let error = ErrorInfo {
                source,
                kind,
                message: format!("{kind} happened"),
            };
            self.0.outcome = Outcome::Error { error, status };
            self
        }

        /// Started at `started_at_ms`, over after `total_ms`.
        pub fn timed(mut self, started_at_ms: u64, total_ms: f64) -> Self {
            self.0.timings = Timings {
                started_at_ms,
                upstream_headers_ms: None,
                total_ms,
            };
            self
        }

        /// An LLM answer that reported this usage.
        pub fn usage(mut self, input: Option<u64>, output: Option<u64>, model: &str) -> Self {
            self.0.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                model: Some(model.into()),
            });
            self
        }

        pub fn fault(mut self, fault: FaultRecord) -> Self {
            self.0.fault = Some(fault);
            self
        }

        pub fn build(self) -> Exchange {
            self.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Error kinds and providers are named as serde names them (journals, reports and
    /// `x-flakestorm-error` all carry the names), every one of them.
    #[test]
    fn error_kinds_are_named_as_serde_does() {
        use strum::IntoEnumIterator;
        let kinds: Vec<ErrorKind> = ErrorKind::iter().collect();
        assert_eq!(kinds.len(), 13);
        for k in kinds {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert_eq!(ErrorKind::ClientCancelled.name(), "client_cancelled");
    }

    #[test]
    fn an_event_stream_is_known_in_any_case_and_with_parameters() {
        assert!(is_event_stream("text/event-stream"));
        assert!(is_event_stream("Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
    }

    #[test]
    fn trace_ids_from_w3c_traceparent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(trace_id(tp), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        for bad in [
            "",
            "00-abc-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(trace_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn embeddings_targets_are_tagged_by_kind() {
        let t = Target::Embeddings {
            provider: Provider::Gemini,
        };
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"kind":"embeddings","provider":"gemini"}"#);
        assert_eq!(serde_json::from_str::<Target>(&json).unwrap(), t);
        assert_eq!(t.kind(), "embeddings");
    }
}
