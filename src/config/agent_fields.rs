//! Small parts of the `agent:` section's compilation that `agent.rs` uses: URLs, headers
//! and the words of its errors. Imports nothing of `agent.rs`, so no circle.

use std::collections::BTreeMap;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};

use super::ConfigError;

/// The placeholder for an instance's port in `agent.command`, `endpoint`, `ready_url`,
/// `reset_endpoint` and `env` (`agent::PORT`).
pub const PORT: &str = "{port}";

/// `v` as an http(s) URL with a host.
pub(super) fn http_url(v: &str) -> Option<Uri> {
    v.parse::<Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some())
}

/// Why an agent `type` other than http (Flakestorm v2's python, langchain) is refused.
pub(super) fn not_driven(kind: &str) -> String {
    format!(
        "`{kind}` agents are not driven directly (a Flakestorm v2 agent type that does not carry \
         over); put the agent behind an HTTP endpoint (e.g. a small web route that calls it) \
         and use type: http"
    )
}

/// Why an `agent:` section with neither an endpoint nor a command drives nothing.
pub(super) const NEITHER: &str = "missing: give the agent's HTTP endpoint (e.g. \
                       http://localhost:8790/invoke, POSTed {\"input\": \"<prompt>\"}), or, for an \
                       agent that is a script, only agent.command with the prompt as `{prompt}` in \
                       its arguments or on its stdin (e.g. python agent.py {prompt})";

pub(super) fn not_started(what: &str) -> String {
    format!(
        "{what} takes `{PORT}`, which is filled in only for agents flakestorm starts with a \
         `{PORT}` in agent.command"
    )
}

/// `agent.headers` as the driver sends them (values after `${VAR}` expansion). A bad value
/// is not shown: headers carry secrets.
pub(super) fn compile_headers(
    headers: &BTreeMap<String, String>,
    errors: &mut Vec<ConfigError>,
) -> HeaderMap {
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
