//! A case's trace, read off the wire when it ends (while the journal still has its
//! bodies): each fact of the answer and the good tool response (or the prompt) that gives
//! it; each value a fault or attack planted and where it surfaced afterwards (a later
//! request to the model, a later tool call's arguments, the answer); the declared tools the
//! model asked for whose call never crossed the proxy; and why the wire allows no decision,
//! when a body it needed is too large or was not kept. Pure: bodies come in as a function.

use std::sync::Arc;

use super::facts::{self, Fact};
use super::sources::Source;
use super::{Place, Reach};
use crate::exchange::{BodyEnd, Exchange, Outcome, Planted, Target};
use crate::tape::Bodies;

/// The most facts of an answer a trace reads.
const MAX_FACTS: usize = 2_000;

/// The most planted values a trace follows in one case (a body plants at most 10,000).
const MAX_PLANTED: usize = 20_000;

/// What the trace is read from.
pub struct Wire<'a> {
    /// The case's exchanges, in id order.
    pub exchanges: &'a [Arc<Exchange>],
    /// The journal's kept bodies of an exchange.
    pub bodies: &'a dyn Fn(u64) -> Option<Arc<Bodies>>,
    pub prompt: &'a str,
    pub answer: Option<&'a str>,
    /// `tools:` names: a call the model asks for by one of them must cross the proxy.
    pub declared: &'a [String],
    /// `proxy.max_rewrite_bytes`: a body larger than this is not scanned.
    pub max_scan: usize,
}

/// What the wire says of one case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The answer's facts, each with what supports it.
    pub facts: Vec<Traced>,
    pub planted: Vec<PlantedTrace>,
    /// Declared tools the model asked for (and the LLM exchange that asked) with no call
    /// to them in the case.
    pub bypassed: Vec<(String, u64)>,
    /// Why the wire allows no decision, when it does not.
    pub undecided: Option<String>,
    /// The tool calls that got no good answer, as `get_weather: 503`.
    pub failed_calls: Vec<String>,
    /// How many good tool responses the case received.
    pub good_responses: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Traced {
    pub fact: Fact,
    pub support: Support,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Support {
    None,
    Prompt,
    Tool { exchange: u64, tool: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlantedTrace {
    pub exchange: u64,
    pub planted: Planted,
    pub reached: Vec<Reach>,
}

/// The trace of a case from what crossed the proxy during it.
pub fn trace(w: &Wire) -> Trace {
    let mut t = Trace::default();
    let mut tools: Vec<(u64, String, Source)> = vec![];
    for e in w.exchanges.iter().filter(|e| tool_like(e)) {
        match good_body(w, e) {
            Ok(Some(source)) => tools.push((e.id, tool_name(e), source)),
            Ok(None) => t
                .failed_calls
                .push(format!("{}: {}", tool_name(e), failure(e))),
            Err(why) => t.undecided = t.undecided.or(Some(why)),
        }
    }
    t.good_responses = tools.len();
    let prompt = Source::of_text(w.prompt);
    let mut answer_facts = w.answer.map(facts::facts).unwrap_or_default();
    // No answer a person reads states thousands of facts; one that does is not traced
    // against thousands of planted values (that would grow with their product).
    if answer_facts.len() > MAX_FACTS {
        t.undecided = t.undecided.or(Some(format!(
            "the answer states {} facts, over {MAX_FACTS}: not scanned",
            answer_facts.len()
        )));
        answer_facts.clear();
    }
    t.facts = answer_facts
        .into_iter()
        .map(|fact| {
            let support = if prompt.supports(&fact) {
                Support::Prompt
            } else {
                tools.iter().find(|(_, _, s)| s.supports(&fact)).map_or(
                    Support::None,
                    |(id, tool, _)| Support::Tool {
                        exchange: *id,
                        tool: tool.clone(),
                    },
                )
            };
            Traced { fact, support }
        })
        .collect();
    let mut problem = t.undecided.take();
    t.planted = planted(w, &t.facts, &mut problem);
    t.undecided = problem;
    t.bypassed = bypassed(w);
    t
}

/// Calls to tools (declared or not): what the answer's facts may come from.
pub(super) fn tool_like(e: &Exchange) -> bool {
    match e.target {
        Target::Tool { .. } | Target::Other => true,
        Target::Llm { .. } | Target::Embeddings { .. } => false,
    }
}

/// A tool by its `tools:` name, an MCP tool by its own, anything else by its host.
pub fn tool_name(e: &Exchange) -> String {
    if let Some(t) = e.mcp.as_ref().and_then(|m| m.called_tool()) {
        return t.to_string();
    }
    match &e.target {
        Target::Tool { name } => name.clone(),
        Target::Llm { .. } | Target::Embeddings { .. } | Target::Other => {
            let url = &e.request.url;
            let host = url.split("://").nth(1).unwrap_or(url);
            host.split('/').next().unwrap_or(host).to_string()
        }
    }
}

fn failure(e: &Exchange) -> String {
    match &e.outcome {
        Outcome::Response { response, body } => match body {
            BodyEnd::Complete if (200..300).contains(&response.status) => "an MCP error".into(),
            BodyEnd::Complete | BodyEnd::ClientDisconnected | BodyEnd::Upgraded => {
                response.status.to_string()
            }
            BodyEnd::UpstreamAborted { .. } | BodyEnd::ProxyAborted { .. } => {
                format!("{} (body broken off)", response.status)
            }
        },
        Outcome::Error { error, .. } => error.kind.to_string(),
    }
}

/// A good response's body as a source: `Ok(None)` for a call that got no good answer (an
/// error status, a broken body, an MCP error), `Err` when its body cannot be scanned.
fn good_body(w: &Wire, e: &Exchange) -> Result<Option<Source>, String> {
    let Outcome::Response {
        response,
        body: BodyEnd::Complete,
    } = &e.outcome
    else {
        return Ok(None);
    };
    if !(200..300).contains(&response.status) {
        return Ok(None);
    }
    // A compressed body is bytes no fact can be read from (the proxy keeps what crossed
    // the wire): the case is undecided, never judged on what could not be read.
    let encoding = header(&response.headers, "content-encoding");
    if !encoding.is_empty() && !encoding.eq_ignore_ascii_case("identity") {
        return Err(format!(
            "a response of {} is compressed ({encoding}): not scanned",
            tool_name(e)
        ));
    }
    let bytes = scannable(w, e.id, e.response_bytes as usize, &tool_name(e))?;
    let body = bytes.response_bytes();
    let ct = header(&response.headers, "content-type");
    if e.mcp.is_some() && mcp_error(&body) {
        return Ok(None);
    }
    Ok(Some(Source::of_body(&body, ct, &e.planted)))
}

/// An exchange's kept bodies, or why they cannot be scanned.
fn scannable(w: &Wire, id: u64, size: usize, what: &str) -> Result<Arc<Bodies>, String> {
    if size > w.max_scan {
        return Err(format!(
            "a call to {what} carried {size} bytes, over proxy.max_rewrite_bytes ({}): \
             not scanned",
            w.max_scan
        ));
    }
    match (w.bodies)(id) {
        Some(b) if b.truncated => Err(format!(
            "a call to {what} has a body over {} bytes: not scanned",
            crate::tape::MAX_BODY
        )),
        Some(b) => Ok(b),
        None => Err(format!(
            "the journal kept no body of a call to {what}: it was dropped for room"
        )),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map_or("", |(_, v)| v.as_str())
}

/// A JSON-RPC error, or a tool result flagged `isError`, in a JSON or SSE MCP answer.
fn mcp_error(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let failed = |v: &serde_json::Value| {
        v.get("error").is_some()
            || v.pointer("/result/isError")
                .and_then(serde_json::Value::as_bool)
                == Some(true)
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => failed(&v),
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
            .any(|v| failed(&v)),
    }
}

/// Each planted value of the case and where it surfaced; a later request whose body
/// cannot be scanned makes the trace undecided (`problem`).
fn planted(w: &Wire, traced: &[Traced], problem: &mut Option<String>) -> Vec<PlantedTrace> {
    let sown: Vec<(&Arc<Exchange>, &Planted)> = w
        .exchanges
        .iter()
        .flat_map(|e| e.planted.iter().map(move |p| (e, p)))
        .collect();
    if sown.is_empty() {
        return vec![];
    }
    // Searched for all at once, but held in memory each: a case that met more is not traced.
    if sown.len() > MAX_PLANTED {
        problem.get_or_insert(format!(
            "faults planted {} values in this case, over {MAX_PLANTED}: not traced",
            sown.len()
        ));
        return vec![];
    }
    let first = sown.iter().map(|(e, _)| e.id).min().unwrap_or(0);
    let later = reach::requests(w, first, problem);
    let planted: Vec<&Planted> = sown.iter().map(|(_, p)| *p).collect();
    let needles = reach::Needles::of(&planted);
    // Each later request and the answer searched once for every needle.
    let carried: Vec<Vec<bool>> = later.iter().map(|r| needles.in_request(r)).collect();
    let in_answer = w
        .answer
        .map(|a| needles.in_answer(a, traced))
        .unwrap_or_default();
    sown.into_iter()
        .enumerate()
        .map(|(i, (e, p))| {
            let mut reached: Vec<Reach> = later
                .iter()
                .zip(&carried)
                .filter(|(r, found)| r.id > e.id && found[i])
                .map(|(r, _)| Reach {
                    place: r.place,
                    exchange: Some(r.id),
                })
                .collect();
            if in_answer.get(i).copied().unwrap_or(false) {
                reached.push(Reach {
                    place: Place::Answer,
                    exchange: None,
                });
            }
            PlantedTrace {
                exchange: e.id,
                planted: p.clone(),
                reached,
            }
        })
        .collect()
}

/// Declared tools the model asked for in a good answer that no call of the case reached.
fn bypassed(w: &Wire) -> Vec<(String, u64)> {
    let called = |name: &str| {
        w.exchanges.iter().any(|e| {
            matches!(&e.target, Target::Tool { name: n } if n == name)
                || e.mcp.as_ref().and_then(|m| m.called_tool()) == Some(name)
        })
    };
    let mut out: Vec<(String, u64)> = vec![];
    for e in w.exchanges.iter().filter(|e| good_llm(e)) {
        for name in &e.llm_tool_calls {
            let declared = w.declared.iter().any(|d| d == name);
            if declared && !called(name) && !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), e.id));
            }
        }
    }
    out
}

/// An LLM answer the agent could act on: complete, 2xx, no fault applied to it.
fn good_llm(e: &Exchange) -> bool {
    let ok = matches!(&e.outcome, Outcome::Response { response, body: BodyEnd::Complete }
        if (200..300).contains(&response.status));
    matches!(e.target, Target::Llm { .. }) && ok && e.fault.as_ref().is_none_or(|f| !f.applied)
}

#[path = "trace_reach.rs"]
mod reach;

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
