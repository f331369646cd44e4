//! One exchange as a span, after the GenAI semantic conventions: `chat`, `embeddings` or
//! `execute_tool` with the provider, models, tokens, finish reasons and `error.type`; MCP
//! calls with `mcp.method.name` and `gen_ai.tool.name`; plain HTTP attributes for the
//! rest; each fault or attack that fired as a `flakestorm.fault` event; with `content`,
//! what it said (`said`). Its parent is the agent's own span when the request carried the
//! agent's `traceparent`, else the case's (or the run's, or none), with a link to the case
//! then. Times are the exchange's own.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use super::ids;
use crate::exchange::{Exchange, FaultRecord, Outcome, Provider, Target};
use crate::llm::answer_fields;
use crate::tape::Bodies;

/// An exchange waiting in the queue for its span.
pub(super) struct Pending {
    pub exchange: Arc<Exchange>,
    pub bodies: Option<Arc<Bodies>>,
    /// The run's span when exactly one run is under way (an exchange of none of its cases
    /// goes under it).
    pub parent: Option<SpanContext>,
    /// The seed its faults were drawn with.
    pub seed: u64,
    /// It belongs to a case under way: held until its run ends, to go under its case.
    pub hold: bool,
}

/// An exchange's span without its place in a tree: all its attributes read (the bodies
/// are not kept past this), its faults as records (their events are made with the seed
/// of the run that placed it). What the export task holds for a case under way.
pub(super) struct Prepared {
    span: SpanData,
    /// Its parent is the agent's span (`traceparent`): its case only gets a link.
    agent: bool,
    faults: Vec<(&'static str, FaultRecord)>,
    /// Approximate bytes it holds (`hold` bounds them).
    pub weight: usize,
}

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

impl Pending {
    /// The span, read from the exchange and its bodies (their text kept only with
    /// `content`).
    pub(super) fn prepare(&self, content: bool) -> Prepared {
        let ex = &self.exchange;
        let start = at(ex.timings.started_at_ms);
        let end = start + Duration::from_secs_f64(ex.timings.total_ms.max(0.0) / 1000.0);
        let agent = ids::agent_parent(ex);
        let (trace_id, parent_span_id) = match &agent {
            Some(a) => (a.trace_id(), a.span_id()),
            None => (ids::trace_id(), SpanId::INVALID),
        };
        let mut attrs = Attributes::new(ex, self.bodies.as_deref());
        attrs.all(content);
        let status = match &attrs.error {
            Some(e) => Status::error(e.clone()),
            None => Status::Unset,
        };
        let fired = ex.fault.iter().map(|f| ("fault", f.clone()));
        let faults: Vec<_> = fired
            .chain(ex.attacks.iter().map(|a| ("attack", a.clone())))
            .collect();
        let span = SpanData {
            span_context: ids::context(trace_id, ids::span_id()),
            parent_span_id,
            parent_span_is_remote: agent.is_some(),
            span_kind: SpanKind::Client,
            name: attrs.name.clone().into(),
            start_time: start,
            end_time: end,
            attributes: attrs.out,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: super::scope(),
        };
        let weight = weight(&span, &faults);
        Prepared {
            span,
            agent: agent.is_some(),
            faults,
            weight,
        }
    }

    /// The span where the queue put it: under the run, or a root.
    pub(super) fn build(&self, content: bool) -> SpanData {
        self.prepare(content)
            .placed(self.parent.as_ref(), self.seed)
    }
}

impl Prepared {
    /// The span under `parent` (a case's or the run's span), in its trace; an exchange
    /// under the agent's own span stays there, linked to `parent`. Its fault events carry
    /// `seed`.
    pub(super) fn placed(self, parent: Option<&SpanContext>, seed: u64) -> SpanData {
        let mut span = self.span;
        match (parent, self.agent) {
            (Some(p), true) => span.links.links.push(Link::with_context(p.clone())),
            (Some(p), false) => {
                span.span_context = ids::context(p.trace_id(), span.span_context.span_id());
                span.parent_span_id = p.span_id();
            }
            (None, _) => {}
        }
        let start = span.start_time;
        for (kind, f) in &self.faults {
            span.events.events.push(fault_event(kind, f, seed, start));
        }
        span
    }
}

/// What a prepared span holds in memory, about: its struct, its attributes' keys and
/// values, its fault records.
fn weight(span: &SpanData, faults: &[(&'static str, FaultRecord)]) -> usize {
    let value = |v: &Value| {
        if let Value::String(s) = v {
            return s.as_str().len();
        }
        if let Value::Array(Array::String(list)) = v {
            return list.iter().map(|s| s.as_str().len() + 24).sum();
        }
        0
    };
    let attrs: usize = span
        .attributes
        .iter()
        .map(|kv| std::mem::size_of::<KeyValue>() + kv.key.as_str().len() + value(&kv.value))
        .sum();
    let records: usize = faults
        .iter()
        .map(|(_, f)| {
            std::mem::size_of::<FaultRecord>()
                + f.rule.len()
                + f.note.as_ref().map_or(0, String::len)
        })
        .sum();
    std::mem::size_of::<Prepared>() + span.name.len() + attrs + records
}

/// `flakestorm.fault`: what fired, by which rule, in which mode, with which seed, and
/// whether what it made reached the agent.
fn fault_event(kind: &'static str, f: &FaultRecord, seed: u64, at: SystemTime) -> Event {
    let mut attrs = vec![
        KeyValue::new("flakestorm.fault.kind", kind),
        KeyValue::new("flakestorm.fault.rule", f.rule.clone()),
        KeyValue::new("flakestorm.fault.mode", f.mode.as_str()),
        KeyValue::new("flakestorm.fault.seed", seed.to_string()),
        KeyValue::new("flakestorm.fault.reached_agent", f.applied),
    ];
    if let Some(note) = &f.note {
        attrs.push(KeyValue::new("flakestorm.fault.note", note.clone()));
    }
    Event::new("flakestorm.fault", at, attrs, 0)
}

/// The semantic conventions' provider names.
fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::Openai => "openai",
        Provider::Anthropic => "anthropic",
        Provider::Gemini => "gcp.gemini",
        Provider::Ollama => "ollama",
    }
}

/// A span's attributes as they are gathered, with its name and error.
struct Attributes<'a> {
    ex: &'a Exchange,
    bodies: Option<&'a Bodies>,
    out: Vec<KeyValue>,
    name: String,
    error: Option<String>,
}

impl<'a> Attributes<'a> {
    fn new(ex: &'a Exchange, bodies: Option<&'a Bodies>) -> Self {
        Attributes {
            ex,
            bodies,
            out: Vec::with_capacity(16),
            name: ex.request.method.clone(),
            error: None,
        }
    }

    fn add(&mut self, key: &'static str, value: impl Into<Value>) {
        self.out.push(KeyValue::new(key, value));
    }

    fn all(&mut self, content: bool) {
        self.http();
        let response = self
            .bodies
            .map(|b| answer_fields::documents(&b.response_bytes()))
            .unwrap_or_default();
        self.error_type(&response);
        match self.ex.target.clone() {
            Target::Llm { provider } => self.gen_ai("chat", provider, &response),
            Target::Embeddings { provider } => self.gen_ai("embeddings", provider, &response),
            Target::Tool { name } => self.tool(&name),
            Target::Other => {}
        }
        if let Some(m) = &self.ex.mcp {
            self.mcp(m);
        }
        if content {
            self.content();
        }
    }

    fn http(&mut self) {
        let ex = self.ex;
        self.add("http.request.method", ex.request.method.clone());
        self.add("url.full", ex.request.url.clone());
        if let Ok(uri) = ex.request.url.parse::<http::Uri>() {
            if let Some(host) = uri.host() {
                self.add("server.address", host.to_string());
            }
            if let Some(port) = uri.port_u16().or(match uri.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                _ => None,
            }) {
                self.add("server.port", i64::from(port));
            }
        }
        if let Some(status) = ex.status() {
            self.add("http.response.status_code", i64::from(status));
        }
        self.add("flakestorm.exchange.id", ex.id as i64);
        self.add("flakestorm.target", ex.target.kind());
        if let Some(t) = &ex.trace_id {
            self.add("flakestorm.case.trace_id", t.clone());
        }
    }

    /// `error.type`: flakestorm's own error's name (a fault's closed connection, an
    /// unreachable upstream), else on a 4xx/5xx answer the provider's code, else the status.
    fn error_type(&mut self, response: &[serde_json::Value]) {
        let error = match &self.ex.outcome {
            Outcome::Error { error, .. } => Some(error.kind.name().to_string()),
            Outcome::Response { response: head, .. } if head.status >= 400 => {
                Some(answer_fields::error_code(response).unwrap_or_else(|| head.status.to_string()))
            }
            Outcome::Response { .. } => None,
        };
        if let Some(e) = &error {
            self.add("error.type", e.clone());
        }
        self.error = error;
    }

    fn gen_ai(&mut self, op: &'static str, provider: Provider, response: &[serde_json::Value]) {
        self.add("gen_ai.operation.name", op);
        self.add("gen_ai.provider.name", provider_name(provider));
        let request = self
            .bodies
            .map(|b| answer_fields::documents(&b.request))
            .unwrap_or_default();
        let model = answer_fields::request_model(&self.ex.request.url, &request);
        if let Some(m) = &model {
            self.add("gen_ai.request.model", m.clone());
        }
        self.name = match &model {
            Some(m) => format!("{op} {m}"),
            None => op.to_string(),
        };
        let usage = self.ex.usage.as_ref();
        let answered = usage
            .and_then(|u| u.model.clone())
            .or_else(|| answer_fields::response_model(response));
        if let Some(m) = answered {
            self.add("gen_ai.response.model", m);
        }
        if let Some(n) = usage.and_then(|u| u.input_tokens) {
            self.add("gen_ai.usage.input_tokens", n as i64);
        }
        if let Some(n) = usage.and_then(|u| u.output_tokens) {
            self.add("gen_ai.usage.output_tokens", n as i64);
        }
        let reasons = answer_fields::finish_reasons(response);
        if !reasons.is_empty() {
            let list: Vec<StringValue> = reasons.into_iter().map(StringValue::from).collect();
            self.add(
                "gen_ai.response.finish_reasons",
                Value::Array(Array::String(list)),
            );
        }
    }

    /// An MCP message: its method; a `tools/call` is `execute_tool` of the MCP tool it
    /// calls (not of the `tools:` entry the server is declared as), other methods
    /// (`initialize`, `tools/list`, …) execute no tool.
    fn mcp(&mut self, m: &crate::exchange::McpCall) {
        self.out.retain(|kv| {
            !matches!(
                kv.key.as_str(),
                "gen_ai.operation.name" | "gen_ai.tool.name"
            )
        });
        self.add("mcp.method.name", m.method.clone());
        let tool = m
            .tool
            .as_ref()
            .filter(|_| m.method == crate::exchange::TOOLS_CALL);
        if let Some(t) = tool {
            self.add("gen_ai.operation.name", "execute_tool");
            self.add("gen_ai.tool.name", t.clone());
        }
        self.name = match tool {
            Some(t) => format!("{} {t}", m.method),
            None => m.method.clone(),
        };
    }

    fn tool(&mut self, name: &str) {
        self.add("gen_ai.operation.name", "execute_tool");
        self.add("gen_ai.tool.name", name.to_string());
        self.name = format!("execute_tool {name}");
    }

    /// What was said (`content`), from the redacted bodies (`said`).
    fn content(&mut self) {
        if let Some(b) = self.bodies {
            self.out.extend(super::said::said(self.ex, b));
        }
    }
}

#[cfg(test)]
#[path = "exchange_span_tests.rs"]
mod tests;
