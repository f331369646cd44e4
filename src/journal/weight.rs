//! What an exchange costs the journal in memory: its struct and the heap its strings and
//! lists hold, so `journal.max_bytes` bounds memory by the byte rather than by the entry (an
//! LLM call with 30 headers and a long URL weighs many times a health check).

use crate::exchange::{BodyEnd, Exchange, FaultRecord, Outcome, Target};

/// What the allocator adds to each heap block on average (size-class rounding).
const PER_ALLOCATION: usize = 16;

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
        + 2 * std::mem::size_of::<usize>()
        + PER_ALLOCATION
        + 2 * std::mem::size_of::<usize>()
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
}
