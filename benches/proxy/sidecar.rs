//! The sidecar figures (issue #30): nginx as the origin, in its own process on the clients'
//! core, the proxy alone on the other core, intercepted HTTPS keep-alive. It measures the
//! proxy's CPU per request against nginx's, throughput against direct, the added p50 at
//! c = 1, and the proxy's RSS after a c = 200 burst and after a long idle.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::Settings;
use crate::bench::Memory;
use crate::client::{Conn, Endpoint, Proto, build_client, client_tls};
use crate::format::{added_ms, mark, mib, resident_parts, table};
use crate::load::{Row, RunStats, Scenario, compare, run_load};
use crate::machine::{Resident, proc_status_kib, resident};
use crate::nginx::Nginx;
use crate::origins::OriginCounts;
use crate::proxy_process::ProxyProcess;

/// The goals.
const GOAL_RATIO: f64 = 0.9;
const GOAL_CPU_RATIO: f64 = 1.5;
const GOAL_ADDED_P50_MS: f64 = 0.1;
const GOAL_IDLE_RSS_KIB: u64 = 15 * 1024;
const GOAL_AFTER_IDLE_KIB: u64 = 20 * 1024;
/// The burst and the idle after it, as the issue measured them.
const BURST_CONCURRENCY: usize = 200;

pub struct Sidecar {
    c16: Row,
    c1: Row,
    burst: RunStats,
    burst_len: Duration,
    idle_len: Duration,
    after_idle_kib: Option<u64>,
    after_idle_parts: Option<Resident>,
}

/// Runs the sidecar scenarios (the proxy is already pinned to its own core).
pub async fn sidecar(settings: &Settings, root: &Path, proxy: &ProxyProcess) -> Result<Sidecar> {
    let nginx = Nginx::start(root, 0)?;
    let endpoint = |via_proxy: bool| -> Result<Endpoint> {
        let (tls, proxy_url) = match via_proxy {
            true => (client_tls(&proxy.ca_pem)?, Some(proxy.url())),
            false => (client_tls(&root.join("tests/fixtures/test-ca.pem"))?, None),
        };
        Ok(Endpoint {
            client: build_client(tls, proxy_url.as_deref(), Conn::KeepAlive)?,
            base: format!("https://localhost:{}", nginx.port),
            origin: std::sync::Arc::new(OriginCounts::default()),
            proxy_pid: proxy.pid,
            origin_pid: Some(nginx.pid),
            via_proxy,
        })
    };
    let (direct, proxied) = (endpoint(false)?, endpoint(true)?);
    let scenario = |concurrency| Scenario {
        proto: Proto::Https,
        conn: Conn::KeepAlive,
        concurrency,
    };
    eprintln!("sidecar (nginx origin, proxy on its own core):");
    let c16 = compare(settings, scenario(16), &direct, &proxied).await;
    let c1 = compare(settings, scenario(1), &direct, &proxied).await;
    let (burst_len, idle_len) = match settings.quick {
        false => (Duration::from_secs(20), Duration::from_secs(65)),
        true => (Duration::from_secs(1), Duration::from_secs(2)),
    };
    eprintln!(
        "  burst: c={BURST_CONCURRENCY} for {} s, then {} s idle",
        burst_len.as_secs(),
        idle_len.as_secs()
    );
    let burst = {
        let proxied = endpoint(true)?;
        run_load(&proxied, BURST_CONCURRENCY, burst_len).await
        // The clients (and their connections) are dropped here, as an agent that went quiet.
    };
    tokio::time::sleep(idle_len).await;
    Ok(Sidecar {
        c16,
        c1,
        burst,
        burst_len,
        idle_len,
        after_idle_kib: proc_status_kib(proxy.pid, "VmRSS"),
        after_idle_parts: resident(proxy.pid),
    })
}

fn us(d: Option<Duration>) -> String {
    d.map_or("n/a".into(), |d| format!("{:.1} µs", d.as_secs_f64() * 1e6))
}

impl Sidecar {
    /// The table, measured; `memory.idle_kib` is the proxy's RSS 1 s after it
    /// started.
    pub fn render(&self, out: &mut String, memory: &Memory) {
        let idle_kib = memory.idle_kib;
        let _ = writeln!(
            out,
            "### Sidecar figures (issue #30)\n\nnginx {} (one worker, no master, HTTPS with the \
             fixture certificate, the same 1 KiB body) pinned with the bench's clients to CPU 0, \
             flakestorm alone on CPU 1 (when the machine has two cores); intercepted HTTPS \
             keep-alive, median of the runs. CPU per request is each process's user + system \
             time over the requests served: the proxy's in the proxied runs, nginx's in the \
             direct runs. The burst runs c = {BURST_CONCURRENCY} through the proxy for {} s; \
             its clients are then closed and the proxy left idle for {} s.\n",
            crate::nginx::Nginx::version(),
            self.burst_len.as_secs(),
            self.idle_len.as_secs(),
        );
        let (d, p) = (&self.c16.direct, &self.c16.proxied);
        let ratio = p.rps / d.rps;
        let cpu = match (p.proxy_cpu_per_req, d.origin_cpu_per_req) {
            (Some(proxy), Some(origin)) => Some(proxy.as_secs_f64() / origin.as_secs_f64()),
            _ => None,
        };
        let added = added_ms(self.c1.proxied.p50, self.c1.direct.p50);
        let ok = |errors: u64, met: bool| mark(errors == 0 && met).to_string();
        let errors = p.errors.count + self.c1.proxied.errors.count;
        let rows = vec![
            vec![
                "intercepted HTTPS throughput ÷ direct to nginx (c = 16)".into(),
                format!("{ratio:.2}× ({:.0} vs {:.0} req/s)", p.rps, d.rps),
                format!("≥ {GOAL_RATIO}×"),
                ok(p.errors.count, ratio >= GOAL_RATIO),
            ],
            vec![
                "proxy CPU per intercepted request ÷ nginx's CPU per request (c = 16)".into(),
                format!(
                    "{} ({} vs {})",
                    cpu.map_or("n/a".into(), |c| format!("{c:.2}×")),
                    us(p.proxy_cpu_per_req),
                    us(d.origin_cpu_per_req)
                ),
                format!("≤ {GOAL_CPU_RATIO}×"),
                ok(p.errors.count, cpu.is_some_and(|c| c <= GOAL_CPU_RATIO)),
            ],
            vec![
                "… of which in the kernel (system time), proxy vs nginx".into(),
                format!(
                    "{} vs {}",
                    us(p.proxy_sys_per_req),
                    us(d.origin_sys_per_req)
                ),
                "".into(),
                "".into(),
            ],
            vec![
                "added p50 at c = 1".into(),
                format!("{added:+.3} ms"),
                format!("≤ +{GOAL_ADDED_P50_MS} ms"),
                ok(errors, added <= GOAL_ADDED_P50_MS),
            ],
            vec![
                "RSS idle after start".into(),
                format!("{}{}", mib(idle_kib), resident_parts(memory.idle_parts)),
                format!("≤ {} MiB", GOAL_IDLE_RSS_KIB / 1024),
                ok(0, idle_kib.is_some_and(|k| k <= GOAL_IDLE_RSS_KIB)),
            ],
            vec![
                format!("RSS peak during the c = {BURST_CONCURRENCY} burst, then after the idle"),
                format!(
                    "{}, then {}{}",
                    mib(self.burst.proxy_rss_peak_kib),
                    mib(self.after_idle_kib),
                    resident_parts(self.after_idle_parts)
                ),
                format!("≤ {} MiB after idle", GOAL_AFTER_IDLE_KIB / 1024),
                ok(
                    self.burst.errors.count,
                    self.after_idle_kib
                        .is_some_and(|k| k <= GOAL_AFTER_IDLE_KIB),
                ),
            ],
        ];
        table(out, "figure | measured | goal | met", false, rows);
        let _ = writeln!(
            out,
            "Burst: {} requests at {:.0} req/s, {} errors.\n",
            self.burst.ok, self.burst.rps, self.burst.errors.count
        );
    }
}
