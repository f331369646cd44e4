//! Where spans go: `telemetry.otlp` resolved against the standard variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `_PROTOCOL`, `_HEADERS`, `_TIMEOUT`, each also as
//! `OTEL_EXPORTER_OTLP_TRACES_*`, which wins over the general one), and
//! `OTEL_BSP_SCHEDULE_DELAY` for how long spans gather before an export. A field the config
//! gives wins over its variable; headers from both are sent, the config's winning on a
//! name both have. Export is on when the config has `telemetry.otlp` or a variable names
//! an endpoint. Pure: the environment comes in as a lookup.

use std::time::Duration;

use super::spec::{OtlpSpec, Protocol, endpoint_problem, header_problem};

/// Export settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where spans are sent: the gRPC endpoint, or the whole HTTP URL (`…/v1/traces`).
    pub endpoint: String,
    pub protocol: Protocol,
    /// Never logged: they may hold an API key.
    pub headers: Vec<(String, String)>,
    pub content: bool,
    /// Per export request.
    pub timeout: Duration,
    /// How long a ready span may wait for others to share its export request.
    pub linger: Duration,
}

/// Per export request, unless `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a span waits for others before its export, unless `OTEL_BSP_SCHEDULE_DELAY`
/// says otherwise: the Collector's batch processor's 200 ms rather than the SDKs' 5 s, so
/// a live `serve` shows spans at once, yet one request carries all a busy proxy made.
const DEFAULT_LINGER: Duration = Duration::from_millis(200);

/// The settings `spec` and the environment (`env`) make; `None` when neither turns export
/// on. A bad variable is an error naming it.
pub fn resolve(
    spec: Option<&OtlpSpec>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Settings>, String> {
    let var = |name: &str| -> Option<(String, String)> {
        let traces = name.replace("OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_");
        [traces, name.to_string()]
            .into_iter()
            .find_map(|n| env(&n).filter(|v| !v.trim().is_empty()).map(|v| (n, v)))
    };
    let env_endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT");
    if spec.is_none() && env_endpoint.is_none() {
        return Ok(None);
    }
    let protocol = match spec.and_then(|s| s.protocol) {
        Some(p) => p,
        None => match var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some((name, v)) => Protocol::parse(&v).ok_or_else(|| {
                format!(
                    "{name}: `{v}` is not a protocol flakestorm exports with (grpc, http/protobuf)"
                )
            })?,
            // The specification's default.
            None => Protocol::HttpProtobuf,
        },
    };
    let endpoint = match spec.and_then(|s| s.endpoint.clone()) {
        Some(base) => with_path(&base, protocol),
        None => match env_endpoint {
            // The signal's own variable is used as it is; the general one is a base.
            Some((name, v)) => {
                if let Some(why) = endpoint_problem(&v) {
                    return Err(format!("{name}: {why}"));
                }
                match name.contains("_TRACES_") {
                    true => v,
                    false => with_path(&v, protocol),
                }
            }
            None => with_path(default_endpoint(protocol), protocol),
        },
    };
    let mut headers = match var("OTEL_EXPORTER_OTLP_HEADERS") {
        Some((name, v)) => parse_headers(&v).map_err(|why| format!("{name}: {why}"))?,
        None => vec![],
    };
    if let Some(s) = spec {
        headers.retain(|(n, _)| !s.headers.keys().any(|k| k.eq_ignore_ascii_case(n)));
        headers.extend(s.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let timeout = match var("OTEL_EXPORTER_OTLP_TIMEOUT") {
        Some((name, v)) => match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => return Err(format!("{name}: `{v}` is not a timeout in milliseconds")),
        },
        None => DEFAULT_TIMEOUT,
    };
    let linger = match env("OTEL_BSP_SCHEDULE_DELAY").filter(|v| !v.trim().is_empty()) {
        Some(v) => match v.trim().parse::<u64>() {
            Ok(ms) => Duration::from_millis(ms),
            _ => {
                return Err(format!(
                    "OTEL_BSP_SCHEDULE_DELAY: `{v}` is not a delay in milliseconds"
                ));
            }
        },
        None => DEFAULT_LINGER,
    };
    Ok(Some(Settings {
        endpoint,
        protocol,
        headers,
        content: spec.is_some_and(|s| s.content),
        timeout,
        linger,
    }))
}

fn default_endpoint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Grpc => "http://localhost:4317",
        Protocol::HttpProtobuf => "http://localhost:4318",
    }
}

/// A base URL as the protocol wants it: gRPC as is, HTTP with `/v1/traces` appended.
fn with_path(base: &str, protocol: Protocol) -> String {
    match protocol {
        Protocol::Grpc => base.to_string(),
        Protocol::HttpProtobuf if base.trim_end_matches('/').ends_with("/v1/traces") => {
            base.to_string()
        }
        Protocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated by commas, values
/// percent-decoded (W3C baggage format, as the specification says).
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = vec![];
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err("expected name=value pairs separated by commas".into());
        };
        let name = name.trim().to_string();
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8_lossy()
            .into_owned();
        if let Some(why) = header_problem(&name, &value) {
            return Err(why);
        }
        out.push((name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn nothing_set_means_no_export() {
        assert_eq!(resolve(None, &env(&[])).unwrap(), None);
    }

    #[test]
    fn the_general_endpoint_is_a_base_the_traces_one_is_whole() {
        let e = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otel/")]);
        let s = resolve(None, &e).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://c:4318/otel/v1/traces");
        assert_eq!(s.protocol, Protocol::HttpProtobuf);
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/x"),
        ]);
        assert_eq!(resolve(None, &e).unwrap().unwrap().endpoint, "http://t:9/x");
    }

    #[test]
    fn the_config_wins_over_the_variables_and_headers_merge() {
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=from%20env,x-team=a"),
        ]);
        let spec = OtlpSpec {
            endpoint: Some("http://cfg:4317".into()),
            protocol: Some(Protocol::Grpc),
            headers: [("X-Key".to_string(), "cfg".to_string())].into(),
            content: true,
        };
        let s = resolve(Some(&spec), &e).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://cfg:4317");
        assert_eq!(s.protocol, Protocol::Grpc);
        assert_eq!(
            s.headers,
            [
                ("x-team".into(), "a".into()),
                ("X-Key".into(), "cfg".into())
            ]
        );
        assert!(s.content);
    }

    #[test]
    fn an_empty_section_exports_to_the_standard_local_collector() {
        let s = resolve(Some(&OtlpSpec::default()), &env(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(s.endpoint, "http://localhost:4318/v1/traces");
        assert!(!s.content);
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        assert_eq!(s.linger, DEFAULT_LINGER);
        let e = env(&[("OTEL_BSP_SCHEDULE_DELAY", "0")]);
        let s = resolve(Some(&OtlpSpec::default()), &e).unwrap().unwrap();
        assert_eq!(s.linger, Duration::ZERO, "0 sends each span at once");
    }

    #[test]
    fn bad_variables_are_named() {
        for (k, v) in [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
            ("OTEL_BSP_SCHEDULE_DELAY", "-5"),
        ] {
            let e = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1"), (k, v)]);
            let err = resolve(None, &e).unwrap_err();
            assert!(err.starts_with(k), "{err}");
        }
        let e = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:1")]);
        assert!(
            resolve(None, &e)
                .unwrap_err()
                .contains("OTEL_EXPORTER_OTLP_ENDPOINT")
        );
    }
}
