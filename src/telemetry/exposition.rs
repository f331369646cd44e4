//! `/metrics` in the format its reader asked for: OpenMetrics when the `Accept` header
//! names it (Prometheus asks for it first), else the Prometheus text format 0.0.4 that
//! `curl`, `promtool check metrics` and older scrapers read. The same series either way;
//! the older format names a counter's HELP and TYPE by its sample's `_total` name and has
//! no `# EOF`, `# UNIT` or `info` type.

/// The OpenMetrics content type `/metrics` answers with when it is asked for.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format's content type.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header asks for OpenMetrics (a quality of 0 refuses it).
pub fn wants_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

/// OpenMetrics text (as `prometheus_client` encodes it) in the Prometheus text format.
pub fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // A family's HELP waits for its TYPE, which says whether the name gains `_total`.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush_help(&mut out, help.take(), None);
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                k => (name.to_string(), k),
            };
            let family = rest.split(' ').next().unwrap_or_default();
            flush_help(&mut out, help.take(), Some((family, &name)));
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        if sample_name(line).ends_with("_created") {
            continue;
        }
        // An exemplar (` # {…} value`) has no place in the older format.
        let sample = line.split_once(" # ").map_or(line, |(s, _)| s);
        out.push_str(sample);
        out.push('\n');
    }
    flush_help(&mut out, help, None);
    out
}

/// Writes a pending HELP, under the name its TYPE gave its family (`renamed`).
fn flush_help(out: &mut String, help: Option<(&str, &str)>, renamed: Option<(&str, &str)>) {
    let Some((name, text)) = help else { return };
    let name = match renamed {
        Some((family, new)) if family == name => new,
        _ => name,
    };
    out.push_str(&format!("# HELP {name} {text}\n"));
}

fn sample_name(line: &str) -> &str {
    line.split(['{', ' ']).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OM: &str = "# HELP fs_cases Cases judged.\n# TYPE fs_cases counter\n\
        fs_cases_total{verdict=\"pass\"} 2\nfs_cases_created 1.7e9\n\
        # HELP fs_up Whether it is up.\n# TYPE fs_up gauge\nfs_up 1\n\
        # HELP fs_lat Latency.\n# TYPE fs_lat histogram\n# UNIT fs_lat seconds\n\
        fs_lat_bucket{le=\"+Inf\"} 3 # {trace=\"a\"} 0.5\nfs_lat_sum 1.5\nfs_lat_count 3\n\
        # HELP fs_build Build.\n# TYPE fs_build info\nfs_build_info{version=\"1\"} 1\n# EOF\n";

    #[test]
    fn counters_are_named_by_their_samples_and_openmetrics_only_lines_go() {
        let text = prometheus_text(OM);
        assert_eq!(
            text,
            "# HELP fs_cases_total Cases judged.\n# TYPE fs_cases_total counter\n\
             fs_cases_total{verdict=\"pass\"} 2\n\
             # HELP fs_up Whether it is up.\n# TYPE fs_up gauge\nfs_up 1\n\
             # HELP fs_lat Latency.\n# TYPE fs_lat histogram\n\
             fs_lat_bucket{le=\"+Inf\"} 3\nfs_lat_sum 1.5\nfs_lat_count 3\n\
             # HELP fs_build_info Build.\n# TYPE fs_build_info gauge\n\
             fs_build_info{version=\"1\"} 1\n"
        );
    }

    #[test]
    fn openmetrics_is_served_only_to_who_asks_for_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(prometheus));
        assert!(!wants_openmetrics("*/*"), "curl");
        assert!(!wants_openmetrics("text/plain"));
        assert!(!wants_openmetrics(
            "application/openmetrics-text;q=0, text/plain"
        ));
    }
}
