//! Spec types: the YAML users write, with defaults. Field names follow config.md.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The validated configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub proxy: ProxySpec,
    pub control: ControlSpec,
    pub ca: CaSpec,
    pub data_dir: PathBuf,
    pub tools: Vec<ToolSpec>,
    pub llm: Vec<LlmEndpointSpec>,
    pub journal: JournalSpec,
    pub advanced: AdvancedSpec,
    /// Faults active from startup (also settable at runtime through the control API).
    /// Compiled once at load (`compile_chaos`); the engine installs it as it is.
    pub chaos: crate::chaos::spec::CompiledChaos,
    /// The agent under test (needed by runs, not by `serve`).
    pub agent: Option<super::AgentTarget>,
    /// Checks on every case of mutation and chaos runs.
    pub invariants: Vec<crate::checks::spec::InvariantSpec>,
    /// Prompts the agent should always handle well.
    pub golden_prompts: Vec<String>,
    /// Adversarial variants of the golden prompts (mutation runs).
    pub mutations: super::MutationsSpec,
    /// The LLM that writes the mutation types that need one.
    pub model: Option<super::ModelSpec>,
    /// Invariants × chaos scenarios, with severities.
    pub contract: Option<super::ContractSpec>,
    pub scoring: super::ScoringSpec,
    pub output: super::OutputSpec,
    /// Recorded incidents to replay (`replay run`, `ci`; docs/replay.md).
    pub replays: super::ReplaysSpec,
    /// What LLM calls cost (`pricing:`, docs/config.md): the shipped table unless the
    /// config changes it; compiled at load, its file read then.
    pub pricing: crate::cost::Pricing,
    /// `pricing:` as written (its file not yet read).
    pub pricing_spec: super::PricingSpec,
    /// Where OTLP spans go (`telemetry.otlp`; the `OTEL_EXPORTER_OTLP_*` variables fill
    /// what it leaves out).
    pub telemetry: crate::otel::spec::TelemetrySpec,
    /// `--allow-open-proxy`: start with a non-loopback `proxy.listen` and no `proxy.users`
    /// (warned). A command-line choice only: never read from a file or the environment.
    pub allow_open_proxy: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxySpec {
    pub listen: super::Parsed<std::net::SocketAddr>,
    /// Host globs whose CONNECT tunnels are decrypted (compiled as read).
    pub intercept: crate::globs::HostGlobs,
    /// Host globs tunnelled blind; wins over `intercept`.
    pub passthrough: crate::globs::HostGlobs,
    pub upstream_ca_file: Option<PathBuf>,
    /// That file's certificates, read once when the config loads (`trust_upstream_ca`).
    #[serde(skip)]
    pub upstream_ca: Vec<rustls::pki_types::CertificateDer<'static>>,
    pub users: Vec<UserSpec>,
    pub reverse: Vec<ReverseSpec>,
    /// Upstream TCP+TLS connect limit.
    pub connect_timeout_ms: u64,
    /// Limit for the upstream response head (600 s: the OpenAI/Anthropic SDK default, so
    /// the proxy never gives up before the agent does).
    pub response_timeout_ms: u64,
    /// On SIGINT/SIGTERM, how long in-flight exchanges may take to finish.
    pub drain_timeout_ms: u64,
    /// Largest request head (request line + headers) accepted; larger gets 431.
    pub max_header_bytes: usize,
    /// Leaf certificates kept in memory.
    pub leaf_cache_size: usize,
    /// Issue #9: the most bytes a chaos rewrite (drift, overflow, injection…) may make a
    /// body; going over fails that one exchange.
    pub max_rewrite_bytes: usize,
    /// Loopback or link-local destinations still reachable when the proxy listens off
    /// loopback (entries as in `config::targets`); ignored on a loopback listen.
    pub allow_loopback_targets: Vec<super::Parsed<super::TargetRules>>,
    // Connection lifetime limits (issue #9): no client connection lives forever.
    /// From accept (or from a keep-alive request's first byte) to a complete request head.
    pub header_timeout_ms: u64,
    /// How long a keep-alive connection may sit between requests, no byte sent.
    pub idle_timeout_ms: u64,
    /// From an intercepted CONNECT's first TLS byte to a finished handshake.
    pub tls_handshake_timeout_ms: u64,
    /// Client connections open at once (tunnels included); more are refused with a 503.
    pub max_connections: usize,
    /// Issue #15: how a forwarded request whose upstream refused the connection (or could
    /// not be reached) is answered.
    pub upstream_connect_failure: UpstreamConnectFailure,
}

/// Default `proxy.max_rewrite_bytes`: 16 MiB (`chaos::budget` enforces it).
pub const DEFAULT_MAX_REWRITE_BYTES: usize = 16 << 20;

impl Default for ProxySpec {
    fn default() -> Self {
        ProxySpec {
            listen: "127.0.0.1:8080".into(),
            intercept: crate::globs::HostGlobs::new(vec!["*".into()]),
            passthrough: crate::globs::HostGlobs::new(vec![]),
            upstream_ca_file: None,
            upstream_ca: vec![],
            users: vec![],
            reverse: vec![],
            connect_timeout_ms: 10_000,
            response_timeout_ms: 600_000,
            drain_timeout_ms: 10_000,
            max_header_bytes: 64 * 1024,
            leaf_cache_size: 1000,
            max_rewrite_bytes: DEFAULT_MAX_REWRITE_BYTES,
            allow_loopback_targets: vec![],
            header_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            tls_handshake_timeout_ms: 10_000,
            max_connections: 1024,
            upstream_connect_failure: UpstreamConnectFailure::default(),
        }
    }
}

/// `proxy.upstream_connect_failure` (issue #15): what the agent gets when the upstream of a
/// forwarded request cannot be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamConnectFailure {
    /// `502` with `x-flakestorm-error: upstream_connect` and the reason: says it was the
    /// proxy's connect that failed.
    #[default]
    #[serde(rename = "status_502")]
    Status502,
    /// The client connection closes with no response: the agent's HTTP client raises a
    /// connection error, the error path a dead upstream takes without the proxy.
    Close,
}

impl ProxySpec {
    /// Trusts the CA bundle at `path` for upstream TLS (on top of public and OS roots):
    /// reads it now, so a bad file is an error here and the proxy never reads it again.
    pub fn trust_upstream_ca(&mut self, path: PathBuf) -> Result<(), crate::tls::TlsError> {
        self.upstream_ca = crate::tls::read_ca_bundle(&path)?;
        self.upstream_ca_file = Some(path);
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    pub name: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseSpec {
    /// Path prefix on the proxy port, e.g. `/openai`.
    pub prefix: String,
    /// Where requests under the prefix go, e.g. `https://api.openai.com`.
    pub upstream: super::Parsed<super::HttpUrl>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlSpec {
    pub listen: super::Parsed<std::net::SocketAddr>,
    /// Bearer token for `/v1/*`; required when `listen` is not loopback.
    pub token: Option<String>,
    /// Runs submitted through `/v1/runs` in flight at once under `attribution: header`
    /// (under `exclusive` they run one at a time).
    pub max_parallel_runs: u32,
    /// `Host` names the control API answers besides this machine's loopback names and
    /// addresses and its own address (DNS rebinding): exact names, or `*.example.com`.
    pub allowed_hosts: Vec<String>,
    /// Names of the daemon's environment variables that configs sent to `/v1/runs` may
    /// expand as `${NAME}`; no other variable of the daemon's is ever expanded for them.
    pub expose_env: Vec<String>,
    /// The longest a request body may take to arrive once its handler reads it (a slow
    /// body from a token holder no longer holds a connection without end); 408 past it.
    pub body_timeout_ms: u64,
    /// The largest report `POST /v1/runs/import` takes; 413 past it.
    pub max_import_bytes: u64,
    /// Start on a `data_dir` (or its `runs/`) other users may write or that another user
    /// owns, with a warning, instead of refusing it.
    pub allow_shared_data_dir: bool,
    /// Serve the web view at `/` on the control listener (docs/web.md).
    pub ui: bool,
}

/// `control.max_import_bytes`' default: a report of about 30,000 cases with their traffic.
pub const DEFAULT_MAX_IMPORT_BYTES: u64 = 16 * 1024 * 1024;

impl Default for ControlSpec {
    fn default() -> Self {
        ControlSpec {
            listen: "127.0.0.1:8081".into(),
            token: None,
            max_parallel_runs: 4,
            allowed_hosts: vec![],
            expose_env: vec![],
            body_timeout_ms: 30_000,
            max_import_bytes: DEFAULT_MAX_IMPORT_BYTES,
            allow_shared_data_dir: false,
            ui: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaSpec {
    /// Where the CA is kept (`ca.pem`, `ca.key`), created at the first start when empty.
    pub dir: PathBuf,
    /// A CA certificate to use as it is (e.g. a mounted Secret's `tls.crt`); with
    /// `key_file`, replaces `dir`: never created, never regenerated.
    pub cert_file: Option<PathBuf>,
    /// That certificate's private key (e.g. the Secret's `tls.key`).
    pub key_file: Option<PathBuf>,
    /// Where `serve` writes, at each start, the system roots plus the CA as one PEM bundle
    /// (what `SSL_CERT_FILE`/`REQUESTS_CA_BUNDLE` of the agent should name).
    pub bundle_file: Option<PathBuf>,
}

impl Default for CaSpec {
    fn default() -> Self {
        CaSpec {
            dir: PathBuf::from("certs"),
            cert_file: None,
            key_file: None,
            bundle_file: None,
        }
    }
}

impl CaSpec {
    /// The CA certificate clients trust: `cert_file`, or `ca.pem` in `dir`.
    pub fn cert_path(&self) -> PathBuf {
        self.cert_file
            .clone()
            .unwrap_or_else(|| self.dir.join(crate::tls::CA_CERT_FILE))
    }
}

pub use crate::globs::{OneOrMany, UrlGlobs};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    /// Its URLs; a `transport: stdio` tool has none written (validation gives it its
    /// bridge's, `mcp::stdio::tool_glob`).
    #[serde(default = "no_urls")]
    pub match_url: UrlGlobs,
    /// What the tool speaks: plain HTTP, or MCP over Streamable HTTP (its JSON-RPC
    /// messages read, faulted and attacked as an MCP server's).
    #[serde(default, skip_serializing_if = "ToolProtocol::is_http")]
    pub protocol: ToolProtocol,
    /// How an MCP tool is reached: over HTTP, or over stdio through `flakestorm wrap`.
    #[serde(default, skip_serializing_if = "ToolTransport::is_http")]
    pub transport: ToolTransport,
}

fn no_urls() -> UrlGlobs {
    UrlGlobs::new(crate::globs::OneOrMany::Many(vec![]))
}

/// `tools[].transport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolTransport {
    #[default]
    Http,
    Stdio,
}

impl ToolTransport {
    pub fn is_http(&self) -> bool {
        *self == ToolTransport::Http
    }
}

/// `tools[].protocol`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    #[default]
    Http,
    Mcp,
}

impl ToolProtocol {
    pub fn is_http(&self) -> bool {
        *self == ToolProtocol::Http
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmEndpointSpec {
    pub provider: LlmProvider,
    pub match_url: UrlGlobs,
}

/// `llm[].provider`: the provider type itself (`exchange::Provider`, one type for config
/// and wire), spelled as config.md does: `gemini` (the mutation `model` says `google`).
pub use crate::exchange::Provider as LlmProvider;

/// `journal.max_bytes` by default: a few thousand exchanges of an idle sidecar's traffic
/// (docs/benchmarks.md, "Sidecar figures").
pub const DEFAULT_JOURNAL_BYTES: usize = 2 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JournalSpec {
    /// Exchanges kept in memory; the oldest are dropped past it.
    pub capacity: usize,
    /// Bytes the kept exchanges may weigh while no run or recording reads them; the
    /// oldest are dropped past it (a run under way keeps its exchanges up to `capacity`).
    pub max_bytes: usize,
    /// Extra header names whose values are redacted.
    pub redact_headers: Vec<String>,
    /// Extra query parameter names whose values are redacted.
    pub redact_query: Vec<String>,
}

impl Default for JournalSpec {
    fn default() -> Self {
        JournalSpec {
            capacity: 10_000,
            max_bytes: DEFAULT_JOURNAL_BYTES,
            redact_headers: vec![],
            redact_query: vec![],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdvancedSpec {
    /// Cases in flight at once, as written; unset, `Config::concurrency` decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    pub retries: u32,
    pub seed: Option<u64>,
    pub attribution: Attribution,
    /// An embeddings endpoint for `similarity` and `behavior_unchanged` (default: lexical).
    pub embeddings: Option<super::EmbeddingsSpec>,
    /// How long a case waits after its answer, with none of its exchanges in flight, for
    /// calls the agent makes after answering (a background email): they are the case's.
    pub settle_ms: u64,
    /// The longest a case is followed after its answer while its calls go on (each one
    /// restarts its `settle_ms` of quiet); then it ends, and calls still in flight leave it
    /// not judged.
    pub settle_max_ms: u64,
    /// How many times each case runs, each trial with a seeded stream of its own
    /// (docs/trials.md).
    pub trials: u32,
}

/// The most trials a case runs (`advanced.trials`).
pub const MAX_TRIALS: u32 = 100;

impl Default for AdvancedSpec {
    fn default() -> Self {
        AdvancedSpec {
            concurrency: None,
            retries: 2,
            seed: None,
            attribution: Attribution::Exclusive,
            embeddings: None,
            settle_ms: 500,
            settle_max_ms: 30_000,
            trials: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribution {
    #[default]
    Exclusive,
    Header,
}
