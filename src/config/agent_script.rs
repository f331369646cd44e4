//! The `agent:` section of an agent that is a script: `agent.command` without
//! `agent.endpoint`, run once per case with the prompt as `{prompt}` (quoted by
//! flakestorm) or on its stdin, its stdout the answer. What only an HTTP agent has
//! (`{port}`, readiness, resets, instances, request shape, netns capture, wire-level
//! mutations) is refused at its field with what to do instead. Owns no types.

use super::agent::{AgentSpec, AgentTarget, PORT, PROMPT};
use super::{ConfigError, MutationsSpec};
use crate::capture::Mode as CaptureMode;
use crate::mutate::kind::Family;

/// Why a field of a script agent's section does not apply.
fn http_only(field: &str, does: &str) -> String {
    format!(
        "{does}; this agent has no agent.endpoint, so it is a script run once per case \
         (agent.command) and has no `{field}`: remove it, or give agent.endpoint"
    )
}

/// The `agent:` section compiled, with a script agent's own checks: what `sections` uses.
pub(super) fn compile(a: &AgentSpec) -> Result<AgentTarget, Vec<ConfigError>> {
    let mut errors = vec![];
    if a.endpoint.is_none() && a.command.is_some() {
        check(a, &mut errors);
    }
    match (a.compile(), errors.is_empty()) {
        (Ok(t), true) => Ok(t),
        (Ok(_), false) => Err(errors),
        (Err(e), _) => Err(e.into_iter().chain(errors).collect()),
    }
}

/// The problems of a script agent's section, at their fields.
fn check(a: &AgentSpec, errors: &mut Vec<ConfigError>) {
    let mut err =
        |field: &str, msg: String| errors.push(ConfigError::new(format!("agent.{field}"), msg));
    let command = a.command.as_deref().unwrap_or_default();
    if command.contains(PORT) {
        err(
            "command",
            format!(
                "takes `{PORT}`, which names the port of an agent that listens: a script \
                 agent (no agent.endpoint) listens on none; give agent.endpoint with `{PORT}` too"
            ),
        );
    }
    for quoted in [format!("'{PROMPT}'"), format!("\"{PROMPT}\"")] {
        if command.contains(&quoted) {
            err(
                "command",
                format!(
                    "writes {quoted}: write `{PROMPT}` without quotes, flakestorm passes the \
                     prompt as one argument whatever it holds"
                ),
            );
        }
    }
    let fields = [
        (
            "ready_url",
            a.ready_url.is_some(),
            "is polled until the agent listens",
        ),
        (
            "reset_endpoint",
            a.reset_endpoint.is_some(),
            "is POSTed between cases (a script starts afresh each case)",
        ),
        (
            "instances",
            a.instances.is_some(),
            "counts the processes of an agent that listens (a script runs one per case, \
             advanced.concurrency at a time)",
        ),
        (
            "method",
            a.method != "POST",
            "is the HTTP method of each invoke",
        ),
        (
            "request_template",
            a.request_template != r#"{"input": "{prompt}"}"#,
            "is the HTTP body of each invoke",
        ),
        (
            "headers",
            !a.headers.is_empty(),
            "are sent with each invoke",
        ),
    ];
    for (field, set, does) in fields {
        if set {
            err(field, http_only(field, does));
        }
    }
    if a.capture == CaptureMode::Netns {
        err(
            "capture",
            "netns starts one agent process in a namespace; a script agent runs a process per \
             case through the proxy variables: use `proxy`"
                .into(),
        );
    }
}

/// Wire-level mutations send raw bytes to the agent's HTTP endpoint: a script has none.
pub(super) fn check_mutations(m: &MutationsSpec, errors: &mut Vec<ConfigError>) {
    for (i, t) in m.types.iter().enumerate() {
        if t.family() == Family::Wire {
            errors.push(ConfigError::new(
                format!("mutations.types[{i}]"),
                format!(
                    "`{}` is a wire-level attack on the agent's HTTP endpoint; this agent is a \
                     script (agent.command without agent.endpoint) and has none",
                    t.name()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    fn errors(v: serde_json::Value) -> Vec<String> {
        let spec: super::AgentSpec = serde_json::from_value(v).unwrap();
        match super::compile(&spec) {
            Ok(_) => vec![],
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_command_without_an_endpoint_is_a_script() {
        let spec: super::AgentSpec =
            serde_json::from_value(serde_json::json!({"command": "python3 a.py {prompt}"}))
                .unwrap();
        let a = spec.compile().unwrap();
        assert!(a.script && a.pooled());
        assert_eq!(a.pool_size(3, 0, None).start, 3);
    }

    #[test]
    fn neither_endpoint_nor_command_names_both_forms() {
        let e = errors(serde_json::json!({}));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("agent.endpoint: missing: give the agent's HTTP endpoint"));
        assert!(e[0].contains("python agent.py {prompt}"), "{e:?}");
    }

    #[test]
    fn what_only_an_http_agent_has_is_refused_at_its_field() {
        let e = errors(serde_json::json!({
            "command": "python3 a.py '{prompt}' --port {port}",
            "ready_url": "http://127.0.0.1:1/", "reset_endpoint": "http://127.0.0.1:1/r",
            "headers": {"x": "y"},
        }));
        for field in [
            "command: takes `{port}`",
            "command: writes '{prompt}'",
            "ready_url:",
        ] {
            assert!(e.iter().any(|m| m.contains(field)), "{field}: {e:?}");
        }
        assert!(
            e.iter()
                .any(|m| m.starts_with("agent.reset_endpoint: is POSTed"))
        );
        assert!(e.iter().any(|m| m.starts_with("agent.headers: are sent")));
    }
}
