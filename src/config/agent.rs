//! The `agent:` section: how the run engine reaches the agent under test (config.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;

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

fn http_url(v: &str) -> bool {
    v.parse::<http::Uri>().ok().is_some_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some()
    })
}

/// Checks an agent section; paths start with `agent.`.
pub fn check_agent(a: &AgentSpec) -> Vec<ConfigError> {
    let mut errors = vec![];
    let mut err =
        |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
    if !http_url(&a.endpoint) {
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
    if a.method.parse::<http::Method>().is_err() || a.method.is_empty() {
        err("method", format!("`{}` is not an HTTP method", a.method));
    }
    if a.timeout == 0 {
        err("timeout", "must be greater than 0 (milliseconds)".into());
    }
    if a.reset_function.is_some() {
        err("reset_function", "Python reset hooks are not supported; expose a reset route and set agent.reset_endpoint".into());
    }
    for (field, url) in [
        ("reset_endpoint", &a.reset_endpoint),
        ("ready_url", &a.ready_url),
    ] {
        if let Some(u) = url.as_deref().filter(|u| !http_url(u)) {
            err(field, format!("`{u}` is not an http(s) URL"));
        }
    }
    if let Err(e) = ResponsePath::parse(&a.response_path) {
        err("response_path", e);
    }
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
    check_headers(&a.headers, &mut errors);
    errors
}

/// Warnings for an agent section that loads but defeats the run: `agent.env` replacing
/// the proxy or CA variables flakestorm sets.
pub fn warn_agent(a: &AgentSpec, warnings: &mut Vec<String>) {
    for name in a.env.keys().filter(|n| PROXY_VARS.contains(&n.as_str())) {
        warnings.push(format!(
            "agent.env.{name}: replaces the value flakestorm sets for agent.command; if the \
             agent's traffic no longer crosses this run's proxy, the run tests nothing"
        ));
    }
}

/// `agent.headers`, parsed as the driver parses them (values after `${VAR}` expansion).
/// A bad value is not shown: headers carry secrets.
fn check_headers(headers: &BTreeMap<String, String>, errors: &mut Vec<ConfigError>) {
    for (name, value) in headers {
        let path = format!("agent.headers.{name}");
        if let Err(e) = http::HeaderName::from_bytes(name.as_bytes()) {
            errors.push(ConfigError::new(&path, e.to_string()));
        }
        if let Err(e) = http::HeaderValue::from_str(value) {
            errors.push(ConfigError::new(
                path,
                format!("{e}: control characters such as a newline are not allowed"),
            ));
        }
    }
}

/// A compiled `response_path`: where the answer is in the agent's JSON response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsePath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

impl ResponsePath {
    /// `result`, `choices[0].message.content`, `$.data.items[2]`, `$['odd key'].x`; `$` alone
    /// is the whole response.
    pub fn parse(text: &str) -> Result<ResponsePath, String> {
        let bad = |why: &str| {
            format!(
                "`{text}` is not a response path ({why}); write e.g. `result` or `choices[0].message.content`"
            )
        };
        let mut rest = text.trim();
        if let Some(r) = rest.strip_prefix('$') {
            rest = r.strip_prefix('.').unwrap_or(r);
        } else if rest.is_empty() {
            return Err(bad("empty"));
        }
        let mut steps = vec![];
        let mut key = String::new();
        let mut after_bracket = false;
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            let bracket = c == '[';
            match c {
                '.' => {
                    if key.is_empty() && !after_bracket {
                        return Err(bad("empty segment"));
                    }
                    if !key.is_empty() {
                        steps.push(Step::Key(std::mem::take(&mut key)));
                    }
                }
                '[' => {
                    if !key.is_empty() {
                        steps.push(Step::Key(std::mem::take(&mut key)));
                    }
                    let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                    let quoted = inner
                        .strip_prefix('\'')
                        .and_then(|s| s.strip_suffix('\''))
                        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                    match (quoted, inner.parse::<usize>()) {
                        (Some(k), _) => steps.push(Step::Key(k.to_string())),
                        (None, Ok(i)) => steps.push(Step::Index(i)),
                        _ => return Err(bad("an index must be a number or a quoted key")),
                    }
                }
                c => key.push(c),
            }
            after_bracket = bracket;
        }
        if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        Ok(ResponsePath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value at this path.
    pub fn get<'a>(&self, v: &'a serde_json::Value) -> Option<&'a serde_json::Value> {
        self.steps.iter().try_fold(v, |cur, step| match step {
            Step::Key(k) => cur.get(k),
            Step::Index(i) => cur.get(*i),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_dotted_indexed_and_json_path() {
        let v = json!({"result": "hi", "choices": [{"message": {"content": "yo"}}], "odd key": {"x": 1}});
        let get = |p: &str| ResponsePath::parse(p).unwrap().get(&v).cloned();
        assert_eq!(get("result"), Some(json!("hi")));
        assert_eq!(get("choices[0].message.content"), Some(json!("yo")));
        assert_eq!(get("$.choices[0].message.content"), Some(json!("yo")));
        assert_eq!(get("$['odd key'].x"), Some(json!(1)));
        assert_eq!(get("$"), Some(v.clone()));
        assert_eq!(get("choices[1].message"), None);
        for bad in ["", "a..b", "a[x]"] {
            assert!(ResponsePath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
