//! Formatting shared by the progress lines and the report: numbers as table cells, and
//! markdown tables.

use std::fmt::Write as _;
use std::time::Duration;

use crate::client::Proto;
use crate::stats::Summary;

pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

pub fn added_ms(proxied: Duration, direct: Duration) -> f64 {
    (proxied.as_secs_f64() - direct.as_secs_f64()) * 1e3
}

pub fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

/// " (anonymous A MiB, file-backed F MiB)", or nothing when unknown.
pub fn resident_parts(r: Option<crate::machine::Resident>) -> String {
    r.map_or(String::new(), |r| {
        format!(
            " (anonymous {:.1}, file-backed {:.1})",
            r.anon as f64 / 1024.0,
            r.file as f64 / 1024.0
        )
    })
}

pub fn proto_name(proto: Proto) -> &'static str {
    match proto {
        Proto::Http => "plain HTTP",
        Proto::Https => "HTTPS (intercepted)",
    }
}

pub fn mark(ok: bool) -> &'static str {
    if ok { "✅" } else { "❌" }
}

pub fn rps_cell(s: &Summary) -> String {
    format!("{:.0} ({:.0}–{:.0})", s.rps, s.rps_range.0, s.rps_range.1)
}

pub fn pair<T: std::fmt::Display>(direct: T, proxied: T) -> String {
    format!("{direct} / {proxied}")
}

/// Appends a markdown table; the columns after the first are right-aligned if `numbers`.
pub fn table(
    out: &mut String,
    header: &str,
    numbers: bool,
    rows: impl IntoIterator<Item = Vec<String>>,
) {
    let align = if numbers { "--:|" } else { "---|" };
    let _ = writeln!(out, "| {header} |");
    let _ = writeln!(out, "|---|{}", align.repeat(header.matches('|').count()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

pub fn fmt_dur(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}
