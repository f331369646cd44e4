//! `agent.capture: netns` on the proxy's side: the capture listeners of an agent's
//! namespace served on that instance's lane (what arrives is its current case's, under
//! `proxy.max_connections` like any connection), and its DNS answered. A captured
//! connection's target is its original destination (`SO_ORIGINAL_DST`), a fake address
//! mapped back to its name; it is then served as an intercepted CONNECT tunnel to that
//! target is (`connect::intercept_io`). A connection to the instance's own lane address (a
//! client that follows `HTTPS_PROXY`, which stays set) is a proxy client like any other.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::uri::Authority;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::listener::{Arrival, Slot, serve_watched};
use super::{ConnCtx, Proxy, connect};
use crate::capture::{Captured, Names, fake_address};
use crate::journal::{Lane, ServeCapture};

/// How an exchange's `client_addr` starts when its connection was captured in an agent's
/// namespace rather than sent to the proxy: a call `proxy` mode would not see.
pub const CAPTURED: &str = "netns";

/// What a captured connection is read against: the namespace's names and the instance's
/// own lane.
pub(super) struct CaptureAt {
    names: Arc<Names>,
    lane: SocketAddr,
    /// DNS packets that were not queries, dropped.
    dropped: AtomicU64,
}

impl CaptureAt {
    /// Where a connection to `dst` was going: the name behind a fake address, else the
    /// address itself.
    fn authority(&self, dst: SocketAddr) -> Option<Authority> {
        let host = match dst.ip() {
            IpAddr::V4(a) if fake_address(a) => self.names.name(a).unwrap_or(a.to_string()),
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("[{a}]"),
        };
        format!("{host}:{}", dst.port()).parse().ok()
    }

    /// A connection to the lane itself (any loopback address, the lane's port).
    fn is_lane(&self, dst: SocketAddr) -> bool {
        dst.ip().is_loopback() && dst.port() == self.lane.port()
    }
}

impl Proxy {
    /// Serves agent namespaces' capture sockets on `lane` (whose proxy listener is at
    /// `addr`).
    pub(super) fn capture_server(&self, lane: Lane, addr: SocketAddr) -> ServeCapture {
        let proxy = self.clone();
        Arc::new(move |captured| proxy.serve_captured(captured, lane.clone(), addr))
    }

    fn serve_captured(
        &self,
        c: Captured,
        lane: Lane,
        addr: SocketAddr,
    ) -> std::io::Result<Box<dyn Send + Sync>> {
        let stop = CancellationToken::new();
        let at = Arc::new(CaptureAt {
            names: c.names.clone(),
            lane: addr,
            dropped: AtomicU64::new(0),
        });
        let until = |stop: CancellationToken, drain: CancellationToken| async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = drain.cancelled() => {}
            }
        };
        for l in c.tcp {
            let listener = tokio::net::TcpListener::from_std(l)?;
            let (proxy, lane, at) = (self.clone(), lane.clone(), at.clone());
            let ended = until(stop.clone(), self.inner.shutdown.drain.clone());
            tokio::spawn(async move {
                let arrival = Arrival::Captured(at);
                proxy
                    .serve_listener(listener, Some(lane), ended, arrival)
                    .await;
            });
        }
        let dns = tokio::net::UdpSocket::from_std(c.dns)?;
        let ended = until(stop.clone(), self.inner.shutdown.drain.clone());
        tokio::spawn(async move {
            let counted = at.clone();
            let count = move || {
                counted.dropped.fetch_add(1, Ordering::Relaxed);
            };
            tokio::select! {
                () = crate::capture::serve_dns(dns, at.names.clone(), count) => {}
                () = ended => {}
            }
            let dropped = at.dropped.load(Ordering::Relaxed);
            if dropped > 0 {
                tracing::info!(
                    "the agent's namespace sent {dropped} DNS packet(s) that were not queries; dropped"
                );
            }
        });
        Ok(Box::new(stop.drop_guard()))
    }
}

/// The destination `stream` had before the namespace's rules redirected it.
fn original_dst(stream: &TcpStream) -> std::io::Result<SocketAddr> {
    match stream.local_addr()? {
        SocketAddr::V4(_) => rustix::net::sockopt::ip_original_dst(stream).map(SocketAddr::V4),
        SocketAddr::V6(_) => rustix::net::sockopt::ipv6_original_dst(stream).map(SocketAddr::V6),
    }
    .map_err(std::io::Error::from)
}

/// Serves one captured connection (its `slot` under `proxy.max_connections` held to the
/// end).
pub(super) async fn serve(
    proxy: Proxy,
    ctx: ConnCtx,
    stream: TcpStream,
    slot: Slot,
    at: Arc<CaptureAt>,
) {
    let dst = match original_dst(&stream) {
        Ok(dst) => dst,
        Err(e) => {
            tracing::info!(
                "a captured connection from {} has no destination: {e}",
                ctx.peer
            );
            return;
        }
    };
    if at.is_lane(dst) {
        return serve_watched(proxy, ctx, stream, slot).await;
    }
    let Some(authority) = at.authority(dst) else {
        tracing::info!("a captured connection to {dst} has no authority");
        return;
    };
    let _slot = slot;
    // Its exchanges say they came around the proxy variables (`flakestorm doctor` reads it).
    let ctx = ConnCtx {
        peer_text: format!("{CAPTURED} {}", ctx.peer).into(),
        ..ctx
    };
    // An address the DNS did not give: the client named its target some other way
    // (`localhost`, /etc/hosts, a literal), which SNI or `Host` may say.
    let rename =
        !matches!(dst.ip(), IpAddr::V4(a) if fake_address(a) && at.names.name(a).is_some());
    connect::intercept_io(proxy, ctx, stream, authority, rename).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn at() -> CaptureAt {
        CaptureAt {
            names: Arc::new(Names::default()),
            lane: "127.0.0.1:4100".parse().unwrap(),
            dropped: AtomicU64::new(0),
        }
    }

    #[test]
    fn a_fake_address_is_its_name_and_others_are_themselves() {
        let at = at();
        let fake = at.names.address("llm.example").unwrap();
        let a = |s: &str| at.authority(s.parse().unwrap()).unwrap().to_string();
        assert_eq!(a(&format!("{fake}:443")), "llm.example:443");
        assert_eq!(a("127.0.0.1:9000"), "127.0.0.1:9000");
        assert_eq!(a("[::1]:9000"), "[::1]:9000");
        // A fake address the DNS never gave out stays an address (its connect fails).
        let unknown = SocketAddr::from((Ipv4Addr::new(198, 18, 9, 9), 80));
        assert_eq!(at.authority(unknown).unwrap().to_string(), "198.18.9.9:80");
    }

    #[test]
    fn the_lane_is_its_port_on_any_loopback_address() {
        let at = at();
        assert!(at.is_lane("127.0.0.1:4100".parse().unwrap()));
        assert!(at.is_lane("[::1]:4100".parse().unwrap()));
        assert!(!at.is_lane("127.0.0.1:4101".parse().unwrap()));
        assert!(!at.is_lane("10.0.0.1:4100".parse().unwrap()));
    }
}
