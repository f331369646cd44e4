//! Outcome-class benchmark (issue #46): what reading a case's trace off the wire costs when
//! it ends (docs/outcomes.md). A 50-exchange case of a tool-calling agent: 25 LLM calls
//! whose requests carry the growing conversation (the tool results in it), 25 tool calls
//! with ~2 KiB JSON answers, one corrupted (its planted values traced into every later
//! request), and a 600-character answer full of facts. Measured against, in the same run,
//! the floor any trace pays: parsing those 50 bodies' JSON once. Median and p95 of 300
//! traces each; prints a markdown section and refreshes it in docs/benchmarks.md.
//! `cargo bench --bench outcome`.

// A benchmark measures in wall-clock time (clippy.toml bans it elsewhere).
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use flakestorm::exchange::{
    BodyEnd, Exchange, FaultKind, FaultRecord, Outcome, Planted, Provider, RequestHead,
    ResponseHead, Route, Target, Timings,
};
use flakestorm::run::outcome::{Wire, trace};
use flakestorm::tape::{Bodies, Event};

const RUNS: usize = 300;

fn exchange(id: u64, target: Target, url: &str, req: usize, resp: usize) -> Exchange {
    let json = vec![("content-type".to_string(), "application/json".to_string())];
    Exchange {
        id,
        client_addr: "127.0.0.1:1".into(),
        client_user: None,
        route: Route::Intercepted,
        target,
        request: RequestHead {
            method: "POST".into(),
            url: url.into(),
            version: "HTTP/1.1".into(),
            headers: [
                json.clone(),
                vec![("content-length".into(), req.to_string())],
            ]
            .concat(),
        },
        outcome: Outcome::Response {
            response: ResponseHead {
                status: 200,
                version: "HTTP/1.1".into(),
                headers: json,
            },
            body: BodyEnd::Complete,
        },
        timings: Timings::default(),
        response_bytes: resp as u64,
        fault: None,
        attacks: vec![],
        llm_tool_calls: vec![],
        trace_id: None,
        canary: None,
        canary_leaks: vec![],
        mcp: None,
        tcp: None,
        planted: vec![],
        usage: None,
        note: None,
    }
}

/// A tool's answer: ~2 KiB of records with numbers, dates and short strings.
fn tool_answer(n: usize) -> String {
    let rows: Vec<String> = (0..18)
        .map(|i| {
            format!(
                r#"{{"sku":"ORD-{n}{i:03}","price_usd":{}.{:02},"stock":{},"updated":"2026-11-{:02}","city":"Paris"}}"#,
                10 + i * 7,
                (n * 13 + i) % 100,
                100 + n + i,
                1 + i % 28
            )
        })
        .collect();
    format!(r#"{{"query":"q{n}","results":[{}]}}"#, rows.join(","))
}

/// The case: its exchanges and their bodies.
fn case() -> (Vec<Arc<Exchange>>, HashMap<u64, Arc<Bodies>>) {
    let (mut exchanges, mut bodies) = (vec![], HashMap::new());
    let mut conversation = String::from(r#"[{"role":"user","content":"Find the cheapest item"}"#);
    for n in 0..25usize {
        let llm = Target::Llm {
            provider: Provider::Openai,
        };
        let request = format!(r#"{{"model":"m","messages":{conversation}]}}"#);
        let answer = r#"{"choices":[{"message":{"role":"assistant","tool_calls":[{"function":{"name":"inventory","arguments":"{}"}}]}}]}"#;
        let mut e = exchange(
            2 * n as u64 + 1,
            llm,
            "https://api.openai.com/v1/chat/completions",
            request.len(),
            answer.len(),
        );
        e.llm_tool_calls = vec!["inventory".into()];
        bodies.insert(e.id, body(&request, answer));
        exchanges.push(Arc::new(e));
        let tool = Target::Tool {
            name: "inventory".into(),
        };
        let mut result = tool_answer(n);
        let mut t = exchange(
            2 * n as u64 + 2,
            tool,
            "https://inventory.example/v1/items?q=x",
            0,
            result.len(),
        );
        if n == 3 {
            result = result.replacen("10.39", "17.62", 1);
            t.fault = Some(FaultRecord {
                rule: "corrupt".into(),
                mode: FaultKind::Corrupt,
                applied: true,
                note: None,
            });
            t.planted = vec![Planted {
                path: "$.results[0].price_usd".into(),
                original: Some("10.39".into()),
                planted: "17.62".into(),
            }];
        }
        bodies.insert(t.id, body("", &result));
        conversation.push_str(&format!(
            r#",{{"role":"tool","content":{}}}"#,
            serde_json::to_string(&result).unwrap()
        ));
        exchanges.push(Arc::new(t));
    }
    (exchanges, bodies)
}

fn body(request: &str, response: &str) -> Arc<Bodies> {
    Arc::new(Bodies {
        request: Bytes::from(request.to_string()),
        response: vec![Event {
            at_ms: 1.0,
            data: Bytes::from(response.to_string()),
        }],
        truncated: false,
    })
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[(v.len() as f64 * 0.95) as usize])
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("outcome bench: skipped (run with `cargo bench --bench outcome`)");
        return;
    }
    let (exchanges, kept) = case();
    let bodies = |id: u64| kept.get(&id).cloned();
    let answer = "The cheapest item is ORD-3000 at $17.62, updated 2026-11-01; ORD-4001 costs \
                  $17.52 and ORD-5002 $24.65, with 104 and 107 in stock. Prices rose 12% since \
                  November 28, 2026. Stock: 2,400 units in Paris; 18 SKUs listed; the query \
                  took 1.2 s and returned 3.5 MB. Order ORD-9999 is unknown (made up)."
        .to_string();
    let declared = vec!["inventory".to_string()];
    let wire = Wire {
        exchanges: &exchanges,
        bodies: &bodies,
        prompt: "Find the cheapest item",
        answer: Some(&answer),
        declared: &declared,
        max_scan: 16 << 20,
    };
    let t = trace(&wire);
    assert!(
        t.undecided.is_none() && !t.planted[0].reached.is_empty(),
        "{t:?}"
    );
    let (mut traced, mut parsed) = (vec![], vec![]);
    for _ in 0..RUNS {
        let start = Instant::now();
        std::hint::black_box(trace(&wire));
        traced.push(start.elapsed().as_secs_f64() * 1000.0);
        let start = Instant::now();
        for b in kept.values() {
            let _: Option<serde_json::Value> = serde_json::from_slice(&b.request).ok();
            std::hint::black_box(
                serde_json::from_slice::<serde_json::Value>(&b.response_bytes()).ok(),
            );
        }
        parsed.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    // The same case with 2,000 values planted in the one corrupted answer (a large tool
    // answer, every number replaced): searched for all at once, not one by one.
    let mut many = exchanges.clone();
    let at = many.iter().position(|e| !e.planted.is_empty()).unwrap();
    let mut e = Exchange::clone(&many[at]);
    e.planted = (0..2_000)
        .map(|i| Planted {
            path: format!("$.results[{i}].price_usd"),
            original: Some("10.39".into()),
            planted: format!("{}.{:02}", 9_000 + i, i % 97),
        })
        .collect();
    many[at] = Arc::new(e);
    let wide = Wire {
        exchanges: &many,
        ..wire
    };
    let mut wide_times = vec![];
    for _ in 0..RUNS / 10 {
        let start = Instant::now();
        std::hint::black_box(trace(&wide));
        wide_times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let (wm, wp) = stats(wide_times);
    let bytes: usize = kept
        .values()
        .map(|b| b.request.len() + b.response_bytes().len())
        .sum();
    let ((tm, tp), (pm, pp)) = (stats(traced), stats(parsed));
    let md = format!(
        "<!-- bench:outcome:start -->\n## Outcome classes: the trace of a 50-exchange case\n\n\
         - Command: `cargo bench --bench outcome` (source: `benches/outcome.rs`)\n\
         - Machine: {} cores\n\
         - Method: a tool-calling agent's case of 50 exchanges (25 LLM calls carrying the growing conversation, 25 tool answers of ~2 KiB, one corrupted: {} KiB of bodies) and a 600-character answer with {} facts; the trace read {RUNS} times; in the same run, the floor: parsing those bodies' JSON once.\n\n\
         | | median | p95 |\n|--|--:|--:|\n\
         | the case's trace (facts, their support, a planted value traced into {} later requests and the answer, calls around the proxy) | {tm:.3} ms | {tp:.3} ms |\n\
         | the same, 2,000 values planted in the corrupted answer | {wm:.3} ms | {wp:.3} ms |\n\
         | parsing its bodies' JSON once (the floor) | {pm:.3} ms | {pp:.3} ms |\n\
         | ratio (one planted value to the floor) | {:.2}× | |\n\n\
         A case with no exchange (an agent that calls nothing) costs nothing to trace; the trace is read once per case, when it ends, while the journal has its bodies.\n<!-- bench:outcome:end -->\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        bytes / 1024,
        t.facts.len(),
        t.planted[0]
            .reached
            .iter()
            .filter(|r| r.place != flakestorm::run::outcome::Place::Answer)
            .count(),
        tm / pm,
    );
    print!("{md}");
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/benchmarks.md");
    let old = std::fs::read_to_string(&doc).unwrap_or_default();
    let (start, end) = (
        "<!-- bench:outcome:start -->",
        "<!-- bench:outcome:end -->\n",
    );
    let new = match (old.find(start), old.find(end)) {
        (Some(a), Some(b)) => format!("{}{md}{}", &old[..a], &old[b + end.len()..]),
        _ => format!("{old}\n{md}"),
    };
    std::fs::write(doc, new).unwrap();
}
