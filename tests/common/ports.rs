//! Loopback ports a test names before anything listens on them, safe from other processes
//! on the same machine (test binaries and suites of other checkouts run side by side):
//! - `closed_port`: nothing listens on it for the rest of the test process, by
//!   construction: a socket bound to it and never listening holds it, so a connection is
//!   refused and no other process can bind it (the holder has no `SO_REUSEADDR` or
//!   `SO_REUSEPORT`, which Linux needs on both sockets to share a port), nor can the kernel
//!   hand it out for an outgoing connection.
//! - `agent_port`: a port an agent (or a daemon) the test starts later binds; it cannot be
//!   held up to that bind, which happens in another process, so it is taken where nothing
//!   else looks: above the kernel's ephemeral range (never an outgoing connection's local
//!   port, never what port 0 gives) and outside the range flakestorm's agent pool picks
//!   from (`agent::pool::ports`, below the ephemeral range); and it is reserved among test
//!   processes for this process's life by an abstract socket name of its own, so two tests
//!   anywhere on the machine never get the same one.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixListener;
use std::sync::Mutex;

/// The sockets that hold this process's closed ports, until it exits.
static CLOSED: Mutex<Vec<socket2::Socket>> = Mutex::new(Vec::new());
/// This process's agent ports, each with the socket of its reservation (module doc).
static RESERVED: Mutex<Vec<(u16, Option<UnixListener>)>> = Mutex::new(Vec::new());

/// A loopback port that refuses connections, and that nothing can listen on, for as long
/// as this test process runs (see the module doc for why).
pub fn closed_port() -> u16 {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
    // No SO_REUSEADDR (socket2 sets none) and no listen(): bound only.
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .unwrap();
    let port = s.local_addr().unwrap().as_socket().unwrap().port();
    CLOSED.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    port
}

/// The kernel's ephemeral range, `(low, high)`.
pub fn ephemeral_range() -> (u16, u16) {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range");
    let mut it = text.iter().flat_map(|r| r.split_whitespace());
    let mut next = |default| it.next().and_then(|p| p.parse().ok()).unwrap_or(default);
    (next(32768), next(60999))
}

/// The ports `agent_port` picks from: above the ephemeral range when it leaves room (Linux's
/// default leaves 61000–65535), else below it, as flakestorm's pool does.
fn agent_range() -> (u16, u16) {
    let (low, high) = ephemeral_range();
    match 65535 - high >= 1000 {
        true => (high + 1, 65535 - high),
        false => (10_000, low.saturating_sub(10_000).max(1)),
    }
}

/// A loopback port nothing listens on now, for an agent or daemon the test starts later,
/// reserved among test processes for this process's life (see the module doc).
pub fn agent_port() -> u16 {
    let (first, span) = agent_range();
    // Processes side by side start at different places: fewer reserved names to step over.
    let start = std::process::id() as usize * 7919;
    for i in 0..span as usize {
        let port = first + ((start + i * 13) % span as usize) as u16;
        let Some(reservation) = reserve(port) else {
            continue;
        };
        // Free now: no leftover agent or foreign server listens there.
        if std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err() {
            continue;
        }
        let mut reserved = RESERVED.lock().unwrap_or_else(|p| p.into_inner());
        reserved.push((port, reservation));
        return port;
    }
    panic!(
        "no free loopback port in {first}..{}",
        first as usize + span as usize
    );
}

/// `port`'s machine-wide reservation among test processes: the abstract socket name
/// `flakestorm-test-port-PORT`, which only one socket at a time can bind (this process's
/// too) and which goes with its process, no file left behind; `None` when some process
/// holds it. Where abstract names do not exist, this process's own list only.
fn reserve(port: u16) -> Option<Option<UnixListener>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("flakestorm-test-port-{port}");
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).ok()?;
        UnixListener::bind_addr(&addr).ok().map(Some)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let reserved = RESERVED.lock().unwrap_or_else(|p| p.into_inner());
        (!reserved.iter().any(|(p, _)| *p == port)).then_some(None)
    }
}

/// A port thief: what another process could do to take `port` on loopback and listen on
/// it, each way a server binds (std's `SO_REUSEADDR`, as Python's `http.server` and tokio
/// do; `SO_REUSEPORT` too; the wildcard address). The first listener it got, if any.
pub fn steal(port: u16) -> Option<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let ways: [(Ipv4Addr, bool); 4] = [
        (Ipv4Addr::LOCALHOST, false),
        (Ipv4Addr::LOCALHOST, true),
        (Ipv4Addr::UNSPECIFIED, false),
        (Ipv4Addr::UNSPECIFIED, true),
    ];
    ways.into_iter().find_map(|(ip, reuse_port)| {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).ok()?;
        s.set_reuse_address(true).ok()?;
        s.set_reuse_port(reuse_port).ok()?;
        s.bind(&SocketAddr::from((ip, port)).into()).ok()?;
        s.listen(16).ok()?;
        Some(s)
    })
}
