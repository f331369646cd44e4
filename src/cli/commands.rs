//! The commands that are not runs: `serve` (the daemon until a signal), `init`,
//! `profiles`, `ca`; and the signals that stop a run (SIGINT, SIGTERM and SIGHUP for local
//! runs, SIGINT and SIGTERM for `--server` clients; `serve`'s signal handling, a forced
//! second signal included, is `Daemon::run_until_signal`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::{CaCommand, ConfigArg, DEFAULT_CONFIG, OpenProxyArg, ProfilesCommand, load};
use crate::config::{Loaded, Overrides};
use crate::daemon::{Daemon, Signals, Stopped};
use crate::tls::{CA_CERT_FILE, CertificateAuthority};

/// `serve`: the config (under `--chaos-profile`'s rules, if given), then the daemon until
/// a signal.
pub(super) async fn serve_command(
    config: &ConfigArg,
    (listen, control_listen): (Option<String>, Option<String>),
    open: &OpenProxyArg,
    chaos_profile: Option<String>,
    record: Option<PathBuf>,
) -> ExitCode {
    let mut loaded = match load::load_daemon(config, listen, control_listen, open) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if let Some(name) = chaos_profile {
        match crate::chaos::profiles::load(&name) {
            Ok(spec) => {
                let mark = loaded.config.chaos.mark_responses;
                loaded.config.chaos = spec.with_mark_responses(mark);
            }
            Err(e) => {
                eprintln!("flakestorm: {e}");
                return ExitCode::from(2);
            }
        }
    }
    serve(loaded, record)
        .await
        .map_or_else(super::failed, |()| ExitCode::SUCCESS)
}

/// `record`: `serve` with no fault firing (a recording is of the agent's real traffic),
/// its traffic taped to `output`.
pub(super) async fn record(
    config: &ConfigArg,
    (listen, control_listen): (Option<String>, Option<String>),
    open: &OpenProxyArg,
    output: PathBuf,
) -> ExitCode {
    let mut loaded = match load::load_daemon(config, listen, control_listen, open) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let mark = loaded.config.chaos.mark_responses;
    loaded.config.chaos = crate::chaos::spec::CompiledChaos::default().with_mark_responses(mark);
    serve(loaded, Some(output))
        .await
        .map_or_else(super::failed, |()| ExitCode::SUCCESS)
}

/// A line for `serve`'s stdout, collected so one failed write is handled once.
macro_rules! say {
    ($out:ident, $($arg:tt)*) => {{
        $out.push_str(&format!($($arg)*));
        $out.push('\n');
    }};
}

pub(super) async fn serve(loaded: Loaded, record: Option<PathBuf>) -> anyhow::Result<()> {
    let signals = Signals::install().context("installing the signal handlers")?;
    let daemon = Daemon::start(&loaded.config).await?;
    let recording = match &record {
        Some(dir) => Some(
            crate::recording::Recording::start(daemon.journal.clone(), dir)
                .map_err(|e| anyhow::anyhow!("--record: {e}"))?,
        ),
        None => None,
    };
    let out = announcement(&daemon, &loaded, recording.as_ref());
    // A closed stdout (a supervisor that dropped it) must not stop the daemon.
    if let Err(e) = std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes()) {
        eprintln!("flakestorm: warning: cannot write to stdout ({e}); serving anyway");
    }
    let stopped = daemon.run_until_signal(signals).await;
    if let Some(r) = recording {
        let file = r.file.clone();
        match r.finish().await {
            Ok(n) => eprintln!("flakestorm: recorded {n} exchange(s) to {}", file.display()),
            Err(e) => anyhow::bail!("the recording was not saved: {e}"),
        }
    }
    match stopped {
        Stopped::Drained => Ok(()),
        Stopped::Forced => {
            anyhow::bail!(
                "second signal during the drain: stopped without waiting for in-flight requests"
            )
        }
    }
}

/// What `serve` prints once it listens: the addresses, the token file, the chaos rules,
/// the recording, a new CA, and how to point an agent at the proxy (logged as `listening`
/// too).
fn announcement(
    daemon: &Daemon,
    loaded: &Loaded,
    recording: Option<&crate::recording::Recording>,
) -> String {
    let ca =
        std::fs::canonicalize(&daemon.ca_cert_path).unwrap_or_else(|_| daemon.ca_cert_path.clone());
    // These lines are a contract: scripts and tests wait for them (docs/proxy.md). The
    // addresses are ones a client can use: 127.0.0.1 for a listener on 0.0.0.0.
    let (proxy_at, control_at) = (usable(daemon.proxy_addr), usable(daemon.control_addr));
    tracing::info!(proxy = %proxy_at, control = %control_at, "listening");
    let mut out = String::new();
    say!(out, "flakestorm: proxy listening on {proxy_at}");
    say!(out, "flakestorm: control listening on {control_at}");
    for (what, bound) in [
        ("proxy", daemon.proxy_addr),
        ("control", daemon.control_addr),
    ] {
        if bound.ip().is_unspecified() {
            say!(
                out,
                "flakestorm: {what} bound to every interface ({bound}): other hosts reach it \
                 at {}:{} or this host's address",
                host_name(),
                bound.port()
            );
        }
    }
    if let Some(file) = &daemon.token_file {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        say!(
            out,
            "flakestorm: control API token in {} (send it as Authorization: Bearer …; \
             `--server` on this machine reads it there)",
            file.display()
        );
    }
    out.push_str(&crate::ui::announce(daemon.ui_link.as_deref()));
    let rules = daemon.chaos.rules();
    if !rules.is_empty() {
        let s = &rules.spec;
        let n = s.tool_faults.len() + s.llm_faults.len() + s.context_attacks.rules().len();
        say!(
            out,
            "flakestorm: chaos active: {n} rules (seed {})",
            daemon.chaos.seed()
        );
    }
    if let Some(r) = recording {
        say!(out, "flakestorm: recording to {}", r.file.display());
    }
    if daemon.ca_created {
        say!(out, "flakestorm: created a new CA at {}", ca.display());
    }
    // With a bundle (system roots + CA), clients trust it alone: passthrough hosts too.
    let bundle = loaded.config.ca.bundle_file.as_ref();
    let trust = bundle.map_or_else(|| ca.display().to_string(), |b| b.display().to_string());
    let proxy = format!("http://{proxy_at}");
    say!(
        out,
        "flakestorm: point the agent at it: HTTPS_PROXY={proxy} HTTP_PROXY={proxy} SSL_CERT_FILE={trust} \
         REQUESTS_CA_BUNDLE={trust} NODE_EXTRA_CA_CERTS={trust}"
    );
    if let Some(dir) = &daemon.wrap_dir {
        say!(
            out,
            "flakestorm: stdio MCP servers under `flakestorm wrap` (same host): {}={proxy} {}={}",
            crate::mcp::stdio::ENV_PROXY,
            crate::mcp::stdio::ENV_DIR,
            dir.display()
        );
    }
    out
}

/// An address a client can connect to: loopback for a listener on every interface.
fn usable(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V4(_) | IpAddr::V6(_) => addr,
    }
}

/// This host's name (a container's or pod's own name), as other hosts may know it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "this-host".into())
}

/// A signal that stops a run command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopSignal {
    Int,
    Term,
    Hup,
}

impl StopSignal {
    pub(super) fn name(self) -> &'static str {
        match self {
            StopSignal::Int => "SIGINT",
            StopSignal::Term => "SIGTERM",
            StopSignal::Hup => "SIGHUP",
        }
    }

    /// The shell's convention: 128 + the signal's number.
    pub(super) fn exit_code(self) -> u8 {
        match self {
            StopSignal::Int => 130,
            StopSignal::Term => 143,
            StopSignal::Hup => 129,
        }
    }
}

/// Installs handlers for `which` now (from here on none of them meets its default action,
/// which would end flakestorm without stopping what it started) and returns a future that
/// resolves at the first of them to arrive.
pub(super) fn on_signals(
    which: &[StopSignal],
) -> anyhow::Result<impl std::future::Future<Output = StopSignal> + use<>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut handlers = vec![];
        for &s in which {
            let kind = match s {
                StopSignal::Int => SignalKind::interrupt(),
                StopSignal::Term => SignalKind::terminate(),
                StopSignal::Hup => SignalKind::hangup(),
            };
            let handler =
                signal(kind).with_context(|| format!("installing the {} handler", s.name()))?;
            handlers.push((s, handler));
        }
        Ok(std::future::poll_fn(move |cx| {
            for (s, handler) in &mut handlers {
                if handler.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*s);
                }
            }
            std::task::Poll::Pending
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = which;
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            StopSignal::Int
        })
    }
}

/// SIGINT or SIGTERM (`--server` runs: a closed terminal leaves the daemon's run going).
pub(super) async fn wait_for_signal() -> anyhow::Result<()> {
    on_signals(&[StopSignal::Int, StopSignal::Term])?.await;
    Ok(())
}

/// The commented starter config `init` writes.
const STARTER: &str = include_str!("../../config/starter.yaml");

pub(super) fn init(force: bool) -> anyhow::Result<()> {
    let path = Path::new(DEFAULT_CONFIG);
    if path.exists() && !force {
        anyhow::bail!("{DEFAULT_CONFIG} already exists; pass --force to replace it");
    }
    std::fs::write(path, STARTER).with_context(|| format!("writing {DEFAULT_CONFIG}"))?;
    println!(
        "wrote {DEFAULT_CONFIG}: set agent.endpoint (or, for an agent that is a script, only \
         agent.command with {{prompt}}) and tools, then `flakestorm contract run`"
    );
    Ok(())
}

pub(super) fn profiles(command: ProfilesCommand) -> ExitCode {
    use crate::chaos::profiles;
    match command {
        ProfilesCommand::List => {
            for (name, yaml) in profiles::PROFILES {
                println!("{name:<22} {}", profiles::description(yaml));
            }
            ExitCode::SUCCESS
        }
        ProfilesCommand::Show { name } => match profiles::yaml(&name) {
            Some(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("flakestorm: {}", profiles::ProfileError::Unknown { name });
                ExitCode::from(2)
            }
        },
    }
}

pub(super) fn ca(command: CaCommand) -> anyhow::Result<()> {
    let (arg, action) = match &command {
        CaCommand::Init { config, .. } => (config, "init"),
        CaCommand::Export { config } => (config, "export"),
        CaCommand::Path { config } => (config, "path"),
        CaCommand::Bundle { config, .. } => (config, "bundle"),
    };
    let loaded = load(arg, Overrides::default())
        .map_err(|_| anyhow::anyhow!("the configuration is invalid"))?;
    if let CaCommand::Bundle {
        output,
        cert,
        system_roots,
        ..
    } = &command
    {
        let cert = cert.clone().unwrap_or_else(|| loaded.config.ca.cert_path());
        return bundle(output, &cert, system_roots.as_deref());
    }
    if let (Some(cert), "init" | "export" | "path") = (&loaded.config.ca.cert_file, action) {
        // A CA given as files is used as it is: never made or replaced here.
        anyhow::ensure!(
            action != "init",
            "ca.cert_file is set ({}): that CA is used as it is; `ca init` makes one in ca.dir \
             only",
            cert.display()
        );
        if action == "path" {
            println!("{}", cert.display());
        } else {
            print!(
                "{}",
                crate::files::read_to_string(cert, crate::files::Limit::Pem)?
            );
        }
        return Ok(());
    }
    let dir = loaded.config.ca.dir;
    match (action, &command) {
        ("init", CaCommand::Init { force, .. }) => {
            let ca = CertificateAuthority::create(&dir, *force)?;
            println!(
                "created CA certificate {} (key {} is private, mode 0600)",
                ca.cert_path().display(),
                dir.join(crate::tls::CA_KEY_FILE).display()
            );
        }
        ("export", _) => {
            let ca = CertificateAuthority::load(&dir)
                .with_context(|| format!("no CA in {}; run `flakestorm ca init`", dir.display()))?;
            print!("{}", ca.cert_pem());
        }
        _ => {
            let path = dir.join(CA_CERT_FILE);
            println!("{}", std::fs::canonicalize(&path).unwrap_or(path).display());
        }
    }
    Ok(())
}

/// `ca bundle`: the system roots plus the CA certificate `cert`, written to `out`.
fn bundle(out: &Path, cert: &Path, roots: Option<&Path>) -> anyhow::Result<()> {
    let pem = crate::files::read_to_string(cert, crate::files::Limit::Pem).with_context(|| {
        format!(
            "no CA certificate at {}; run `flakestorm ca init` (or start `serve` once)",
            cert.display()
        )
    })?;
    let roots = match roots {
        Some(r) => r.to_path_buf(),
        None => crate::tls::system_roots().with_context(|| {
            format!(
                "no system root bundle found (looked for {}): install ca-certificates, or \
                 name one with --system-roots",
                crate::tls::SYSTEM_ROOTS.join(", ")
            )
        })?,
    };
    let n = crate::tls::write_bundle(out, &roots, &pem)?;
    println!(
        "wrote {} ({n} certificates: the CA {} and the roots of {})",
        out.display(),
        cert.display(),
        roots.display()
    );
    Ok(())
}
