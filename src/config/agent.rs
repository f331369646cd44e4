//! The `agent:` section: how the run engine reaches the agent under test (config.md).

use std::collections::BTreeMap;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use serde::{Deserialize, Serialize};

use super::{ConfigError, ResponsePath};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// URL the driver invokes, e.g. `http://localhost:8790/invoke`.
    pub endpoint: String,
    /// Only `http` is driven directly.
    #[serde(default = "http", rename = "type")]
    pub kind: String,
    #[serde(default = "post")]
    pub method: String,
    /// Body with `{prompt}` replaced by the JSON-escaped prompt.
    #[serde(default = "template")]
    pub request_template: String,
    /// Where the answer is in a JSON response: `a.b[0].c` or `$.a.b[0].c`.
    #[serde(default = "result")]
    pub response_path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Milliseconds per invoke.
    #[serde(default = "timeout")]
    pub timeout: u64,
    /// POSTed before every case so cases do not share state.
    #[serde(default)]
    pub reset_endpoint: Option<String>,
    /// Flakestorm v2's Python hook: rejected with a pointer to `reset_endpoint`.
    #[serde(default)]
    pub reset_function: Option<String>,
    /// Shell command that starts the agent with the proxy environment set.
    #[serde(default)]
    pub command: Option<String>,
    /// Polled until 2xx before the run starts.
    #[serde(default)]
    pub ready_url: Option<String>,
    /// Environment for `command`, on top of flakestorm's proxy and CA variables (`${VAR}`
    /// expanded at load).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Variables flakestorm sets for `agent.command`: one in `agent.env` overrides them.
pub const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "https_proxy",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "CURL_CA_BUNDLE",
];

fn http() -> String {
    "http".into()
}
fn post() -> String {
    "POST".into()
}
fn template() -> String {
    r#"{"input": "{prompt}"}"#.into()
}
fn result() -> String {
    "result".into()
}
fn timeout() -> u64 {
    30_000
}

/// A compiled `agent:` section: every value the driver uses, parsed once at load, so a run
/// never re-validates it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTarget {
    pub endpoint: Uri,
    pub method: Method,
    /// `agent.headers`, after `${VAR}` expansion.
    pub headers: HeaderMap,
    pub request_template: String,
    pub response_path: ResponsePath,
    pub timeout: Duration,
    pub reset_endpoint: Option<Uri>,
    pub ready_url: Option<Uri>,
    pub command: Option<String>,
    pub env: BTreeMap<String, String>,
}

/// `v` as an http(s) URL with a host.
fn http_url(v: &str) -> Option<Uri> {
    v.parse::<Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some())
}

impl AgentSpec {
    /// The section compiled, or every problem in it; paths start with `agent.`.
    pub fn compile(&self) -> Result<AgentTarget, Vec<ConfigError>> {
        let a = self;
        let mut errors = vec![];
        let mut err =
            |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
        let endpoint = http_url(&a.endpoint);
        if endpoint.is_none() {
            err(
                "endpoint",
                format!(
                    "`{}` is not an http(s) URL, e.g. http://localhost:8790/invoke",
                    a.endpoint
                ),
            );
        }
        if a.kind != "http" {
            err(
                "type",
                format!(
                    "`{}` agents are not driven directly; put the agent behind an HTTP endpoint (e.g. a small web \
                     route that calls it) and use type: http",
                    a.kind
                ),
            );
        }
        let method = a
            .method
            .parse::<Method>()
            .ok()
            .filter(|_| !a.method.is_empty());
        if method.is_none() {
            err("method", format!("`{}` is not an HTTP method", a.method));
        }
        if a.timeout == 0 {
            err("timeout", "must be greater than 0 (milliseconds)".into());
        }
        if a.reset_function.is_some() {
            err("reset_function", "Python reset hooks are not supported; expose a reset route and set agent.reset_endpoint".into());
        }
        let mut url = |field: &str, v: &Option<String>| -> Option<Uri> {
            let v = v.as_deref()?;
            let u = http_url(v);
            if u.is_none() {
                err(field, format!("`{v}` is not an http(s) URL"));
            }
            u
        };
        let reset_endpoint = url("reset_endpoint", &a.reset_endpoint);
        let ready_url = url("ready_url", &a.ready_url);
        let response_path = ResponsePath::parse(&a.response_path)
            .map_err(|e| err("response_path", e))
            .ok();
        if !a.env.is_empty() && a.command.is_none() {
            err(
                "env",
                "is the environment of agent.command, which is not set".into(),
            );
        }
        for name in a.env.keys() {
            let bad = name.is_empty() || name.contains(['=', '\0']);
            if bad {
                err(
                    &format!("env.{name}"),
                    "is not a valid variable name".into(),
                );
            }
        }
        let headers = compile_headers(&a.headers, &mut errors);
        match (endpoint, method, response_path, errors.is_empty()) {
            (Some(endpoint), Some(method), Some(response_path), true) => Ok(AgentTarget {
                endpoint,
                method,
                headers,
                request_template: a.request_template.clone(),
                response_path,
                timeout: Duration::from_millis(a.timeout),
                reset_endpoint,
                ready_url,
                command: a.command.clone(),
                env: a.env.clone(),
            }),
            _ => Err(errors),
        }
    }
}

/// Warnings for an agent section that loads but defeats the run: `agent.env` replacing
/// the proxy or CA variables flakestorm sets.
pub fn warn_agent(a: &AgentTarget, warnings: &mut Vec<String>) {
    for name in a.env.keys().filter(|n| PROXY_VARS.contains(&n.as_str())) {
        warnings.push(format!(
            "agent.env.{name}: replaces the value flakestorm sets for agent.command; if the \
             agent's traffic no longer crosses this run's proxy, the run tests nothing"
        ));
    }
}

/// `agent.headers` as the driver sends them (values after `${VAR}` expansion). A bad value
/// is not shown: headers carry secrets.
fn compile_headers(headers: &BTreeMap<String, String>, errors: &mut Vec<ConfigError>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let path = format!("agent.headers.{name}");
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| errors.push(ConfigError::new(&path, e.to_string())));
        let value = HeaderValue::from_str(value).map_err(|e| {
            errors.push(ConfigError::new(
                &path,
                format!("{e}: control characters such as a newline are not allowed"),
            ))
        });
        if let (Ok(name), Ok(value)) = (name, value) {
            map.insert(name, value);
        }
    }
    map
}
