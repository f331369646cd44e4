//! The `agent:` section: how the run engine reaches the agent under test (config.md).

use std::collections::BTreeMap;
use std::time::Duration;

use http::{HeaderMap, Method, Uri};
use serde::{Deserialize, Serialize};

use super::agent_fields::{NEITHER, compile_headers, http_url, not_driven, not_started};
use super::{ConfigError, ResponsePath};
use crate::capture::Mode as CaptureMode;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// URL the driver invokes, e.g. `http://localhost:8790/invoke`. Without it, the agent
    /// is a script: `command` is run once per case (`agent::script`).
    #[serde(default)]
    pub endpoint: Option<String>,
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
    /// Shell command that starts the agent with the proxy environment set; without
    /// `endpoint`, the agent itself, run once per case with the prompt as `{prompt}` or on
    /// its stdin.
    #[serde(default)]
    pub command: Option<String>,
    /// Polled until 2xx before the run starts.
    #[serde(default)]
    pub ready_url: Option<String>,
    /// GET after each answer: the agent answers (2xx) once nothing more of that case will
    /// come, and the case's settle ends then (docs/config.md, "How a case settles").
    #[serde(default)]
    pub settle_url: Option<String>,
    /// Environment for `command`, on top of flakestorm's proxy and CA variables (`${VAR}`
    /// expanded at load).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How many copies of `command` to start, each on its own `{port}` (default:
    /// `advanced.concurrency` when `command` takes `{port}`, else one).
    #[serde(default)]
    pub instances: Option<u32>,
    /// How the agent's traffic reaches the proxy: `proxy` (its proxy variables) or `netns`
    /// (a network namespace where every TCP connection it opens ends at flakestorm;
    /// docs/capture.md).
    #[serde(default)]
    pub capture: CaptureMode,
}

/// The most agent instances a run starts.
pub const MAX_INSTANCES: u32 = 64;

pub use super::agent_fields::PORT;

/// The placeholder for the prompt in a script agent's `agent.command`.
pub const PROMPT: &str = "{prompt}";

/// Where a script agent's `endpoint` would be: nothing is ever sent there (`script`).
const NO_ENDPOINT: &str = "http://agent-script.invalid/";

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
    pub settle_url: Option<Uri>,
    pub command: Option<String>,
    pub env: BTreeMap<String, String>,
    /// `agent.instances` as written.
    pub instances: Option<u32>,
    /// `agent.capture`.
    pub capture: CaptureMode,
    /// The section as written when `command` takes `{port}`: each instance is this with its
    /// own port (`at_port`).
    pub per_port: Option<Box<AgentSpec>>,
    /// The agent is a script: `command` without `endpoint`, run once per case, the answer
    /// its stdout (`endpoint` is then a placeholder no request goes to).
    pub script: bool,
}

impl AgentTarget {
    /// Whether a run drives this agent through a pool of lanes: a `{port}` command, or a
    /// script (one process per case, each on its lane).
    pub fn pooled(&self) -> bool {
        self.per_port.is_some() || self.script
    }

    /// This agent listening on `port` (`{port}` filled in everywhere); itself when the
    /// command takes no `{port}`.
    pub fn at_port(&self, port: u16) -> AgentTarget {
        let Some(spec) = &self.per_port else {
            return self.clone();
        };
        let fill = |v: &str| v.replace(PORT, &port.to_string());
        let mut filled = (**spec).clone();
        filled.endpoint = filled.endpoint.as_deref().map(fill);
        filled.command = filled.command.as_deref().map(fill);
        filled.ready_url = filled.ready_url.as_deref().map(fill);
        filled.reset_endpoint = filled.reset_endpoint.as_deref().map(fill);
        filled.settle_url = filled.settle_url.as_deref().map(fill);
        for v in filled.env.values_mut() {
            *v = fill(v);
        }
        let url = |v: &Option<String>| v.as_deref().and_then(http_url);
        AgentTarget {
            endpoint: url(&filled.endpoint).unwrap_or_else(|| self.endpoint.clone()),
            reset_endpoint: url(&filled.reset_endpoint),
            ready_url: url(&filled.ready_url),
            settle_url: url(&filled.settle_url),
            command: filled.command,
            env: filled.env,
            per_port: None,
            ..self.clone()
        }
    }
}

impl AgentSpec {
    /// The section compiled, or every problem in it; paths start with `agent.`.
    pub fn compile(&self) -> Result<AgentTarget, Vec<ConfigError>> {
        let a = self;
        let mut errors = vec![];
        let mut err =
            |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
        // Checked with a sample port; each instance gets its own (`at_port`).
        let sample = |v: &str| v.replace(PORT, "1");
        let script = a.endpoint.is_none() && a.command.is_some();
        let endpoint = match &a.endpoint {
            Some(e) => http_url(&sample(e)),
            None => script.then(|| Uri::from_static(NO_ENDPOINT)),
        };
        // A v2 python/langchain agent's endpoint is a module path: its `type` error says it.
        if a.kind != "http" {
            err("type", not_driven(&a.kind));
        } else if let (None, Some(e)) = (&endpoint, &a.endpoint) {
            err(
                "endpoint",
                format!("`{e}` is not an http(s) URL, e.g. http://localhost:8790/invoke"),
            );
        } else if endpoint.is_none() {
            err("endpoint", NEITHER.into());
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
            let u = http_url(&sample(v));
            if u.is_none() {
                err(field, format!("`{v}` is not an http(s) URL"));
            }
            u
        };
        let reset_endpoint = url("reset_endpoint", &a.reset_endpoint);
        let ready_url = url("ready_url", &a.ready_url);
        let settle_url = url("settle_url", &a.settle_url);
        let response_path = ResponsePath::parse(&a.response_path)
            .map_err(|e| err("response_path", e.to_string()))
            .ok();
        check_command(a, &mut errors);
        // A script's own checks are `agent_script`'s (it compiles the section).
        if !script {
            check_instances(a, &mut errors);
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
                settle_url,
                command: a.command.clone(),
                env: a.env.clone(),
                instances: a.instances,
                capture: a.capture,
                per_port: takes_port(a).then(|| Box::new(a.clone())),
                script,
            }),
            _ => Err(errors),
        }
    }
}

/// Whether `agent.command` takes `{port}` (flakestorm starts a pool of instances).
fn takes_port(a: &AgentSpec) -> bool {
    a.command.as_deref().is_some_and(|c| c.contains(PORT))
}

/// `agent.instances` and `{port}`: a pool needs a command that takes the port, and every
/// URL of an instance must name it, or all cases would reach one instance.
fn check_instances(a: &AgentSpec, errors: &mut Vec<ConfigError>) {
    let mut err =
        |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
    let pooled = takes_port(a);
    let urls = [
        ("endpoint", a.endpoint.as_ref()),
        ("reset_endpoint", a.reset_endpoint.as_ref()),
        ("ready_url", a.ready_url.as_ref()),
        ("settle_url", a.settle_url.as_ref()),
    ];
    for (field, v) in urls {
        let Some(v) = v else { continue };
        match (pooled, v.contains(PORT)) {
            (true, false) => err(
                field,
                format!(
                    "`{v}` has no `{PORT}`: agent.command takes `{PORT}`, so each instance \
                     listens on its own port and this URL must name it"
                ),
            ),
            (false, true) => err(field, not_started(&format!("`{v}`"))),
            (true, true) | (false, false) => {}
        }
    }
    for (name, v) in &a.env {
        if !pooled && v.contains(PORT) {
            err(&format!("env.{name}"), not_started("the value"));
        }
    }
    let Some(n) = a.instances else { return };
    if n == 0 || n > MAX_INSTANCES {
        err(
            "instances",
            format!("{n} is out of range 1..={MAX_INSTANCES}"),
        );
    } else if n > 1 && a.command.is_none() {
        err(
            "instances",
            format!("{n} instances need agent.command: flakestorm starts them"),
        );
    } else if n > 1 && !pooled {
        err(
            "instances",
            format!(
                "{n} instances need `{PORT}` in agent.command (and in agent.endpoint): each \
                 listens on a port of its own"
            ),
        );
    }
}

/// What `agent.command` brings with it: `env` (its environment) and `capture`.
fn check_command(a: &AgentSpec, errors: &mut Vec<ConfigError>) {
    let mut err =
        |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
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
    check_capture(a, errors);
}

/// `agent.capture: netns` needs Linux, and an agent flakestorm starts (it starts it in the
/// namespace). Whether this machine allows namespaces is probed when a run starts (and by
/// `flakestorm doctor`), not at load: a config is also validated where it does not run.
fn check_capture(a: &AgentSpec, errors: &mut Vec<ConfigError>) {
    if a.capture != CaptureMode::Netns {
        return;
    }
    if !cfg!(target_os = "linux") {
        errors.push(ConfigError::new(
            "agent.capture",
            format!(
                "netns needs Linux (network namespaces); this is {}: use `proxy`",
                std::env::consts::OS
            ),
        ));
    }
    if a.command.is_none() {
        errors.push(ConfigError::new(
            "agent.capture",
            "netns needs agent.command: flakestorm starts the agent inside the namespace",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(v: serde_json::Value) -> Result<AgentTarget, Vec<String>> {
        let spec: AgentSpec = serde_json::from_value(v).unwrap();
        spec.compile()
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn capture_is_proxy_unless_netns_is_asked_for() {
        let a = compiled(serde_json::json!({"endpoint": "http://127.0.0.1:1/"})).unwrap();
        assert_eq!(a.capture, CaptureMode::Proxy);
        let bad = serde_json::from_value::<AgentSpec>(
            serde_json::json!({"endpoint": "http://127.0.0.1:1/", "capture": "tun"}),
        );
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("unknown variant `tun`")
        );
    }

    #[test]
    fn netns_needs_a_command_and_linux() {
        let errors = compiled(serde_json::json!({
            "endpoint": "http://127.0.0.1:1/", "capture": "netns",
        }))
        .unwrap_err();
        let want = "agent.capture: netns needs agent.command: flakestorm starts the agent";
        assert!(errors.iter().any(|e| e.starts_with(want)), "{errors:?}");
        let with_command = compiled(serde_json::json!({
            "endpoint": "http://127.0.0.1:{port}/", "capture": "netns",
            "command": "python3 agent.py {port}",
        }));
        match cfg!(target_os = "linux") {
            true => assert_eq!(with_command.unwrap().capture, CaptureMode::Netns),
            false => assert!(with_command.unwrap_err()[0].contains("netns needs Linux")),
        }
    }
}
