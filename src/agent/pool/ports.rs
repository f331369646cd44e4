//! Where a pool instance lives: a free loopback port below the kernel's ephemeral range,
//! and its log file's name (`agent.log`, `agent-2.log`, …).

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

/// `n` distinct free ports of the loopback interface for agent instances, taken below the
/// kernel's ephemeral range: a port from that range (what binding port 0 gives), released
/// for the agent to bind, can meanwhile become the local port of an outgoing connection
/// (the agent's own calls go out by the hundred), and the instance then fails to bind.
pub(super) fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Positions already tried by this process: each call goes on from there, so ports it
    // handed out are not handed out again until the range has been gone through.
    static TRIED: AtomicUsize = AtomicUsize::new(0);
    const FIRST: u16 = 10_000;
    let low = ephemeral_low();
    // A host whose ephemeral range starts low leaves no room below it: ports the kernel
    // picks, as everywhere else.
    if low < FIRST + 1000 {
        return kernel_ports(n);
    }
    let span = usize::from(low - FIRST);
    // Processes side by side (runs, daemons) start at different places.
    let origin = std::process::id() as usize * 7919;
    let mut held = vec![];
    for _ in 0..span {
        if held.len() == n {
            break;
        }
        // A step of 13, prime to the span's usual size, visits every port once.
        let k = TRIED.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + ((origin + k * 13) % span) as u16;
        if let Ok(l) = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
            held.push(l);
        }
    }
    if held.len() < n {
        return Err(format!(
            "no {n} free loopback ports below {low} for the agent instances"
        ));
    }
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// `n` distinct ports the kernel picks (port 0, each held until all are chosen).
fn kernel_ports(n: usize) -> Result<Vec<u16>, String> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("no free port for an agent instance: {e}"))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
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
    fn free_ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_ports(8).unwrap();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 8, "{ports:?}");
        assert!(
            ports.iter().all(|p| *p >= 10_000 && *p < ephemeral_low()),
            "{ports:?}"
        );
        // Where the range leaves no room below it, the kernel's picks, distinct too.
        let mut kernel = kernel_ports(8).unwrap();
        kernel.sort_unstable();
        kernel.dedup();
        assert_eq!(kernel.len(), 8);
        // The next call does not hand the same ports out again.
        let next = free_ports(8).unwrap();
        assert!(
            next.iter().all(|p| !ports.contains(p)),
            "{ports:?} then {next:?}"
        );
    }
}
