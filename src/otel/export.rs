//! The OTLP exporter (opentelemetry-otlp: gRPC over tonic, or HTTP/protobuf over hyper
//! with rustls) and the one task that feeds it: it takes what the queue holds, builds the
//! spans, sends them in one request, and counts what the collector accepted or what was
//! lost. A collector that is down or slow costs this task time and the queue its room,
//! never the proxy: a failed export is dropped (no retry) and counted, and says so once.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
use tokio::sync::mpsc;

use super::settings::Settings;
use super::spec::Protocol;

/// Spans sent in one export request at most.
const MAX_BATCH: usize = 512;

/// What the queue carries.
pub(super) enum Item {
    Span(Box<SpanData>),
    /// An exchange, built into its span by the export task (off the request path).
    Exchange(Box<super::exchange_span::Pending>),
    /// Answered once everything queued before it was exported (or dropped).
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The exporter `settings` ask for, with `service.name` `flakestorm`.
pub(super) fn exporter(settings: &Settings) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let built = match settings.protocol {
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(settings.timeout)
            .with_metadata(metadata(settings)?)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
            .build(),
        Protocol::HttpProtobuf => {
            let client = super::http_client::client(settings);
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(settings.timeout)
                .with_http_client(client)
                .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                .build()
        }
    };
    let mut exporter = built.map_err(|e| e.to_string())?;
    let resource = Resource::builder_empty()
        .with_service_name("flakestorm")
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    exporter.set_resource(&resource);
    Ok(exporter)
}

/// The headers as gRPC metadata (lower-case names).
fn metadata(
    settings: &Settings,
) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, String> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &settings.headers {
        let key = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("header `{name}`: not a valid name"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("header `{name}`: not a valid value"))?;
        headers.insert(key, value);
    }
    Ok(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(headers))
}

/// The export task: runs until every sender is gone.
pub(super) async fn run(
    mut rx: mpsc::Receiver<Item>,
    exporter: opentelemetry_otlp::SpanExporter,
    context: Arc<super::Shared>,
) {
    let mut warned = false;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut waiting = vec![];
    while let Some(first) = rx.recv().await {
        take(first, &mut batch, &mut waiting, &context);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(item) => take(item, &mut batch, &mut waiting, &context),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            let n = batch.len();
            let spans = std::mem::replace(&mut batch, Vec::with_capacity(MAX_BATCH));
            let deadline = context.settings.timeout + Duration::from_secs(1);
            let result = tokio::time::timeout(deadline, exporter.export(spans)).await;
            report(result, n, &context, &mut warned);
        }
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

fn take(item: Item, batch: &mut Vec<SpanData>, waiting: &mut Vec<Flush>, s: &super::Shared) {
    match item {
        Item::Span(span) => batch.push(*span),
        Item::Exchange(p) => batch.push(p.build(s.settings.content)),
        Item::Flush(done) => waiting.push(done),
    }
}

type Flush = tokio::sync::oneshot::Sender<()>;

/// Counts an export's `n` spans as exported or dropped; warns of the first failure.
fn report(
    result: Result<opentelemetry_sdk::error::OTelSdkResult, tokio::time::error::Elapsed>,
    n: usize,
    s: &super::Shared,
    warned: &mut bool,
) {
    let why = match result {
        Ok(Ok(())) => {
            s.metrics.otlp_exported(n);
            return;
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {} ms", s.settings.timeout.as_millis()),
    };
    s.metrics.otlp_dropped("export_failed", n);
    if !std::mem::replace(warned, true) {
        tracing::warn!(
            "OTLP export to {} ({}) failed: {why}; spans are dropped while it fails \
             (flakestorm_otlp_dropped_spans_total), the proxy and runs are not affected",
            s.settings.endpoint,
            s.settings.protocol.as_str()
        );
    } else {
        tracing::debug!("OTLP export failed again: {why}");
    }
}
