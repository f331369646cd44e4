//! The OTLP exporter (opentelemetry-otlp: gRPC over tonic, or HTTP/protobuf over hyper
//! with rustls), with the settings' endpoint, headers and timeout, no retry, and the
//! `service.name` resource. `task` feeds it.

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanExporter as _;

use super::settings::Settings;
use super::spec::Protocol;

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
            let client = super::http_client::client(settings)?;
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
