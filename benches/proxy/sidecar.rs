//! The sidecar figures (issue #30): nginx as the origin, in its own process on the clients'
//! core, the proxy alone on the other core, intercepted HTTPS keep-alive. It measures the
//! proxy's CPU per request against nginx's, throughput against direct, the added p50 at
//! c = 1, and the proxy's RSS after a c = 200 burst and after a long idle. The same figures
//! for nginx as a TLS-terminating reverse proxy on the proxy's core are the reference: what
//! the same work costs a proxy long tuned for it, in the same placement, in the same run.

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
use crate::nginx::{Nginx, Role};
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
    /// The reference proxy's rows: its "proxied" side is nginx as a reverse proxy.
    reference_c16: Row,
    reference_c1: Row,
    burst: RunStats,
    burst_len: Duration,
    idle_len: Duration,
    after_idle_kib: Option<u64>,
    after_idle_parts: Option<Resident>,
}

/// How the bench's clients reach the origin.
#[derive(Clone, Copy)]
enum Via {
    Direct,
    Flakestorm,
    Reference,
}

/// Runs the sidecar scenarios (the proxy is already pinned to its own core).
pub async fn sidecar(settings: &Settings, root: &Path, proxy: &ProxyProcess) -> Result<Sidecar> {
    let nginx = Nginx::start(root, 0, Role::Origin)?;
    let origin_port = nginx.port;
    let reference = Nginx::start(
        root,
        proxy.cpu.unwrap_or(1),
        Role::ReverseProxy { origin_port },
    )?;
    let (reference_port, reference_pid) = (reference.port, reference.pid);
    let fixtures_ca = root.join("tests/fixtures/test-ca.pem");
    let endpoint = |via: Via| -> Result<Endpoint> {
        let (tls, proxy_url, port, proxy_pid) = match via {
            Via::Direct => (client_tls(&fixtures_ca)?, None, origin_port, proxy.pid),
            Via::Flakestorm => {
                let tls = client_tls(&proxy.ca_pem)?;
                (tls, Some(proxy.url()), origin_port, proxy.pid)
            }
            // Reached as the origin is (it has the origin's certificate); its CPU per
            // request is counted as the proxy's.
            Via::Reference => (
                client_tls(&fixtures_ca)?,
                None,
                reference_port,
                reference_pid,
            ),
        };
        Ok(Endpoint {
            client: build_client(tls, proxy_url.as_deref(), Conn::KeepAlive)?,
            base: format!("https://localhost:{port}"),
            origin: std::sync::Arc::new(OriginCounts::default()),
            proxy_pid,
            origin_pid: Some(nginx.pid),
            via_proxy: !matches!(via, Via::Direct),
        })
    };
    let (direct, proxied) = (endpoint(Via::Direct)?, endpoint(Via::Flakestorm)?);
    let scenario = |concurrency| Scenario {
        proto: Proto::Https,
        conn: Conn::KeepAlive,
        concurrency,
    };
    eprintln!("sidecar (nginx origin, proxy on its own core):");
    let c16 = compare(settings, scenario(16), &direct, &proxied).await;
    let c1 = compare(settings, scenario(1), &direct, &proxied).await;
    eprintln!("reference (nginx as a TLS reverse proxy on the proxy's core):");
    let via_reference = endpoint(Via::Reference)?;
    let reference_c16 = compare(settings, scenario(16), &direct, &via_reference).await;
    let reference_c1 = compare(settings, scenario(1), &direct, &via_reference).await;
    // Not left on the proxy's core for the burst and the idle.
    drop((via_reference, reference));
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
        let proxied = endpoint(Via::Flakestorm)?;
        run_load(&proxied, BURST_CONCURRENCY, burst_len).await
        // The clients (and their connections) are dropped here, as an agent that went quiet.
    };
    tokio::time::sleep(idle_len).await;
    Ok(Sidecar {
        c16,
        c1,
        reference_c16,
        reference_c1,
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

/// One proxy's figures against direct, from its c = 16 and c = 1 rows.
struct Figures<'a> {
    c16: &'a Row,
    ratio: f64,
    cpu: Option<f64>,
    added: f64,
    errors: u64,
}

impl<'a> Figures<'a> {
    fn of(c16: &'a Row, c1: &Row) -> Self {
        let (d, p) = (&c16.direct, &c16.proxied);
        let cpu = match (p.proxy_cpu_per_req, d.origin_cpu_per_req) {
            (Some(proxy), Some(origin)) => Some(proxy.as_secs_f64() / origin.as_secs_f64()),
            _ => None,
        };
        Figures {
            c16,
            ratio: p.rps / d.rps,
            cpu,
            added: added_ms(c1.proxied.p50, c1.direct.p50),
            errors: p.errors.count + c1.proxied.errors.count,
        }
    }

    /// Its cells: throughput, CPU, kernel CPU, added p50 (errors said in the first).
    fn cells(&self) -> [String; 4] {
        let (d, p) = (&self.c16.direct, &self.c16.proxied);
        let errors = match self.errors {
            0 => String::new(),
            n => format!(", {n} errors"),
        };
        let cpu = self.cpu.map_or("n/a".into(), |c| format!("{c:.2}×"));
        [
            format!(
                "{:.2}× ({:.0} vs {:.0} req/s{errors})",
                self.ratio, p.rps, d.rps
            ),
            format!(
                "{cpu} ({} vs {})",
                us(p.proxy_cpu_per_req),
                us(d.origin_cpu_per_req)
            ),
            format!(
                "{} vs {}",
                us(p.proxy_sys_per_req),
                us(d.origin_sys_per_req)
            ),
            format!("{:+.3} ms", self.added),
        ]
    }
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
             direct runs. The reference is the same nginx as a TLS-terminating reverse proxy \
             on flakestorm's core, in front of the origin over a kept-alive, verified TLS \
             connection: the work an intercepting proxy does per request, measured the same \
             way in the same run. The burst runs c = {BURST_CONCURRENCY} through flakestorm \
             for {} s; its clients are then closed and the proxy left idle for {} s.\n",
            crate::nginx::Nginx::version(),
            self.burst_len.as_secs(),
            self.idle_len.as_secs(),
        );
        let ours = Figures::of(&self.c16, &self.c1);
        let reference = Figures::of(&self.reference_c16, &self.reference_c1);
        let ok = |errors: u64, met: bool| mark(errors == 0 && met).to_string();
        let met = [
            ok(ours.errors, ours.ratio >= GOAL_RATIO),
            ok(ours.errors, ours.cpu.is_some_and(|c| c <= GOAL_CPU_RATIO)),
            String::new(),
            ok(ours.errors, ours.added <= GOAL_ADDED_P50_MS),
        ];
        let names = [
            "HTTPS throughput through the proxy ÷ direct to nginx (c = 16)",
            "proxy CPU per request ÷ nginx's CPU per request (c = 16)",
            "… of which in the kernel (system time), proxy vs nginx",
            "added p50 at c = 1",
        ];
        let goals = [
            format!("≥ {GOAL_RATIO}×"),
            format!("≤ {GOAL_CPU_RATIO}×"),
            String::new(),
            format!("≤ +{GOAL_ADDED_P50_MS} ms"),
        ];
        let mut rows = Vec::new();
        for (i, (o, r)) in ours.cells().into_iter().zip(reference.cells()).enumerate() {
            rows.push(vec![
                names[i].into(),
                o,
                r,
                goals[i].clone(),
                met[i].clone(),
            ]);
        }
        rows.push(vec![
            "RSS idle after start".into(),
            format!("{}{}", mib(idle_kib), resident_parts(memory.idle_parts)),
            "".into(),
            format!("≤ {} MiB", GOAL_IDLE_RSS_KIB / 1024),
            ok(0, idle_kib.is_some_and(|k| k <= GOAL_IDLE_RSS_KIB)),
        ]);
        rows.push(vec![
            format!("RSS peak during the c = {BURST_CONCURRENCY} burst, then after the idle"),
            format!(
                "{}, then {}{}",
                mib(self.burst.proxy_rss_peak_kib),
                mib(self.after_idle_kib),
                resident_parts(self.after_idle_parts)
            ),
            "".into(),
            format!("≤ {} MiB after idle", GOAL_AFTER_IDLE_KIB / 1024),
            ok(
                self.burst.errors.count,
                self.after_idle_kib
                    .is_some_and(|k| k <= GOAL_AFTER_IDLE_KIB),
            ),
        ]);
        let header = "figure | flakestorm | reference: nginx as a reverse proxy | goal | met";
        table(out, header, false, rows);
        let _ = writeln!(
            out,
            "Burst: {} requests at {:.0} req/s, {} errors.\n",
            self.burst.ok, self.burst.rps, self.burst.errors.count
        );
    }
}
