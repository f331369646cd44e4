//! The report's "Proxy problems observed" section: failed requests, a crash or unclean
//! exit, and anything the proxy logged at `RUST_LOG=warn`.

use std::fmt::Write as _;

use crate::bench::Outcome;
use crate::format::proto_name;
use crate::proxy_process::{ProxyProcess, StopReport};

pub fn render_problems(
    out: &mut String,
    outcome: &Outcome,
    proxy: &ProxyProcess,
    stop: &StopReport,
) {
    let mut problems = Vec::new();
    for r in &outcome.rows {
        for (side, s) in [("direct", &r.direct), ("proxied", &r.proxied)] {
            for (message, n) in &s.errors.kinds {
                problems.push(format!("{} {side}: {n}× `{message}`", r.scenario.name()));
            }
        }
    }
    for s in &outcome.sse {
        for (side, sum) in [("direct", &s.direct), ("proxied", &s.proxied)] {
            for (message, n) in &sum.errors.kinds {
                let proto = proto_name(s.proto);
                problems.push(format!("SSE {proto} {side}: {n}× `{message}`"));
            }
        }
    }
    if let Some(status) = outcome.crashed {
        problems.push(format!("flakestorm exited during the benchmark: {status}"));
    }
    match stop.status {
        Some(status) if status.success() => {}
        Some(status) => problems.push(format!("flakestorm exited with {status} after SIGTERM")),
        None => problems.push(format!(
            "flakestorm (pid {}) did not exit within {} ms of SIGTERM (killed)",
            proxy.pid,
            stop.after.as_millis()
        )),
    }
    // `flakestorm: ...` lines on stderr are the binary's own status messages (such as the
    // shutdown notice); anything else is log output, which `RUST_LOG=warn` limits to
    // warnings and errors.
    let (status_lines, log_lines): (Vec<&str>, Vec<&str>) = stop
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .partition(|l| l.starts_with("flakestorm: "));
    if !log_lines.is_empty() {
        let mut item = format!(
            "{} log lines at `RUST_LOG=warn`, first ones:",
            log_lines.len()
        );
        for line in log_lines.iter().take(5) {
            let line: String = line.chars().take(300).collect();
            let _ = write!(item, "\n  - `{line}`");
        }
        problems.push(item);
    }
    let _ = writeln!(out, "### Proxy problems observed\n");
    if problems.is_empty() {
        let status = stop.status.map_or("n/a".into(), |s| s.to_string());
        let _ = writeln!(
            out,
            "None: no failed or wrong responses, no log output at `RUST_LOG=warn`; {status} \
             {} ms after SIGTERM.",
            stop.after.as_millis()
        );
    }
    for p in problems {
        let _ = writeln!(out, "- {p}");
    }
    if !status_lines.is_empty() {
        let _ = writeln!(out, "\nStatus messages flakestorm printed to stderr:\n");
        for line in status_lines.iter().take(5) {
            let _ = writeln!(out, "- `{line}`");
        }
    }
}
