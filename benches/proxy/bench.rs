//! The whole benchmark: which scenarios run in what order, and the outcome they add up to
//! (load rows, SSE rows, the proxy's memory, whether it crashed, how noisy the machine was).

use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::client::{Conn, Endpoint, Proto, build_client, client_tls};
use crate::load::{Row, Scenario, compare};
use crate::machine::{CpuSnapshot, Resident, proc_status_kib, resident};
use crate::nginx::Nginx;
use crate::origins::{origin_tls, start_origin};
use crate::proxy_process::ProxyProcess;
use crate::sidecar::{Sidecar, sidecar};
use crate::sse::{SseRow, compare_sse};
use crate::{IDLE_SETTLE, Settings};

pub struct Memory {
    pub at_ready_kib: Option<u64>,
    pub idle_kib: Option<u64>,
    pub idle_parts: Option<Resident>,
    pub after_load_kib: Option<u64>,
    pub hwm_kib: Option<u64>,
}

pub struct Outcome {
    pub rows: Vec<Row>,
    pub sse: Vec<SseRow>,
    /// The sidecar figures, when nginx is installed.
    pub sidecar: Option<Sidecar>,
    pub memory: Memory,
    pub startup: Duration,
    pub crashed: Option<ExitStatus>,
    pub duration: Duration,
    /// Share of the machine's CPU other processes used over the whole benchmark.
    pub others: f64,
}

pub async fn bench(
    settings: &Settings,
    root: &Path,
    origin_runtime: &tokio::runtime::Handle,
    proxy: &mut ProxyProcess,
) -> Result<Outcome> {
    let started = Instant::now();
    let machine_before = CpuSnapshot::take(&[proxy.pid]);
    let at_ready_kib = proc_status_kib(proxy.pid, "VmRSS");
    tokio::time::sleep(IDLE_SETTLE).await;
    let idle_kib = proc_status_kib(proxy.pid, "VmRSS");
    let idle_parts = resident(proxy.pid);

    let http = start_origin(origin_runtime, None)?;
    let https = start_origin(origin_runtime, Some(origin_tls(root)?))?;
    let direct_tls = client_tls(&root.join("tests/fixtures/test-ca.pem"))?;
    let proxy_tls = client_tls(&proxy.ca_pem)?;
    let (proxy_url, proxy_pid) = (proxy.url(), proxy.pid);
    let endpoint = |proto: Proto, via_proxy: bool, conn: Conn| -> Result<Endpoint> {
        let origin = if proto == Proto::Http { &http } else { &https };
        let base = match proto {
            Proto::Http => format!("http://{}", origin.addr),
            Proto::Https => format!("https://localhost:{}", origin.addr.port()),
        };
        let (tls, proxy_arg) = match via_proxy {
            true => (proxy_tls.clone(), Some(proxy_url.as_str())),
            false => (direct_tls.clone(), None),
        };
        Ok(Endpoint {
            client: build_client(tls, proxy_arg, conn)?,
            base,
            origin: origin.counts.clone(),
            proxy_pid,
            origin_pid: None,
            via_proxy,
        })
    };

    let mut rows = Vec::new();
    let mut sse = Vec::new();
    let protos = match settings.sidecar_only {
        true => vec![],
        false => vec![Proto::Http, Proto::Https],
    };
    for proto in protos {
        let direct = endpoint(proto, false, Conn::KeepAlive)?;
        let proxied = endpoint(proto, true, Conn::KeepAlive)?;
        for concurrency in [1, 16, 64] {
            let conn = Conn::KeepAlive;
            let scenario = Scenario {
                proto,
                conn,
                concurrency,
            };
            rows.push(compare(settings, scenario, &direct, &proxied).await);
        }
        sse.push(compare_sse(settings, proto, &direct, &proxied).await);
        let conn = Conn::NewPerRequest;
        let scenario = Scenario {
            proto,
            conn,
            concurrency: 16,
        };
        let (direct, proxied) = (endpoint(proto, false, conn)?, endpoint(proto, true, conn)?);
        rows.push(compare(settings, scenario, &direct, &proxied).await);
        if let Some(status) = proxy.exited() {
            bail!("flakestorm exited during the benchmark: {status}");
        }
    }
    // All clients are dropped by now; give the proxy a moment to close its side.
    tokio::time::sleep(IDLE_SETTLE).await;
    let after_load_kib = proc_status_kib(proxy.pid, "VmRSS");
    let sidecar = match Nginx::available() {
        true => Some(sidecar(settings, root, proxy).await?),
        false => {
            eprintln!("sidecar figures skipped: nginx is not installed (apt install nginx-light)");
            None
        }
    };
    let memory = Memory {
        at_ready_kib,
        idle_kib,
        idle_parts,
        after_load_kib,
        hwm_kib: proc_status_kib(proxy.pid, "VmHWM"),
    };
    Ok(Outcome {
        rows,
        sse,
        sidecar,
        memory,
        startup: proxy.startup,
        crashed: proxy.exited(),
        duration: started.elapsed(),
        others: match (machine_before, CpuSnapshot::take(&[proxy.pid])) {
            (Some(before), Some(after)) => before.others_until(&after),
            _ => f64::NAN,
        },
    })
}
