//! What an exchange costs the journal in memory: its struct and the heap its strings and
//! lists hold, so `journal.max_bytes` bounds memory by the byte rather than by the entry (an
//! LLM call with 30 headers and a long URL weighs many times a health check).

use crate::exchange::{BodyEnd, Exchange, FaultRecord, Outcome, Target};

/// What the allocator adds to each heap block on average (size-class rounding).
const PER_ALLOCATION: usize = 16;

/// The `Arc` an exchange is kept in: its two reference counts, in a heap block of its own.
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
        text(&m.method) + opt(&m.tool) + opt(&m.session) + opt(&m.note) + id
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
        + e.canary_leaks.len() * 128
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

    /// Every heap-holding field counts: a field left out of `weight` lets the journal hold
    /// more than `journal.max_bytes` when that field is large.
    #[test]
    fn tool_names_faults_attacks_tool_calls_and_mcp_calls_weigh_their_text() {
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
            method: "tools/call".into(),
            tool: Some(long.clone()),
            id: Some(serde_json::Value::String(long.clone())),
            session: Some(long.clone()),
            detected: false,
            note: None,
        });
        let plain = weight(&base());
        for (what, e, at_least) in [
            ("a tool's name", tool, 500),
            ("a fault record", fault, 1000),
            ("two attacks", attacks, 2000),
            ("three tool calls", calls, 1500),
            ("an MCP call", mcp, 1500),
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
