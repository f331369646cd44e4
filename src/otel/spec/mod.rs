//! `telemetry:` as users write it (docs/config.md): where OTLP spans go and whether they
//! carry prompt and answer text. The vocabulary only, below `config`, which reads it and
//! checks the endpoint and headers with their paths; `otel` resolves it against the
//! standard `OTEL_EXPORTER_OTLP_*` variables and exports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `telemetry:` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySpec {
    /// OTLP span export; absent: only the `OTEL_EXPORTER_OTLP_*` variables turn it on.
    pub otlp: Option<OtlpSpec>,
}

/// `telemetry.otlp`: each field given here wins over its `OTEL_EXPORTER_OTLP_*` variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OtlpSpec {
    /// The collector's base URL (`http://localhost:4317` for gRPC, `http://localhost:4318`
    /// for HTTP, where `/v1/traces` is appended), as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: Option<String>,
    pub protocol: Option<Protocol>,
    /// Sent with every export (an API key: write it as `${VAR}`).
    pub headers: BTreeMap<String, String>,
    /// Prompt and answer bodies on LLM spans, redacted as the journal redacts.
    pub content: bool,
}

/// How spans travel to the collector (`OTEL_EXPORTER_OTLP_PROTOCOL`'s values; `http/json`
/// is not offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    #[serde(rename = "grpc")]
    Grpc,
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }

    /// A variable's value, if it is one this build speaks.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            _ => None,
        }
    }
}

/// What is wrong with an endpoint URL, if anything: it must be `http` or `https` with a
/// host, and carry no credentials (they would show in errors; use `headers`).
pub fn endpoint_problem(url: &str) -> Option<String> {
    let uri: http::Uri = match url.parse() {
        Ok(u) => u,
        Err(e) => return Some(format!("not a URL ({e})")),
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Some("expected an http:// or https:// URL".into());
    }
    if uri.host().is_none_or(str::is_empty) {
        return Some("the URL has no host".into());
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Some("credentials in the URL are not allowed: send them in headers".into());
    }
    // The endpoint is logged and named in reports: a query could carry a key.
    if uri.query().is_some() {
        return Some("a query in the URL is not allowed: send keys in headers".into());
    }
    None
}

/// What is wrong with a header, if anything.
pub fn header_problem(name: &str, value: &str) -> Option<String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!("`{name}` is not a valid header name"));
    }
    if http::HeaderValue::from_str(value).is_err() {
        return Some(format!("the value of `{name}` is not a valid header value"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_urls_with_a_host_and_no_credentials() {
        assert_eq!(endpoint_problem("http://127.0.0.1:4317"), None);
        assert_eq!(endpoint_problem("https://otlp.example/api/otel"), None);
        let with_key = "https://otlp.example/v1/traces?api_key=s3cret";
        for bad in [
            "localhost:4317",
            "ftp://x",
            "http://u:p@x:1",
            "not a url",
            with_key,
        ] {
            assert!(endpoint_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn protocols_read_as_the_variables_spell_them() {
        let p: Protocol = serde_json::from_str("\"http/protobuf\"").unwrap();
        assert_eq!(p, Protocol::HttpProtobuf);
        assert_eq!(Protocol::parse(" grpc "), Some(Protocol::Grpc));
        assert_eq!(Protocol::parse("http/json"), None);
    }
}
