//! What the span tests share: exchanges as the journal hands them over, their bodies, a
//! handle whose queue the test reads, and attribute look-ups.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;
use tokio::sync::mpsc;

use super::exchange_span::Pending;
use super::settings::Settings;
use super::spec::Protocol;
use super::task::Item;
use super::{Otel, Shared};
use crate::exchange::tests_support::exchange;
use crate::exchange::{Exchange, FaultKind, FaultRecord, Provider, Target};
use crate::tape::{Bodies, Event};
use crate::telemetry::Metrics;

pub(super) const CHAT: &str = "https://api.openai.com/v1/chat/completions";

pub(super) fn settings(content: bool) -> Settings {
    Settings {
        endpoint: "http://127.0.0.1:4317".into(),
        protocol: Protocol::Grpc,
        headers: vec![],
        content,
        timeout: Duration::from_secs(1),
        linger: Duration::from_millis(100),
    }
}

pub(super) fn shared(content: bool, metrics: &Metrics) -> Arc<Shared> {
    Arc::new(Shared {
        settings: settings(content),
        metrics: metrics.clone(),
        down: Default::default(),
    })
}

/// A handle whose queue the test reads.
pub(super) fn otel(seed: u64) -> (Otel, mpsc::Receiver<Item>, Metrics) {
    let (tx, rx) = mpsc::channel(64);
    let metrics = Metrics::new();
    (Otel::with(tx, settings(false), &metrics, seed), rx, metrics)
}

pub(super) fn bodies(request: &str, response: &str) -> Arc<Bodies> {
    Arc::new(Bodies {
        request: Bytes::from(request.to_string()),
        response: vec![Event {
            at_ms: 1.0,
            data: Bytes::from(response.to_string()),
        }],
        truncated: false,
    })
}

/// A chat completion with `gpt-x` that answered 12 + 40 tokens.
pub(super) fn chat() -> (Exchange, Arc<Bodies>) {
    let ex = exchange(
        Target::Llm {
            provider: Provider::Openai,
        },
        CHAT,
    )
    .timed(1_700_000_000_000, 250.0)
    .usage(Some(12), Some(40), "gpt-x-2025")
    .build();
    let b = bodies(
        r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
        r#"{"model":"gpt-x-2025","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}],"usage":{"prompt_tokens":12,"completion_tokens":40}}"#,
    );
    (ex, b)
}

pub(super) fn rate_limit(rule: &str) -> FaultRecord {
    FaultRecord {
        rule: rule.into(),
        mode: FaultKind::RateLimit,
        applied: true,
        note: None,
    }
}

pub(super) fn pending(ex: Exchange, bodies: Option<Arc<Bodies>>, hold: bool) -> Pending {
    Pending {
        exchange: Arc::new(ex),
        bodies,
        parent: None,
        seed: 5,
        hold,
    }
}

/// The value of `key` on `span`, if it has it.
pub(super) fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

pub(super) fn text(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}
