//! What an exchange costs the journal in memory: its struct and the heap its strings and
//! lists hold, so `journal.max_bytes` bounds memory by the byte rather than by the entry (an
//! LLM call with 30 headers and a long URL weighs many times a health check).

use crate::exchange::{BodyEnd, Exchange, FaultRecord, Outcome, Target};

/// What the allocator adds to each heap block on average (size-class rounding).
const PER_ALLOCATION: usize = 16;

/// The `Arc` an exchange is kept in: its two reference counts, in the block beside the
/// exchange (which `size_of::<Exchange>()` counts), and that block's allocator overhead.
const ARC: usize = 2 * std::mem::size_of::<usize>() + PER_ALLOCATION;

/// Its slots in the journal's lists: the `Arc` pointer in `items`, the weight in `weights`.
const SLOTS: usize = 2 * std::mem::size_of::<usize>();

fn text(s: &str) -> usize {
    match s.len() {
        0 => 0,
        n => n + PER_ALLOCATION,
    }
}

fn opt(s: &Option<String>) -> usize {
    s.as_deref().map_or(0, text)
}

fn headers(h: &[(String, String)]) -> usize {
    let list = std::mem::size_of_val(h) + PER_ALLOCATION;
    list + h.iter().map(|(k, v)| text(k) + text(v)).sum::<usize>()
}

/// A list's heap block (its items' own heap is counted by the caller).
fn list<T>(items: &[T]) -> usize {
    match items.len() {
        0 => 0,
        _ => std::mem::size_of_val(items) + PER_ALLOCATION,
    }
}

/// The heap a fault record holds (its struct is counted where it lives: inline in the
/// exchange, or in the attacks' list).
fn record(f: &FaultRecord) -> usize {
    text(&f.rule) + opt(&f.note)
}

/// Approximate bytes `e` holds while the journal keeps it (the `Arc` it is kept in and
/// its slot in the journal's lists included).
pub fn weight(e: &Exchange) -> usize {
    let outcome = match &e.outcome {
        Outcome::Response { response, body } => {
            text(&response.version)
                + headers(&response.headers)
                + match body {
                    BodyEnd::UpstreamAborted { message } | BodyEnd::ProxyAborted { message } => {
                        text(message)
                    }
                    BodyEnd::Complete | BodyEnd::ClientDisconnected | BodyEnd::Upgraded => 0,
                }
        }
        Outcome::Error { error, .. } => text(&error.message),
    };
    let mcp = e.mcp.as_ref().map_or(0, |m| {
        // A JSON-RPC id is a number or a short string; only a string holds heap.
        let id = match &m.id {
            Some(serde_json::Value::String(id)) => text(id),
            _ => 0,
        };
        text(&m.method) + opt(&m.tool) + opt(&m.session) + opt(&m.note) + opt(&m.transport) + id
    });
    let target = match &e.target {
        Target::Tool { name } => text(name),
        Target::Llm { .. } | Target::Embeddings { .. } | Target::Other => 0,
    };
    std::mem::size_of::<Exchange>()
        + ARC
        + SLOTS
        + target
        + text(&e.client_addr)
        + opt(&e.client_user)
        + text(&e.request.method)
        + text(&e.request.url)
        + text(&e.request.version)
        + headers(&e.request.headers)
        + outcome
        + e.fault.as_ref().map_or(0, record)
        + std::mem::size_of_val(e.attacks.as_slice())
        + e.attacks.iter().map(record).sum::<usize>()
        + e.llm_tool_calls.iter().map(|t| text(t) + 24).sum::<usize>()
        + opt(&e.trace_id)
        + opt(&e.canary)
        + list(&e.canary_leaks)
        + e.canary_leaks
            .iter()
            .map(|l| text(&l.canary) + text(&l.from) + text(&l.found_in))
            .sum::<usize>()
        + list(&e.planted)
        + e.planted
            .iter()
            .map(|p| text(&p.path) + opt(&p.original) + text(&p.planted))
            .sum::<usize>()
        + mcp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{Target, tests_support};

    #[test]
    fn an_exchange_weighs_its_strings_and_headers() {
        let small = tests_support::exchange(Target::Other, "http://a.example/")
            .method("GET")
            .response(200, &[])
            .build();
        let value = "v".repeat(1000);
        let big = tests_support::exchange(Target::Other, "http://a.example/")
            .method("GET")
            .request_headers(&[("x-big", value.as_str())])
            .response(200, &[])
            .build();
        let (s, b) = (weight(&small), weight(&big));
        assert!(s >= std::mem::size_of::<Exchange>(), "{s}");
        assert!(
            b >= s + 1000,
            "a 1000-byte header weighs at least that: {s} vs {b}"
        );
        assert!(b < s + 1200, "and not much more: {s} vs {b}");
    }

    /// Every field that holds text of the agent's or the upstream's size counts: one left
    /// out of `weight` lets the journal hold more than `journal.max_bytes` when it is large.
    #[test]
    fn every_field_holding_text_weighs_it() {
        let base = || {
            tests_support::exchange(Target::Other, "http://a.example/")
                .method("POST")
                .response(200, &[])
                .build()
        };
        let long = "x".repeat(500);
        let record = || FaultRecord {
            rule: long.clone(),
            mode: crate::exchange::FaultKind::Error,
            applied: true,
            note: Some(long.clone()),
        };
        let mut tool = base();
        tool.target = Target::Tool { name: long.clone() };
        let mut fault = base();
        fault.fault = Some(record());
        let mut attacks = base();
        attacks.attacks = vec![record(), record()];
        let mut calls = base();
        calls.llm_tool_calls = vec![long.clone(); 3];
        let mut mcp = base();
        mcp.mcp = Some(crate::exchange::McpCall {
            transport: None,
            method: "tools/call".into(),
            tool: Some(long.clone()),
            id: Some(serde_json::Value::String(long.clone())),
            session: Some(long.clone()),
            detected: false,
            note: None,
        });
        let mut mcp_note = base();
        mcp_note.mcp = Some(crate::exchange::McpCall {
            transport: None,
            method: "(unread)".into(),
            tool: None,
            id: None,
            session: None,
            detected: true,
            note: Some(long.clone()),
        });
        let mut ids = base();
        (ids.trace_id, ids.canary, ids.client_user) =
            (Some(long.clone()), Some(long.clone()), Some(long.clone()));
        let mut leaks = base();
        let leak = || crate::exchange::CanaryLeak {
            canary: long.clone(),
            from: long.clone(),
            found_in: long.clone(),
        };
        leaks.canary_leaks = vec![leak(), leak()];
        let long_headers = [("x-a", long.as_str()), ("x-b", long.as_str())];
        let answered = tests_support::exchange(Target::Other, "http://a.example/")
            .method("POST")
            .response(200, &long_headers)
            .build();
        let failed = |message: &str| {
            let mut e = base();
            e.outcome = Outcome::Error {
                error: crate::exchange::ErrorInfo {
                    source: crate::exchange::ErrorSource::Upstream,
                    kind: crate::exchange::ErrorKind::UpstreamConnect,
                    message: message.into(),
                },
                status: None,
            };
            e
        };
        // An error outcome replaces the response head's text: compared with a short error.
        let short_error = weight(&failed("x"));
        assert!(
            weight(&failed(&long)) >= short_error + 499,
            "an error message"
        );
        assert!(
            weight(&failed(&long)) < short_error + 499 + 400,
            "an error message"
        );
        let plain = weight(&base());
        for (what, e, at_least) in [
            ("a tool's name", tool, 500),
            ("a fault record", fault, 1000),
            ("two attacks", attacks, 2000),
            ("three tool calls", calls, 1500),
            ("an MCP call", mcp, 1500),
            ("an MCP note", mcp_note, 500),
            ("trace id, canary and proxy user", ids, 1500),
            ("two canary leaks", leaks, 3000),
            ("response headers", answered, 1000),
        ] {
            let w = weight(&e);
            assert!(w >= plain + at_least, "{what}: {plain} → {w}");
            assert!(
                w < plain + at_least + 400,
                "{what} is not overcounted: {plain} → {w}"
            );
        }
    }
}
