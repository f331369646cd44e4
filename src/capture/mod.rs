//! `agent.capture: netns` (docs/capture.md): the agent runs in a network namespace of its
//! own in which every TCP connection it opens, to any address and port, ends at flakestorm,
//! whatever its client does with proxy variables. This module owns the namespace's side
//! and the sockets that cross it: the redirection rules (`nft`), the namespace's setup the
//! supervisor runs (`namespace`), the DNS flakestorm answers there with fake addresses it
//! maps back to names (`dns`, `names`), sockets passed between processes (`pass`), the
//! sockets flakestorm's driver reaches the agent with (`factory`), and whether the machine
//! can do it at all (`probe`). It knows nothing of the proxy: the proxy serves what
//! [`Captured`] holds (proxy/capture.rs), the agent module starts the supervisor.

mod dns;
mod factory;
mod names;
mod namespace;
mod nft;
mod pass;
mod probe;

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

pub use factory::{Factory, serve as serve_factory};
pub use names::{Names, in_range as fake_address};
pub use namespace::{RunAs, agent_command, set_up, tool};
pub use pass::{recv as recv_fds, recv_async as recv_fds_async};
pub use probe::check;

/// How the agent's traffic reaches the proxy (`agent.capture`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Through the proxy variables flakestorm sets (`HTTPS_PROXY`, …): what a client that
    /// ignores them sends bypasses the proxy, and the run says so.
    #[default]
    Proxy,
    /// In a network namespace where every TCP connection ends at flakestorm (Linux).
    Netns,
}

/// The socket mark of flakestorm's own sockets in the namespace ("FS"): the rules let them
/// through.
pub const MARK: u32 = 0x4653;

/// What flakestorm serves for one namespace: the capture listeners (IPv4, and IPv6 when
/// the namespace has it), its DNS socket, and the names the DNS gave addresses.
pub struct Captured {
    pub tcp: Vec<std::net::TcpListener>,
    pub dns: std::net::UdpSocket,
    pub names: Arc<Names>,
}

/// A namespace as flakestorm holds it: what to serve, and its socket factory.
pub struct Namespace {
    pub captured: Captured,
    pub factory: Arc<Factory>,
}

impl Namespace {
    /// From the supervisor's `netns` message (`word`) and the sockets that came with it.
    pub fn from_message(word: &str, fds: Vec<OwnedFd>) -> io::Result<Namespace> {
        let v6 = match word.trim_end() {
            "netns" => false,
            "netns v6" => true,
            other => return Err(io::Error::other(format!("unexpected `{other}`"))),
        };
        let want = if v6 { 4 } else { 3 };
        if fds.len() != want {
            return Err(io::Error::other(format!(
                "{} sockets where {want} were expected",
                fds.len()
            )));
        }
        let mut fds = fds.into_iter();
        let mut next = || {
            fds.next()
                .ok_or_else(|| io::Error::other("a socket is missing"))
        };
        let factory = Factory::new(next()?)?;
        let dns = std::net::UdpSocket::from(next()?);
        dns.set_nonblocking(true)?;
        let mut tcp = vec![];
        for _ in 0..want - 2 {
            let l = std::net::TcpListener::from(next()?);
            l.set_nonblocking(true)?;
            tcp.push(l);
        }
        Ok(Namespace {
            captured: Captured {
                tcp,
                dns,
                names: Arc::new(Names::default()),
            },
            factory: Arc::new(factory),
        })
    }
}

/// Answers the namespace's DNS queries on `socket` until it fails (the namespace is gone)
/// or the task is dropped. `dropped` counts the packets that were not queries.
pub async fn serve_dns(socket: tokio::net::UdpSocket, names: Arc<Names>, dropped: impl Fn()) {
    let mut buf = vec![0u8; 1500];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            return;
        };
        match dns::answer(&buf[..n], &names) {
            Some(reply) => {
                let _ = socket.send_to(&reply, from).await;
            }
            None => dropped(),
        }
    }
}
