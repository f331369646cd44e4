//! A run whose config asks for other OTLP export than the proxy it runs behind does: a
//! daemon exports where it was started to (one exporter, one queue, for every run and for
//! traffic of no run), so a run submitted to `/v1/runs` with a `telemetry.otlp` of its own
//! is told, in words that name endpoints and protocols but never headers' values.

use super::Otel;
use super::settings::{Settings, resolve};
use super::spec::TelemetrySpec;

/// Why this run's spans do not go where `run`'s `telemetry.otlp` says, given the
/// exporter of the proxy it runs behind (`daemon`, none when that exports nothing); none
/// when they do, or the run asks for nothing of its own.
pub fn run_asks_elsewhere(daemon: Option<&Otel>, run: &TelemetrySpec) -> Option<String> {
    let asked = run.otlp.as_ref()?;
    let env = |k: &str| std::env::var(k).ok();
    let wanted = match resolve(Some(asked), &env) {
        Ok(Some(s)) => s,
        Ok(None) | Err(_) => return None,
    };
    let note = differences(daemon.map(|o| &o.inner.shared.settings), &wanted)?;
    Some(format!(
        "this run's telemetry.otlp is not applied: {note}; the daemon exports every run's \
         spans where it was started to (restart it with this telemetry.otlp, or set it in \
         the daemon's config, docs/observability.md)"
    ))
}

fn where_to(s: &Settings) -> String {
    format!("{} ({})", s.endpoint, s.protocol.as_str())
}

/// How `wanted` differs from `have`, in a few words.
fn differences(have: Option<&Settings>, wanted: &Settings) -> Option<String> {
    let Some(have) = have else {
        return Some(format!(
            "it asks for spans at {}, but the daemon exports none",
            where_to(wanted)
        ));
    };
    let mut what = vec![];
    if (&have.endpoint, have.protocol) != (&wanted.endpoint, wanted.protocol) {
        what.push(format!(
            "it asks for spans at {}, the daemon sends them to {}",
            where_to(wanted),
            where_to(have)
        ));
    }
    let names = |s: &Settings| {
        let mut n: Vec<String> = s
            .headers
            .iter()
            .map(|(k, _)| k.to_ascii_lowercase())
            .collect();
        n.sort();
        n
    };
    if have.headers != wanted.headers {
        what.push(format!(
            "its headers ({}) are not the daemon's ({})",
            names(wanted).join(", "),
            names(have).join(", ")
        ));
    }
    if have.content != wanted.content {
        what.push(format!(
            "it asks for content: {}, the daemon's is {}",
            wanted.content, have.content
        ));
    }
    (!what.is_empty()).then(|| what.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otel::testing::settings;

    #[test]
    fn the_same_export_is_no_news_another_is_named_without_header_values() {
        let daemon = settings(false);
        assert_eq!(differences(Some(&daemon), &daemon), None);
        let mut other = settings(true);
        other.endpoint = "https://collector.example:4318/v1/traces".into();
        other.headers = vec![("Authorization".into(), "Basic c2VjcmV0".into())];
        let note = differences(Some(&daemon), &other).unwrap();
        assert!(
            note.contains("https://collector.example:4318/v1/traces (grpc)"),
            "{note}"
        );
        assert!(
            note.contains("the daemon sends them to http://127.0.0.1:4317 (grpc)"),
            "{note}"
        );
        assert!(
            note.contains("its headers (authorization)") && !note.contains("c2VjcmV0"),
            "{note}"
        );
        assert!(note.contains("content: true"), "{note}");
        let none = differences(None, &daemon).unwrap();
        assert!(none.contains("the daemon exports none"), "{none}");
    }

    #[test]
    fn a_run_without_telemetry_asks_for_nothing() {
        assert_eq!(run_asks_elsewhere(None, &TelemetrySpec::default()), None);
    }
}
