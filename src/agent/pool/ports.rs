//! Where a pool instance lives: a free loopback port below the kernel's ephemeral range,
//! reserved among flakestorm processes (`Reserved`), and its log file's name
//! (`agent.log`, `agent-2.log`, …).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// `log` for instance `n`: the first keeps the name, the others get `-n` before the
/// extension (`agent.log`, `agent-2.log`, …).
pub(super) fn log_of(log: &Path, n: usize) -> PathBuf {
    if n == 1 {
        return log.to_path_buf();
    }
    let stem = log.file_stem().unwrap_or_default().to_string_lossy();
    let name = match log.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    log.with_file_name(name)
}

/// The lowest port the kernel hands out for outgoing connections and port 0.
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A port for an agent instance, reserved among flakestorm processes for as long as it is
/// held: the abstract socket name `flakestorm-agent-port-PORT` is bound by one socket at a
/// time on the machine (two runs side by side never pick the same port), and goes with
/// its process, nothing left behind. Not a hold on the port itself: the agent, another
/// process, binds it; a process that is not flakestorm can still take it meanwhile
/// (`taken`, and the instance starts again on another port).
pub(super) struct Reserved {
    pub number: u16,
    _name: Option<std::os::unix::net::UnixListener>,
}

/// The reservation of `port` (see `Reserved`); `None` when another process holds it.
/// Where abstract names do not exist, none: the free-port check alone.
fn reserve(port: u16) -> Option<Reserved> {
    #[cfg(target_os = "linux")]
    let name = {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("flakestorm-agent-port-{port}");
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).ok()?;
        Some(std::os::unix::net::UnixListener::bind_addr(&addr).ok()?)
    };
    #[cfg(not(target_os = "linux"))]
    let name = None;
    Some(Reserved {
        number: port,
        _name: name,
    })
}

/// Whether a process listens on (or holds) loopback `port` now: binding it as a server
/// does (`SO_REUSEADDR`, so a connection closing there is no obstacle) fails.
pub(super) fn taken(port: u16) -> bool {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err()
}

/// A free loopback port for an agent instance, reserved (`Reserved`), taken below the
/// kernel's ephemeral range: a port from that range (what binding port 0 gives), released
/// for the agent to bind, can meanwhile become the local port of an outgoing connection
/// (the agent's own calls go out by the hundred), and the instance then fails to bind.
pub(super) fn reserve_one() -> Result<Reserved, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Positions already tried by this process: each call goes on from there, so ports it
    // handed out are not handed out again until the range has been gone through.
    static TRIED: AtomicUsize = AtomicUsize::new(0);
    const FIRST: u16 = 10_000;
    let low = ephemeral_low();
    // A host whose ephemeral range starts low leaves no room below it: ports the kernel
    // picks, as everywhere else.
    if low < FIRST + 1000 {
        return kernel_port();
    }
    let span = usize::from(low - FIRST);
    // Processes side by side (runs, daemons) start at different places.
    let origin = std::process::id() as usize * 7919;
    for _ in 0..span {
        // A step of 13, prime to the span's usual size, visits every port once.
        let k = TRIED.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + ((origin + k * 13) % span) as u16;
        if let Some(r) = reserve(port).filter(|_| !taken(port)) {
            return Ok(r);
        }
    }
    Err(format!(
        "no free loopback port below {low} for an agent instance"
    ))
}

/// A port the kernel picks (port 0), reserved.
fn kernel_port() -> Result<Reserved, String> {
    for _ in 0..64 {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("no free port for an agent instance: {e}"))?;
        let port = l.local_addr().map_err(|e| e.to_string())?.port();
        if let Some(r) = reserve(port) {
            return Ok(r);
        }
    }
    Err("no free port for an agent instance that another run had not reserved".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_logs_are_numbered_after_the_first() {
        let log = Path::new("/tmp/run/agent.log");
        assert_eq!(log_of(log, 1), log);
        assert_eq!(log_of(log, 2), Path::new("/tmp/run/agent-2.log"));
        assert_eq!(log_of(Path::new("/x/out"), 3), Path::new("/x/out-3"));
    }

    #[test]
    fn ports_are_distinct_reserved_and_below_the_ephemeral_range() {
        let held: Vec<Reserved> = (0..8).map(|_| reserve_one().unwrap()).collect();
        let mut ports: Vec<u16> = held.iter().map(|r| r.number).collect();
        assert!(
            ports.iter().all(|p| *p >= 10_000 && *p < ephemeral_low()),
            "{ports:?}"
        );
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 8, "{ports:?}");
        // Reserved: no other process (nor this one) reserves it while it is held.
        assert!(reserve(held[0].number).is_none());
        let port = held[0].number;
        drop(held);
        assert!(reserve(port).is_some(), "released with its holder");
        // Where the range leaves no room below it, the kernel's picks, reserved too.
        let a = kernel_port().unwrap();
        let b = kernel_port().unwrap();
        assert_ne!(a.number, b.number);
        assert!(reserve(a.number).is_none());
    }

    #[test]
    fn a_port_something_listens_on_is_taken() {
        let thief = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = thief.local_addr().unwrap().port();
        assert!(taken(port));
        drop(thief);
        assert!(!taken(port));
    }
}
