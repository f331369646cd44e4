//! Load runs: concurrent workers sending requests to one endpoint for a fixed time, and the
//! interleaved direct/proxied comparison of one scenario, repeated when the machine is noisy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::client::{Conn, Endpoint, Proto, error_chain};
use crate::format::{ms, rps_cell};
use crate::machine::{CpuSnapshot, proc_cpu, proc_status_kib, proc_sys};
use crate::origins::BODY;
use crate::stats::{Errors, Summary, percentile, summarize};
use crate::{MAX_REPEATS, NOISY_RUN, RSS_SAMPLE_EVERY, Settings};

async fn fetch_json(client: &reqwest::Client, url: &str) -> Result<(), String> {
    let response = client.get(url).send().await.map_err(|e| error_chain(&e))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| error_chain(&e))?;
    if status != reqwest::StatusCode::OK {
        let text = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
        return Err(format!("status {status}: {text}"));
    }
    if body != *BODY {
        return Err(format!("wrong body ({} bytes)", body.len()));
    }
    Ok(())
}

pub struct RunStats {
    pub rps: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub ok: u64,
    pub errors: Errors,
    pub origin_conns: u64,
    pub origin_h2_requests: u64,
    pub proxy_cpu: Option<Duration>,
    pub origin_cpu: Option<Duration>,
    /// The system (kernel) part of `proxy_cpu` and `origin_cpu`.
    pub proxy_sys: Option<Duration>,
    pub origin_sys: Option<Duration>,
    pub proxy_rss_peak_kib: Option<u64>,
    /// Share of the machine's CPU other processes used during the run.
    pub others: f64,
}

async fn worker(client: reqwest::Client, url: Arc<str>, deadline: Instant) -> (Vec<u64>, Errors) {
    let mut latencies = Vec::with_capacity(4096);
    let mut errors = Errors::default();
    while Instant::now() < deadline {
        let started = Instant::now();
        match fetch_json(&client, &url).await {
            Ok(()) => latencies.push(started.elapsed().as_nanos() as u64),
            Err(e) => {
                errors.add(e);
                // Do not spin if every request fails at once.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    (latencies, errors)
}

/// Samples the proxy's VmRSS until `done`, returning the peak.
async fn sample_rss(pid: u32, done: Arc<AtomicBool>) -> u64 {
    let mut peak = 0;
    while !done.load(Ordering::Relaxed) {
        peak = peak.max(proc_status_kib(pid, "VmRSS").unwrap_or(0));
        tokio::time::sleep(RSS_SAMPLE_EVERY).await;
    }
    peak
}

pub async fn run_load(endpoint: &Endpoint, concurrency: usize, duration: Duration) -> RunStats {
    let url: Arc<str> = format!("{}/v1/chat/completions", endpoint.base).into();
    let conns_before = endpoint.origin.conns.load(Ordering::Relaxed);
    let h2_before = endpoint.origin.h2_requests.load(Ordering::Relaxed);
    let pid = endpoint.proxy_pid;
    let cpu_before = proc_cpu(pid);
    let origin_before = endpoint.origin_pid.and_then(proc_cpu);
    let sys_before = (proc_sys(pid), endpoint.origin_pid.and_then(proc_sys));
    let measured: Vec<u32> = std::iter::once(pid).chain(endpoint.origin_pid).collect();
    let machine_before = CpuSnapshot::take(&measured);
    let done = Arc::new(AtomicBool::new(false));
    let sampler = endpoint
        .via_proxy
        .then(|| tokio::spawn(sample_rss(pid, done.clone())));
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| tokio::spawn(worker(endpoint.client.clone(), url.clone(), deadline)))
        .collect();
    let mut latencies = Vec::new();
    let mut errors = Errors::default();
    for w in workers {
        let (l, e) = w.await.expect("load worker panicked");
        latencies.extend(l);
        errors.merge(e);
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let proxy_rss_peak_kib = match sampler {
        Some(s) => Some(s.await.expect("sampler panicked")),
        None => None,
    };
    let proxy_cpu = match (cpu_before, proc_cpu(pid)) {
        (Some(before), Some(after)) if endpoint.via_proxy => Some(after.saturating_sub(before)),
        _ => None,
    };
    let since = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    let origin_cpu = since(origin_before, endpoint.origin_pid.and_then(proc_cpu));
    let proxy_sys = since(sys_before.0, proc_sys(pid)).filter(|_| endpoint.via_proxy);
    let origin_sys = since(sys_before.1, endpoint.origin_pid.and_then(proc_sys));
    let others = match (machine_before, CpuSnapshot::take(&measured)) {
        (Some(before), Some(after)) => before.others_until(&after),
        _ => f64::NAN,
    };
    latencies.sort_unstable();
    RunStats {
        rps: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        ok: latencies.len() as u64,
        errors,
        origin_conns: endpoint.origin.conns.load(Ordering::Relaxed) - conns_before,
        origin_h2_requests: endpoint.origin.h2_requests.load(Ordering::Relaxed) - h2_before,
        proxy_cpu,
        origin_cpu,
        proxy_sys,
        origin_sys,
        proxy_rss_peak_kib,
        others,
    }
}

pub struct Scenario {
    pub proto: Proto,
    pub conn: Conn,
    pub concurrency: usize,
}

impl Scenario {
    pub fn name(&self) -> String {
        let proto = match self.proto {
            Proto::Http => "HTTP",
            Proto::Https => "HTTPS (intercepted)",
        };
        let conn = match self.conn {
            Conn::KeepAlive => "keep-alive",
            Conn::NewPerRequest => "new conn/request",
        };
        format!("{proto} {conn} c={}", self.concurrency)
    }
}

pub struct Row {
    pub scenario: Scenario,
    pub direct: Summary,
    pub proxied: Summary,
    /// Pairs of runs discarded and repeated because other processes disturbed them.
    pub repeated: usize,
}

/// Warm both sides up, then alternate direct and proxied runs (flipping who goes first).
pub async fn compare(
    settings: &Settings,
    scenario: Scenario,
    direct: &Endpoint,
    proxied: &Endpoint,
) -> Row {
    let c = scenario.concurrency;
    run_load(direct, c, settings.warmup).await;
    run_load(proxied, c, settings.warmup).await;
    let (mut d, mut p, mut repeated) = (Vec::new(), Vec::new(), 0);
    for i in 0.. {
        if d.len() == settings.runs {
            break;
        }
        let (dr, pr) = if i % 2 == 0 {
            let dr = run_load(direct, c, settings.run).await;
            (dr, run_load(proxied, c, settings.run).await)
        } else {
            let pr = run_load(proxied, c, settings.run).await;
            (run_load(direct, c, settings.run).await, pr)
        };
        // A pair disturbed by other processes is run again (a limited number of times);
        // one with errors is always kept.
        let others = dr.others.max(pr.others);
        let clean = dr.errors.count == 0 && pr.errors.count == 0;
        if others > NOISY_RUN && clean && repeated < MAX_REPEATS {
            eprintln!(
                "  other processes used {:.0} % of the CPU during a pair of runs: repeating it",
                others * 100.0
            );
            repeated += 1;
            continue;
        }
        d.push(dr);
        p.push(pr);
    }
    let row = Row {
        scenario,
        direct: summarize(d),
        proxied: summarize(p),
        repeated,
    };
    eprintln!(
        "{:<40} direct {} req/s p50 {} ms | proxied {} req/s p50 {} ms | errors {}/{}",
        row.scenario.name(),
        rps_cell(&row.direct),
        ms(row.direct.p50),
        rps_cell(&row.proxied),
        ms(row.proxied.p50),
        row.direct.errors.count,
        row.proxied.errors.count,
    );
    row
}
