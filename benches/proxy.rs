//! Loopback benchmark: the same requests sent direct to an origin and through flakestorm.
//!
//! `cargo bench --bench proxy` starts in-process HTTP and HTTPS origins, runs the
//! `flakestorm` binary as a separate process (`flakestorm serve`), and measures in one run,
//! with direct and proxied measurements interleaved so machine noise hits both:
//!
//! * 1 KiB JSON responses over plain HTTP (absolute-form through the proxy) and HTTPS
//!   (CONNECT + TLS interception), keep-alive at concurrency 1/16/64 and a new connection
//!   per request at concurrency 16: req/s, p50, p99;
//! * SSE time to first body byte (the origin sends the first event at once, the rest later);
//! * the proxy's RSS idle and under load, and its CPU time per request.
//!
//! The results are printed as markdown and written into `docs/benchmarks.md` between the
//! `bench:proxy` markers. `cargo bench --bench proxy -- --quick` is a short smoke run that
//! writes nothing.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const COMMAND: &str = "cargo bench --bench proxy";
const DOCS_START: &str = "<!-- bench:proxy:start -->";
const DOCS_END: &str = "<!-- bench:proxy:end -->";
const BODY_LEN: usize = 1024;
const SSE_EVENTS: usize = 4;
/// Pause between the first SSE event and the rest of the stream.
const SSE_GAP: Duration = Duration::from_millis(100);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(20);
const IDLE_SETTLE: Duration = Duration::from_secs(1);
/// A pair of runs during which other processes used more of the machine's CPU than this is
/// repeated, at most `MAX_REPEATS` times per scenario.
const NOISY_RUN: f64 = 0.10;
const MAX_REPEATS: usize = 2;
/// Targets from the issue.
const TARGET_RATIO: f64 = 0.5;
const TARGET_ADDED_P50_MS: f64 = 0.15;
const TARGET_SSE_MS: f64 = 1.0;
const TARGET_IDLE_RSS_KIB: u64 = 15 * 1024;

/// The 1 KiB JSON body every non-SSE request gets.
static BODY: LazyLock<Bytes> = LazyLock::new(|| {
    let head = r#"{"id":"chatcmpl-bench","object":"chat.completion","model":"bench","content":""#;
    let tail = r#""}"#;
    let pad = "x".repeat(BODY_LEN - head.len() - tail.len());
    Bytes::from(format!("{head}{pad}{tail}"))
});

fn sse_event(i: usize) -> Bytes {
    Bytes::from(format!("data: {{\"n\":{i}}}\n\n"))
}

struct Settings {
    run: Duration,
    warmup: Duration,
    runs: usize,
    sse_samples: usize,
    write_docs: bool,
}

impl Settings {
    fn from_args() -> Self {
        if std::env::args().any(|a| a == "--quick") {
            Settings {
                run: Duration::from_millis(300),
                warmup: Duration::from_millis(100),
                runs: 1,
                sse_samples: 5,
                write_docs: false,
            }
        } else {
            Settings {
                run: Duration::from_secs(2),
                warmup: Duration::from_millis(300),
                runs: 3,
                sse_samples: 30,
                write_docs: true,
            }
        }
    }
}

fn main() -> Result<()> {
    // `cargo test --all-targets` runs bench targets without `--bench`: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("proxy bench: skipped (run it with `{COMMAND}`)");
        return Ok(());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let settings = Settings::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut proxy = ProxyProcess::start(root)?;
    let origin_runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("origin")
        .enable_all()
        .build()?;
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("client")
        .enable_all()
        .build()?;
    let origins = origin_runtime.handle();
    let outcome = client_runtime.block_on(bench(&settings, root, origins, &mut proxy));
    let stop = proxy.stop();
    for line in &stop.extra_stdout {
        eprintln!("flakestorm stdout: {line}");
    }
    let outcome = outcome.inspect_err(|_| eprintln!("flakestorm stderr:\n{}", stop.stderr))?;
    let report = outcome.render(&settings, &proxy, &stop);
    println!("\n{report}");
    if settings.write_docs {
        let path = write_docs(root, &report)?;
        eprintln!("wrote {}", path.display());
    } else {
        eprintln!("--quick: docs/benchmarks.md left unchanged");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Origins

struct Origin {
    addr: SocketAddr,
    counts: Arc<OriginCounts>,
}

/// What an origin has seen so far.
#[derive(Default)]
struct OriginCounts {
    /// TCP connections accepted.
    conns: AtomicU64,
    /// Requests that came over HTTP/2.
    h2_requests: AtomicU64,
}

type OriginBody = UnsyncBoxBody<Bytes, Infallible>;

async fn origin_handler(
    req: Request<Incoming>,
    counts: Arc<OriginCounts>,
) -> Result<Response<OriginBody>, Infallible> {
    if req.version() == hyper::Version::HTTP_2 {
        counts.h2_requests.fetch_add(1, Ordering::Relaxed);
    }
    let response = if req.uri().path() == "/sse" {
        let events = futures_util::stream::unfold(0, |i| async move {
            if i == SSE_EVENTS {
                return None;
            }
            if i == 1 {
                tokio::time::sleep(SSE_GAP).await;
            }
            Some((Ok(Frame::data(sse_event(i))), i + 1))
        });
        Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache")
            .body(StreamBody::new(events).boxed_unsync())
    } else {
        Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(BODY.clone()).boxed_unsync())
    };
    Ok(response.expect("static response parts are valid"))
}

/// Starts an origin on `runtime` (its own, so that the origin and the clients do not share
/// worker threads, as they would not if they were separate processes).
fn start_origin(runtime: &tokio::runtime::Handle, tls: Option<TlsAcceptor>) -> Result<Origin> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let origin = Origin {
        addr: listener.local_addr()?,
        counts: Arc::default(),
    };
    let counts = origin.counts.clone();
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    runtime.spawn(async move {
        let listener = TcpListener::from_std(listener).expect("registering the origin listener");
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    eprintln!("origin accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            };
            counts.conns.fetch_add(1, Ordering::Relaxed);
            let _ = tcp.set_nodelay(true);
            let (builder, tls, counts) = (builder.clone(), tls.clone(), counts.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| origin_handler(req, counts.clone()));
                match tls {
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                    }
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                }
            });
        }
    });
    Ok(origin)
}

fn origin_tls(root: &Path) -> Result<TlsAcceptor> {
    let fixtures = root.join("tests/fixtures");
    let certs = CertificateDer::pem_file_iter(fixtures.join("origin.pem"))?
        .collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(fixtures.join("origin.key"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

// ---------------------------------------------------------------------------------------
// The proxy process

struct ProxyProcess {
    child: Child,
    pid: u32,
    addr: SocketAddr,
    ca_pem: PathBuf,
    stderr_path: PathBuf,
    stdout_rx: mpsc::Receiver<String>,
    startup: Duration,
    _dir: tempfile::TempDir,
}

struct StopReport {
    status: Option<ExitStatus>,
    after: Duration,
    extra_stdout: Vec<String>,
    stderr: String,
}

impl ProxyProcess {
    fn start(root: &Path) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("flakestorm.yaml");
        let upstream_ca = root.join("tests/fixtures/test-ca.pem");
        let ca_dir = dir.path().join("certs");
        std::fs::write(
            &config,
            format!(
                "proxy:\n  listen: \"127.0.0.1:0\"\n  upstream_ca_file: \"{}\"\n\
                 control:\n  listen: \"127.0.0.1:0\"\nca:\n  dir: \"{}\"\n",
                upstream_ca.display(),
                ca_dir.display()
            ),
        )?;
        let stderr_path = dir.path().join("stderr.log");
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
            .arg("serve")
            .arg("-c")
            .arg(&config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?)
            .spawn()
            .context("spawning flakestorm")?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, stdout_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (mut proxy, mut control) = (None, None);
        let deadline = started + Duration::from_secs(30);
        while proxy.is_none() || control.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match stdout_rx.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => {
                    let _ = child.kill();
                    let status = child.wait().ok();
                    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                    bail!(
                        "flakestorm did not report both listeners ({e}; exit {status:?}); \
                         stderr:\n{stderr}"
                    );
                }
            };
            match parse_listening(&line) {
                Some(("proxy", addr)) => proxy = Some(addr),
                Some((_, addr)) => control = Some(addr),
                None => eprintln!("flakestorm stdout: {line}"),
            }
        }
        let startup = started.elapsed();
        let ca_pem = ca_dir.join("ca.pem");
        if !ca_pem.exists() {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "flakestorm is listening but {} does not exist",
                ca_pem.display()
            );
        }
        Ok(ProxyProcess {
            child,
            pid,
            addr: proxy.expect("loop ends when set"),
            ca_pem,
            stderr_path,
            stdout_rx,
            startup,
            _dir: dir,
        })
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then wait up to 10 s (SIGKILL after that).
    fn stop(&mut self) -> StopReport {
        let started = Instant::now();
        let mut status = self.exited();
        if status.is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .status();
            while status.is_none() && started.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
                status = self.exited();
            }
        }
        let after = started.elapsed();
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        StopReport {
            status,
            after,
            extra_stdout: self.stdout_rx.try_iter().collect(),
            stderr: std::fs::read_to_string(&self.stderr_path).unwrap_or_default(),
        }
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `flakestorm: (proxy|control) listening on (\S+)`
fn parse_listening(line: &str) -> Option<(&str, SocketAddr)> {
    let rest = line.strip_prefix("flakestorm: ")?;
    let (kind, addr) = rest.split_once(" listening on ")?;
    if !matches!(kind, "proxy" | "control") || addr.contains(char::is_whitespace) {
        return None;
    }
    Some((kind, addr.parse().ok()?))
}

fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// utime + stime of a process.
fn proc_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks_to_duration(ticks))
}

fn ticks_to_duration(ticks: u64) -> Duration {
    static CLK_TCK: LazyLock<u64> = LazyLock::new(|| {
        let out = Command::new("getconf").arg("CLK_TCK").output();
        out.ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
            .unwrap_or(100)
    });
    Duration::from_secs_f64(ticks as f64 / *CLK_TCK as f64)
}

/// CPU time used on the whole machine, by this process and by the proxy, at one instant:
/// two snapshots tell how busy *other* processes kept the machine in between (anything
/// else running makes the numbers noisy).
struct CpuSnapshot {
    at: Instant,
    machine_busy: Duration,
    ours: Duration,
}

impl CpuSnapshot {
    fn take(proxy_pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
        let t: Vec<u64> = cpu
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
        let busy = t.first()? + t.get(1)? + t.get(2)? + t.get(5)? + t.get(6)? + t.get(7)?;
        Some(CpuSnapshot {
            at: Instant::now(),
            machine_busy: ticks_to_duration(busy),
            ours: proc_cpu(std::process::id())? + proc_cpu(proxy_pid).unwrap_or_default(),
        })
    }

    /// Share of the machine's CPU capacity used by others (incl. hypervisor steal) since `self`.
    fn others_until(&self, later: &CpuSnapshot) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let capacity = later.at.duration_since(self.at).as_secs_f64() * cores;
        let busy = later.machine_busy.saturating_sub(self.machine_busy);
        let others = busy.saturating_sub(later.ours.saturating_sub(self.ours));
        others.as_secs_f64() / capacity
    }
}

// ---------------------------------------------------------------------------------------
// Clients and load

#[derive(Clone, Copy, PartialEq)]
enum Proto {
    Http,
    Https,
}

#[derive(Clone, Copy, PartialEq)]
enum Conn {
    KeepAlive,
    NewPerRequest,
}

/// One way of reaching the origin: a client plus what is needed to account for it.
struct Endpoint {
    client: reqwest::Client,
    base: String,
    origin: Arc<OriginCounts>,
    proxy_pid: u32,
    /// The requests go through the proxy.
    via_proxy: bool,
}

fn client_tls(ca_pem: &Path) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem)? {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn build_client(
    tls: rustls::ClientConfig,
    proxy: Option<&str>,
    conn: Conn,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .http1_only()
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(5));
    builder = match proxy {
        Some(url) => builder.proxy(reqwest::Proxy::all(url)?),
        None => builder.no_proxy(),
    };
    if conn == Conn::NewPerRequest {
        builder = builder.pool_max_idle_per_host(0);
    }
    Ok(builder.build()?)
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(out, ": {s}");
        source = s.source();
    }
    out
}

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

#[derive(Default)]
struct Errors {
    count: u64,
    /// Distinct messages (at most 5 kept) and how often each occurred.
    kinds: BTreeMap<String, u64>,
}

impl Errors {
    fn add(&mut self, message: String) {
        self.count += 1;
        self.record(message, 1);
    }

    fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for (message, n) in other.kinds {
            self.record(message, n);
        }
    }

    fn record(&mut self, message: String, n: u64) {
        if self.kinds.len() < 5 || self.kinds.contains_key(&message) {
            *self.kinds.entry(message).or_default() += n;
        }
    }
}

struct RunStats {
    rps: f64,
    p50: Duration,
    p99: Duration,
    ok: u64,
    errors: Errors,
    origin_conns: u64,
    origin_h2_requests: u64,
    proxy_cpu: Option<Duration>,
    proxy_rss_peak_kib: Option<u64>,
    /// Share of the machine's CPU other processes used during the run.
    others: f64,
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

async fn run_load(endpoint: &Endpoint, concurrency: usize, duration: Duration) -> RunStats {
    let url: Arc<str> = format!("{}/v1/chat/completions", endpoint.base).into();
    let conns_before = endpoint.origin.conns.load(Ordering::Relaxed);
    let h2_before = endpoint.origin.h2_requests.load(Ordering::Relaxed);
    let pid = endpoint.proxy_pid;
    let cpu_before = proc_cpu(pid);
    let machine_before = CpuSnapshot::take(pid);
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
    let others = match (machine_before, CpuSnapshot::take(pid)) {
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
        proxy_rss_peak_kib,
        others,
    }
}

fn percentile(sorted_nanos: &[u64], p: f64) -> Duration {
    if sorted_nanos.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * sorted_nanos.len() as f64).ceil() as usize).clamp(1, sorted_nanos.len());
    Duration::from_nanos(sorted_nanos[rank - 1])
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn median_duration(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Medians over the repeated runs of one side of a scenario.
struct Summary {
    rps: f64,
    /// Lowest and highest req/s of the runs.
    rps_range: (f64, f64),
    p50: Duration,
    p99: Duration,
    errors: Errors,
    origin_conns_per_req: f64,
    /// Share of the requests that reached the origin over HTTP/2.
    origin_h2_share: f64,
    proxy_cpu_per_req: Option<Duration>,
    proxy_rss_peak_kib: Option<u64>,
    /// Highest share of the machine's CPU other processes used during one of the runs.
    others_max: f64,
}

fn summarize(runs: Vec<RunStats>) -> Summary {
    let rps = median_f64(runs.iter().map(|r| r.rps).collect());
    let rps_range = runs.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), r| {
        (lo.min(r.rps), hi.max(r.rps))
    });
    let p50 = median_duration(runs.iter().map(|r| r.p50).collect());
    let p99 = median_duration(runs.iter().map(|r| r.p99).collect());
    let per_req = |r: &RunStats| r.origin_conns as f64 / r.ok.max(1) as f64;
    let origin_conns_per_req = median_f64(runs.iter().map(per_req).collect());
    let h2_share = |r: &RunStats| r.origin_h2_requests as f64 / r.ok.max(1) as f64;
    let origin_h2_share = median_f64(runs.iter().map(h2_share).collect());
    let cpu: Vec<Duration> = runs
        .iter()
        .filter_map(|r| Some(r.proxy_cpu? / r.ok.max(1) as u32))
        .collect();
    let proxy_cpu_per_req = (!cpu.is_empty()).then(|| median_duration(cpu));
    let proxy_rss_peak_kib = runs.iter().filter_map(|r| r.proxy_rss_peak_kib).max();
    let others_max = runs.iter().map(|r| r.others).fold(0.0, f64::max);
    let mut errors = Errors::default();
    for r in runs {
        errors.merge(r.errors);
    }
    Summary {
        rps,
        rps_range,
        p50,
        p99,
        errors,
        origin_conns_per_req,
        origin_h2_share,
        proxy_cpu_per_req,
        proxy_rss_peak_kib,
        others_max,
    }
}

struct Scenario {
    proto: Proto,
    conn: Conn,
    concurrency: usize,
}

impl Scenario {
    fn name(&self) -> String {
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

struct Row {
    scenario: Scenario,
    direct: Summary,
    proxied: Summary,
    /// Pairs of runs discarded and repeated because other processes disturbed them.
    repeated: usize,
}

/// Warm both sides up, then alternate direct and proxied runs (flipping who goes first).
async fn compare(
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

// ---------------------------------------------------------------------------------------
// SSE

struct SseSample {
    headers: Duration,
    first_byte: Duration,
    total: Duration,
    /// The first chunk already held the whole stream.
    coalesced: bool,
}

async fn sse_once(client: &reqwest::Client, url: &str) -> Result<SseSample, String> {
    let started = Instant::now();
    let mut response = client.get(url).send().await.map_err(|e| error_chain(&e))?;
    let headers = started.elapsed();
    if response.status() != reqwest::StatusCode::OK {
        return Err(format!("status {}", response.status()));
    }
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    if content_type.as_ref().and_then(|v| v.to_str().ok()) != Some("text/event-stream") {
        return Err(format!("content-type {content_type:?}"));
    }
    let mut body = Vec::new();
    let first = response.chunk().await.map_err(|e| error_chain(&e))?;
    let first_byte = started.elapsed();
    let first = first.ok_or("empty SSE body")?;
    body.extend_from_slice(&first);
    while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
        body.extend_from_slice(&chunk);
    }
    let total = started.elapsed();
    let expected: Vec<u8> = (0..SSE_EVENTS)
        .flat_map(|i| sse_event(i).to_vec())
        .collect();
    if body != expected {
        return Err(format!("wrong SSE body ({} bytes)", body.len()));
    }
    Ok(SseSample {
        headers,
        first_byte,
        total,
        coalesced: first.len() == expected.len(),
    })
}

struct SseSummary {
    headers: Duration,
    first_byte: Duration,
    total: Duration,
    coalesced: usize,
    samples: usize,
    errors: Errors,
}

fn summarize_sse(samples: Vec<Result<SseSample, String>>) -> SseSummary {
    let mut errors = Errors::default();
    let mut ok = Vec::new();
    for s in samples {
        match s {
            Ok(s) => ok.push(s),
            Err(e) => errors.add(e),
        }
    }
    SseSummary {
        headers: median_duration(ok.iter().map(|s| s.headers).collect()),
        first_byte: median_duration(ok.iter().map(|s| s.first_byte).collect()),
        total: median_duration(ok.iter().map(|s| s.total).collect()),
        coalesced: ok.iter().filter(|s| s.coalesced).count(),
        samples: ok.len(),
        errors,
    }
}

struct SseRow {
    proto: Proto,
    direct: SseSummary,
    proxied: SseSummary,
}

async fn compare_sse(
    settings: &Settings,
    proto: Proto,
    direct: &Endpoint,
    proxied: &Endpoint,
) -> SseRow {
    let (d_url, p_url) = (
        format!("{}/sse", direct.base),
        format!("{}/sse", proxied.base),
    );
    for _ in 0..2 {
        let _ = sse_once(&direct.client, &d_url).await;
        let _ = sse_once(&proxied.client, &p_url).await;
    }
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for i in 0..settings.sse_samples {
        if i % 2 == 0 {
            d.push(sse_once(&direct.client, &d_url).await);
            p.push(sse_once(&proxied.client, &p_url).await);
        } else {
            p.push(sse_once(&proxied.client, &p_url).await);
            d.push(sse_once(&direct.client, &d_url).await);
        }
    }
    let row = SseRow {
        proto,
        direct: summarize_sse(d),
        proxied: summarize_sse(p),
    };
    eprintln!(
        "SSE {:<36} direct TTFB {} ms | proxied TTFB {} ms | errors {}/{}",
        proto_name(proto),
        ms(row.direct.first_byte),
        ms(row.proxied.first_byte),
        row.direct.errors.count,
        row.proxied.errors.count,
    );
    row
}

// ---------------------------------------------------------------------------------------
// The whole benchmark

struct Memory {
    at_ready_kib: Option<u64>,
    idle_kib: Option<u64>,
    after_load_kib: Option<u64>,
    hwm_kib: Option<u64>,
}

struct Outcome {
    rows: Vec<Row>,
    sse: Vec<SseRow>,
    memory: Memory,
    startup: Duration,
    crashed: Option<ExitStatus>,
    duration: Duration,
    /// Share of the machine's CPU other processes used over the whole benchmark.
    others: f64,
}

async fn bench(
    settings: &Settings,
    root: &Path,
    origin_runtime: &tokio::runtime::Handle,
    proxy: &mut ProxyProcess,
) -> Result<Outcome> {
    let started = Instant::now();
    let machine_before = CpuSnapshot::take(proxy.pid);
    let at_ready_kib = proc_status_kib(proxy.pid, "VmRSS");
    tokio::time::sleep(IDLE_SETTLE).await;
    let idle_kib = proc_status_kib(proxy.pid, "VmRSS");

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
            via_proxy,
        })
    };

    let mut rows = Vec::new();
    let mut sse = Vec::new();
    for proto in [Proto::Http, Proto::Https] {
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
    let memory = Memory {
        at_ready_kib,
        idle_kib,
        after_load_kib: proc_status_kib(proxy.pid, "VmRSS"),
        hwm_kib: proc_status_kib(proxy.pid, "VmHWM"),
    };
    Ok(Outcome {
        rows,
        sse,
        memory,
        startup: proxy.startup,
        crashed: proxy.exited(),
        duration: started.elapsed(),
        others: match (machine_before, CpuSnapshot::take(proxy.pid)) {
            (Some(before), Some(after)) => before.others_until(&after),
            _ => f64::NAN,
        },
    })
}

// ---------------------------------------------------------------------------------------
// Report

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn added_ms(proxied: Duration, direct: Duration) -> f64 {
    (proxied.as_secs_f64() - direct.as_secs_f64()) * 1e3
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn proto_name(proto: Proto) -> &'static str {
    match proto {
        Proto::Http => "plain HTTP",
        Proto::Https => "HTTPS (intercepted)",
    }
}

fn mark(ok: bool) -> &'static str {
    if ok { "✅" } else { "❌" }
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            Some(
                l.strip_prefix("model name")?
                    .split_once(':')?
                    .1
                    .trim()
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem_gib = proc_meminfo_kib("MemTotal").map_or(0.0, |k| k as f64 / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cores} cores (`nproc`), {cpu}, {mem_gib:.0} GiB RAM, Linux {}, {}",
        kernel.trim(),
        command_output("rustc", &["--version"])
    )
}

fn proc_meminfo_kib(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(
            || format!("({program} unavailable)"),
            |s| s.trim().to_string(),
        )
}

fn rps_cell(s: &Summary) -> String {
    format!("{:.0} ({:.0}–{:.0})", s.rps, s.rps_range.0, s.rps_range.1)
}

fn pair<T: std::fmt::Display>(direct: T, proxied: T) -> String {
    format!("{direct} / {proxied}")
}

/// Appends a markdown table; the columns after the first are right-aligned if `numbers`.
fn table(
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

impl Outcome {
    fn row(&self, proto: Proto, conn: Conn, concurrency: usize) -> Option<&Row> {
        self.rows.iter().find(|r| {
            let s = &r.scenario;
            s.proto == proto && s.conn == conn && s.concurrency == concurrency
        })
    }

    fn render(&self, settings: &Settings, proxy: &ProxyProcess, stop: &StopReport) -> String {
        let mut out = String::new();
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let _ = writeln!(
            out,
            "## Proxy overhead: direct vs through flakestorm (loopback)\n\n\
             - Command: `{COMMAND}` (source: `benches/proxy.rs`)\n\
             - Date: {date}\n\
             - Machine: {}\n\
             - Method: origins in the bench process (hyper, TCP_NODELAY; HTTPS origin with \
             the `tests/fixtures` certificate, ALPN h2 + http/1.1) on their own tokio \
             multi-thread runtime, the reqwest clients (forced to HTTP/1.1) on another, so a \
             direct request crosses threads as it would between separate processes; \
             flakestorm as a separate process (release `flakestorm serve`, `RUST_LOG=warn`). \
             Proxied plain HTTP uses absolute-form requests, proxied HTTPS uses CONNECT and is \
             intercepted (the client trusts only the flakestorm CA). Each measurement: {} \
             warm-up, then {} runs of {} per side, direct and proxied interleaved; the tables \
             show the **median** of the runs. Latency is per request, including reading the \
             body. Whole benchmark: {:.0} s; other processes used {:.1} % of the machine's \
             CPU meanwhile (from `/proc/stat`, hypervisor steal included).\n",
            machine(),
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
                "VmRSS idle after the load, clients closed (includes the in-memory journal, \
                 by default the last 10 000 exchanges)",
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

fn fmt_dur(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn render_problems(out: &mut String, outcome: &Outcome, proxy: &ProxyProcess, stop: &StopReport) {
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

fn write_docs(root: &Path, section: &str) -> Result<PathBuf> {
    let path = root.join("docs/benchmarks.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let block = format!("{DOCS_START}\n{}\n{DOCS_END}", section.trim_end());
    let updated = match (existing.find(DOCS_START), existing.find(DOCS_END)) {
        (Some(start), Some(end)) if end > start => format!(
            "{}{block}{}",
            &existing[..start],
            &existing[end + DOCS_END.len()..]
        ),
        _ if existing.trim().is_empty() => format!("# Benchmarks\n\n{block}\n"),
        _ => format!("{}\n\n{block}\n", existing.trim_end()),
    };
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    std::fs::write(&path, updated)?;
    Ok(path)
}
