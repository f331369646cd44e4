//! The markdown report: header and method, then the targets, throughput and latency, SSE,
//! and memory sections of an `Outcome`.

use std::fmt::Write as _;

use crate::bench::Outcome;
use crate::client::{Conn, Proto};
use crate::format::{added_ms, fmt_dur, mark, mib, ms, pair, proto_name, rps_cell, table};
use crate::load::Row;
use crate::machine::{command_output, machine};
use crate::problems::render_problems;
use crate::proxy_process::{ProxyProcess, StopReport};
use crate::{
    COMMAND, MAX_REPEATS, NOISY_RUN, RSS_SAMPLE_EVERY, SSE_EVENTS, SSE_GAP, Settings,
    TARGET_ADDED_P50_MS, TARGET_IDLE_RSS_KIB, TARGET_RATIO, TARGET_SSE_MS,
};

/// The binary measured: `FLAKESTORM_BIN` (scripts/bench.sh sets the `dist` build), or the
/// bench profile's own build.
fn binary() -> String {
    match std::env::var("FLAKESTORM_BIN") {
        Ok(bin) => {
            let size = std::fs::metadata(&bin).map_or(0, |m| m.len());
            format!("`{bin}` ({:.0} MB)", size as f64 / 1e6)
        }
        Err(_) => "the bench profile's build (`FLAKESTORM_BIN` unset)".into(),
    }
}

impl Outcome {
    fn row(&self, proto: Proto, conn: Conn, concurrency: usize) -> Option<&Row> {
        self.rows.iter().find(|r| {
            let s = &r.scenario;
            s.proto == proto && s.conn == conn && s.concurrency == concurrency
        })
    }

    pub fn render(
        &self,
        settings: &Settings,
        proxy: &ProxyProcess,
        stop: &StopReport,
        pinned: bool,
    ) -> String {
        let mut out = String::new();
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let _ = writeln!(
            out,
            "## Proxy overhead: direct vs through flakestorm (loopback)\n\n\
             - Command: `{COMMAND}` (`cargo bench --bench proxy` measuring the binary below; \
             source: `benches/proxy/`)\n\
             - Binary: {}\n\
             - Date: {date}\n\
             - Machine: {}\n\
             - Method: {} origins in the bench process (hyper, TCP_NODELAY; HTTPS origin with \
             the `tests/fixtures` certificate, ALPN h2 + http/1.1) on their own tokio \
             multi-thread runtime, the reqwest clients (forced to HTTP/1.1) on another, so a \
             direct request crosses threads as it would between separate processes; \
             flakestorm as a separate process (`flakestorm serve` of the binary above, `RUST_LOG=warn`). \
             Proxied plain HTTP uses absolute-form requests, proxied HTTPS uses CONNECT and is \
             intercepted (the client trusts only the flakestorm CA). Each measurement: {} \
             warm-up, then {} runs of {} per side, direct and proxied interleaved; the tables \
             show the **median** of the runs. Latency is per request, including reading the \
             body. Whole benchmark: {:.0} s; other processes used {:.1} % of the machine's \
             CPU meanwhile (from `/proc/stat`, hypervisor steal included).\n",
            binary(),
            machine(),
            match pinned {
                true =>
                    "flakestorm alone on CPU 1, the bench process (origins, clients) and \
                         nginx on CPU 0, as a sidecar has a core of its own (so a proxied run \
                         has both cores and a direct one only CPU 0: proxied ÷ direct ratios \
                         are not comparable with unpinned runs);",
                false => "not pinned (fewer than 2 cores);",
            },
            fmt_dur(settings.warmup),
            settings.runs,
            fmt_dur(settings.run),
            self.duration.as_secs_f64(),
            self.others * 100.0,
        );
        if self.others > 0.05 {
            let _ = writeln!(
                out,
                "> ⚠️ Other processes kept the machine {:.0} % busy during this run, so the \
                 numbers below are disturbed; rerun on a quiet machine.\n",
                self.others * 100.0
            );
        }
        self.render_targets(&mut out);
        if let Some(sidecar) = &self.sidecar {
            sidecar.render(&mut out, &self.memory);
        }
        self.render_load(&mut out);
        self.render_sse(&mut out);
        self.render_memory(&mut out);
        render_problems(&mut out, self, proxy, stop);
        out
    }

    fn render_targets(&self, out: &mut String) {
        let mut rows = Vec::new();
        let mut target = |what: String, measured: String, mitmproxy: &str, ok: bool| {
            rows.push(vec![what, measured, mitmproxy.into(), mark(ok).into()]);
        };
        if let Some(r) = self.row(Proto::Https, Conn::KeepAlive, 16) {
            let ratio = r.proxied.rps / r.direct.rps;
            target(
                format!("intercepted HTTPS keep-alive c=16 ≥ {TARGET_RATIO}× direct throughput"),
                format!(
                    "{ratio:.2}× ({:.0} vs {:.0} req/s)",
                    r.proxied.rps, r.direct.rps
                ),
                "531 req/s",
                ratio >= TARGET_RATIO && r.proxied.errors.count == 0,
            );
        }
        for proto in [Proto::Https, Proto::Http] {
            if let Some(r) = self.row(proto, Conn::KeepAlive, 1) {
                let added = added_ms(r.proxied.p50, r.direct.p50);
                target(
                    format!(
                        "added p50 at c=1 ≤ {TARGET_ADDED_P50_MS} ms, {}",
                        proto_name(proto)
                    ),
                    format!("{added:+.3} ms"),
                    "+1.9 ms",
                    added <= TARGET_ADDED_P50_MS && r.proxied.errors.count == 0,
                );
            }
        }
        for s in &self.sse {
            let added = added_ms(s.proxied.first_byte, s.direct.first_byte);
            target(
                format!(
                    "SSE first byte within {TARGET_SSE_MS} ms of direct, {}",
                    proto_name(s.proto)
                ),
                format!("{added:+.3} ms"),
                "held back until the stream ended",
                added.abs() <= TARGET_SSE_MS && s.proxied.errors.count == 0,
            );
        }
        let idle = self.memory.idle_kib;
        target(
            format!("proxy idle RSS ≤ {} MiB", TARGET_IDLE_RSS_KIB / 1024),
            mib(idle),
            "72 MiB",
            idle.is_some_and(|k| k <= TARGET_IDLE_RSS_KIB),
        );
        let _ = writeln!(out, "### Targets\n");
        table(
            out,
            "target | measured | mitmproxy 12 (issue) | met",
            false,
            rows,
        );
    }

    fn render_load(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Throughput and latency (1 KiB JSON response)\n\n\
             Req/s: median of the runs (lowest–highest run). Errors: failed or wrong responses, \
             direct / proxied.\n"
        );
        let header = "scenario | direct req/s | proxied req/s | proxied/direct | direct p50 ms \
                      | proxied p50 ms | added p50 ms | direct p99 ms | proxied p99 ms | errors";
        let rows = self.rows.iter().map(|r| {
            let (d, p) = (&r.direct, &r.proxied);
            vec![
                r.scenario.name(),
                rps_cell(d),
                rps_cell(p),
                format!("{:.2}", p.rps / d.rps),
                ms(d.p50),
                ms(p.p50),
                format!("{:+.3}", added_ms(p.p50, d.p50)),
                ms(d.p99),
                ms(p.p99),
                pair(d.errors.count, p.errors.count),
            ]
        });
        table(out, header, true, rows);

        let _ = writeln!(
            out,
            "Proxy cost: CPU time (user + system, `/proc/<pid>/stat`) the proxy process used \
             per proxied request; origin TCP connections accepted per request, direct / proxied \
             (below 1 on the proxied side: the proxy reuses upstream connections); the HTTP \
             version the proxied requests reached the origin with (the clients always speak \
             HTTP/1.1; the HTTPS origin also offers h2); the proxy's \
             peak VmRSS, sampled every {} ms during the proxied runs; the highest share of the \
             machine's CPU other processes used during one of the scenario's runs (a few % is \
             noise; a pair of runs above {:.0} % is run again, at most {MAX_REPEATS} times).\n",
            RSS_SAMPLE_EVERY.as_millis(),
            NOISY_RUN * 100.0,
        );
        let header = "scenario | proxy CPU µs/request | origin conns/request \
                      | proxy → origin | proxy peak RSS | other processes' CPU";
        let rows = self.rows.iter().map(|r| {
            let (d, p) = (&r.direct, &r.proxied);
            let cpu = p.proxy_cpu_per_req;
            let mut others = format!("{:.1} %", d.others_max.max(p.others_max) * 100.0);
            if r.repeated > 0 {
                let _ = write!(others, " ({} noisy pairs repeated)", r.repeated);
            }
            vec![
                r.scenario.name(),
                cpu.map_or("n/a".into(), |c| format!("{:.0}", c.as_secs_f64() * 1e6)),
                pair(
                    format!("{:.3}", d.origin_conns_per_req),
                    format!("{:.3}", p.origin_conns_per_req),
                ),
                match p.origin_h2_share {
                    share if share > 0.99 => "h2".into(),
                    share if share < 0.01 => "HTTP/1.1".into(),
                    share => format!("{:.0} % h2", share * 100.0),
                },
                mib(p.proxy_rss_peak_kib),
                others,
            ]
        });
        table(out, header, true, rows);
    }

    fn render_sse(&self, out: &mut String) {
        let samples = self
            .sse
            .first()
            .map_or(0, |s| s.direct.samples + s.direct.errors.count as usize);
        let _ = writeln!(
            out,
            "### SSE time to first byte\n\nThe origin sends the headers and the first event at \
             once and the other {} events {} ms later; keep-alive connection; median of {samples} \
             requests per side, interleaved. \"Coalesced\": responses whose first body chunk \
             already held the whole stream, direct / proxied.\n",
            SSE_EVENTS - 1,
            SSE_GAP.as_millis(),
        );
        let header = "over | direct headers ms | proxied headers ms | direct first byte ms \
                      | proxied first byte ms | added ms | direct whole stream ms \
                      | proxied whole stream ms | coalesced | errors";
        let rows = self.sse.iter().map(|s| {
            let (d, p) = (&s.direct, &s.proxied);
            vec![
                proto_name(s.proto).into(),
                ms(d.headers),
                ms(p.headers),
                ms(d.first_byte),
                ms(p.first_byte),
                format!("{:+.3}", added_ms(p.first_byte, d.first_byte)),
                ms(d.total),
                ms(p.total),
                pair(d.coalesced, p.coalesced),
                pair(d.errors.count, p.errors.count),
            ]
        });
        table(out, header, true, rows);
    }

    fn render_memory(&self, out: &mut String) {
        let m = &self.memory;
        let c64_peak = self.rows.iter().filter(|r| r.scenario.concurrency == 64);
        let c64_peak = c64_peak.filter_map(|r| r.proxied.proxy_rss_peak_kib).max();
        let rows = [
            (
                "start until both listeners reported",
                format!("{} ms", ms(self.startup)),
            ),
            ("VmRSS when ready", mib(m.at_ready_kib)),
            ("VmRSS idle, 1 s after ready", mib(m.idle_kib)), // IDLE_SETTLE
            ("peak VmRSS sampled during the c=64 runs", mib(c64_peak)),
            ("VmHWM (peak RSS) at the end", mib(m.hwm_kib)),
            (
                "VmRSS idle after the load, clients closed (includes the in-memory journal: \
                 at most `journal.max_bytes`, 2 MiB by default, while no run reads it)",
                mib(m.after_load_kib),
            ),
        ];
        let _ = writeln!(out, "### Proxy memory and startup\n");
        table(
            out,
            "measure | value",
            true,
            rows.map(|(k, v)| vec![k.into(), v]),
        );
    }
}
