//! `telemetry:` (config.md): read with its paths, the endpoint and headers checked, so a
//! daemon never starts exporting to something it cannot reach for a reason the file shows.

use serde_json::Value;

use super::ConfigError;
use super::de::section;
use crate::otel::spec::{TelemetrySpec, endpoint_problem, header_problem};

pub(super) fn telemetry_section(v: Value, errors: &mut Vec<ConfigError>) -> TelemetrySpec {
    let spec: TelemetrySpec = section(v, "telemetry", errors).unwrap_or_default();
    if let Some(otlp) = &spec.otlp {
        if let Some(why) = otlp.endpoint.as_deref().and_then(endpoint_problem) {
            errors.push(ConfigError::new("telemetry.otlp.endpoint", why));
        }
        for (name, value) in &otlp.headers {
            if let Some(why) = header_problem(name, value) {
                errors.push(ConfigError::new(
                    format!("telemetry.otlp.headers.{name}"),
                    why,
                ));
            }
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(yaml: serde_json::Value) -> Vec<String> {
        let mut errors = vec![];
        telemetry_section(yaml, &mut errors);
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn bad_values_are_named_by_their_path() {
        let errs = problems(serde_json::json!({"otlp": {
            "endpoint": "localhost:4317", "protocol": "http/json",
            "headers": {"bad name": "x"}, "sample": 1}}));
        let all = errs.join("\n");
        assert!(all.contains("telemetry.otlp.protocol"), "{all}");
        assert!(all.contains("telemetry.otlp.sample"), "{all}");
        let errs = problems(serde_json::json!({"otlp": {
            "endpoint": "localhost:4317", "headers": {"bad name": "x"}}}));
        let all = errs.join("\n");
        assert!(all.contains("telemetry.otlp.endpoint"), "{all}");
        assert!(all.contains("telemetry.otlp.headers.bad name"), "{all}");
    }

    #[test]
    fn a_good_section_reads_whole() {
        let mut errors = vec![];
        let spec = telemetry_section(
            serde_json::json!({"otlp": {"endpoint": "http://127.0.0.1:4318",
                "protocol": "http/protobuf", "headers": {"x-api-key": "k"}, "content": true}}),
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let otlp = spec.otlp.unwrap();
        assert!(otlp.content);
        assert_eq!(otlp.headers["x-api-key"], "k");
    }
}
