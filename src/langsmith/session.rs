//! A root run and its trace as a replay session: the root's `inputs` become `input`, each
//! `tool` run's output or error becomes a `tool_responses` entry (in call order, by the tool
//! run's `name`). Rules (docs/replay.md, "LangSmith import"): the input is `inputs.input`,
//! else the first of `question`, `query`, `prompt`, `text`, else the last `messages` item's
//! content, else the only string value; anything else is ambiguous and an error naming the
//! keys. An errored tool run's status is recovered from its error text.

use serde_json::{Value, json};

use super::run::{Run, lookup};
use crate::config::replays::{Session, ToolResponse};

/// The keys tried, in order, for the prompt.
const INPUT_KEYS: &[&str] = &["input", "question", "query", "prompt", "text"];
/// A recorded latency longer than this is kept at it (sessions allow 10 minutes).
const MAX_LATENCY_MS: u64 = 600_000;

/// The session of `root` with `calls` (its trace's runs under it, in call order).
pub fn session(root: &Run, calls: &[&Run]) -> Result<Session, String> {
    let input = input(root)?;
    let tool_responses = calls
        .iter()
        .filter(|r| r.run_type == "tool")
        .map(|r| tool_response(r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Session {
        id: format!("langsmith-{}", root.id),
        name: Some(root.name.clone()),
        source: Some("langsmith".into()),
        input,
        tool_responses,
        expected_failure: root.error.as_deref().map(|e| summary(e).to_string()),
        contract: None,
        context: Some(json!({"langsmith": {
            "run_id": root.id,
            "trace_id": root.trace_id,
            "project_id": root.session_id,
            "status": if root.errored { "error" } else { "success" },
        }})),
        tape: None,
    })
}

/// The root run's prompt.
fn input(root: &Run) -> Result<String, String> {
    let Some(inputs) = root.inputs.as_object() else {
        return Err(format!("run {}: inputs missing", root.id));
    };
    for key in INPUT_KEYS {
        match inputs.get(*key) {
            Some(Value::String(s)) => return Ok(s.clone()),
            Some(v @ Value::Object(_)) if *key == "input" => {
                if let Some(s) = lookup(v, "content").and_then(Value::as_str) {
                    return Ok(s.to_string());
                }
            }
            _ => {}
        }
    }
    if let Some(Value::Array(messages)) = inputs.get("messages") {
        let last = messages
            .last()
            .map(|m| m.as_array().and_then(|batch| batch.last()).unwrap_or(m));
        if let Some(text) = last.and_then(message_text) {
            return Ok(text);
        }
    }
    let strings: Vec<&str> = inputs.values().filter_map(Value::as_str).collect();
    if let [only] = strings.as_slice() {
        return Ok((*only).to_string());
    }
    let keys: Vec<&str> = inputs.keys().map(String::as_str).collect();
    Err(format!(
        "run {}: inputs.input missing, and the prompt cannot be told from inputs' keys ({})",
        root.id,
        if keys.is_empty() {
            "none".into()
        } else {
            keys.join(", ")
        }
    ))
}

/// A chat message's text: `{role, content}`, `{type, content}` or LangChain's serialized
/// `{lc, kwargs: {content}}`; content a string or a list of text parts.
pub fn message_text(m: &Value) -> Option<String> {
    let content = m.get("content").or_else(|| lookup(m, "kwargs.content"))?;
    if let Some(s) = content.as_str() {
        return Some(s.to_string());
    }
    let text: Vec<&str> = content
        .as_array()?
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str).or(p.as_str()))
        .collect();
    (!text.is_empty()).then(|| text.join(""))
}

/// A tool run as the answer the agent's call received.
fn tool_response(r: &Run) -> Result<ToolResponse, String> {
    let latency_ms = r.latency_ms().min(MAX_LATENCY_MS);
    if r.errored {
        let error = r
            .error
            .clone()
            .unwrap_or_else(|| "error (no text recorded)".into());
        return Ok(ToolResponse {
            tool: r.name.clone(),
            status: error_status(&error),
            response: json!({"error": summary(&error)}),
            latency_ms,
        });
    }
    let output = r.output("output")?;
    // LangChain keeps a tool's answer as a serialized ToolMessage: its content is the body.
    let response = match lookup(output, "kwargs.content").or_else(|| {
        output
            .get("content")
            .filter(|_| output.get("tool_call_id").is_some())
    }) {
        Some(content) => content.clone(),
        None => output.clone(),
    };
    Ok(ToolResponse {
        tool: r.name.clone(),
        status: 200,
        response,
        latency_ms,
    })
}

/// The HTTP status an errored tool run's error text names: `connection refused` → 0 (the
/// session's refused connection); an HTTP status written as `504 Server Error`, `HTTP 503`,
/// `status 502` or `status_code=429` → that status; `timeout`/`timed out` → 504; anything
/// else → 500.
pub fn error_status(error: &str) -> u16 {
    let lower = error.to_ascii_lowercase();
    if lower.contains("connection refused") {
        return 0;
    }
    let pattern = regex::Regex::new(
        r"(?i)(?:\b([45]\d\d)\s+(?:server|client)\s+error\b|(?:\bhttp|\bstatus(?:[ _]?code)?)\W{0,3}([45]\d\d)\b)",
    );
    if let Some(c) = pattern.ok().and_then(|p| p.captures(error)) {
        let n = c.get(1).or(c.get(2)).and_then(|m| m.as_str().parse().ok());
        if let Some(n) = n {
            return n;
        }
    }
    if lower.contains("timeout") || lower.contains("timed out") {
        return 504;
    }
    500
}

/// An error's one line: a Python traceback's last line (the exception), else the first.
pub fn summary(error: &str) -> &str {
    let lines: Vec<&str> = error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [] => "",
        [first, ..] if first.starts_with("Traceback") => lines.last().copied().unwrap_or(first),
        [first, ..] => first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_errors_status_is_recovered_from_its_text() {
        assert_eq!(
            error_status("HTTPError('504 Server Error: Gateway Timeout for url: x')"),
            504
        );
        assert_eq!(
            error_status("APIStatusError: status_code=429 rate limited"),
            429
        );
        assert_eq!(error_status("upstream said HTTP 503"), 503);
        assert_eq!(
            error_status("ReadTimeout: read timed out on line 404 of x.py"),
            504
        );
        assert_eq!(
            error_status("ConnectionError: [Errno 111] Connection refused"),
            0
        );
        assert_eq!(error_status("ValueError: bad ticker"), 500);
    }

    #[test]
    fn a_tracebacks_summary_is_its_exception() {
        assert_eq!(
            summary("Traceback (most recent call last):\n  File x\nKeyError: 'q'\n"),
            "KeyError: 'q'"
        );
        assert_eq!(summary("ValueError('x')\n\nTraceback…"), "ValueError('x')");
    }
}
