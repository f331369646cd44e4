//! Which destinations the proxy refuses, decided on resolved socket addresses (never on
//! the spelling of a host: `127.1`, `2130706433`, `0x7f000001`, `[::ffff:127.0.0.1]` all
//! resolve to the same thing): its own listeners (proxy and control ports) always, and
//! loopback or link-local addresses when it listens off loopback, unless
//! `proxy.allow_loopback_targets` lists them. Every upstream connection (pooled client,
//! CONNECT tunnels, upgrades) is opened by `connect` here, on an address `check` allowed.

use std::net::{IpAddr, SocketAddr};
use std::sync::RwLock;
use std::time::Duration;

use tokio::net::TcpStream;

use super::rescue::{ErrorKind, ProxyError};
use crate::config::TargetRule;

#[derive(Debug)]
pub struct Guard {
    /// The bound proxy and control listeners, and the pool instances' lanes while open.
    own: RwLock<Vec<SocketAddr>>,
    /// The proxy listens off loopback: loopback and link-local targets are refused.
    off_loopback: bool,
    allow: Vec<TargetRule>,
}

impl Guard {
    pub fn new(listen: IpAddr, allow: Vec<TargetRule>) -> Guard {
        Guard {
            own: RwLock::new(vec![]),
            off_loopback: !listen.to_canonical().is_loopback(),
            allow,
        }
    }

    /// Records the bound listeners (first call wins: one daemon, one set of listeners).
    pub fn set_own(&self, addrs: Vec<SocketAddr>) {
        let mut own = self.own.write().unwrap_or_else(|p| p.into_inner());
        if own.is_empty() {
            *own = addrs;
        }
    }

    /// Adds (`open`) or removes a lane's listener.
    pub fn lane(&self, addr: SocketAddr, open: bool) {
        let mut own = self.own.write().unwrap_or_else(|p| p.into_inner());
        own.retain(|a| *a != addr);
        if open {
            own.push(addr);
        }
    }

    /// Whether `host` (an IP literal, bracketed or not, or `localhost`) and `port` name one
    /// of the bound listeners. No lookup: other names are never the listener's here.
    pub fn names_own(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ip = match host.parse::<IpAddr>() {
            Ok(ip) => ip.to_canonical(),
            Err(_) if host.eq_ignore_ascii_case("localhost") => IpAddr::from([127, 0, 0, 1]),
            Err(_) => return false,
        };
        let own = self.own.read().unwrap_or_else(|p| p.into_inner());
        own.iter().any(|l| l.port() == port) && is_this_machine(ip)
    }

    /// Why `addr` may not be forwarded to, if it may not.
    pub fn check(&self, addr: SocketAddr) -> Result<(), String> {
        let ip = addr.ip().to_canonical();
        let port = addr.port();
        let own = self
            .own
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|l| l.port() == port);
        if own && is_this_machine(ip) {
            return Err(format!(
                "{addr} is flakestorm's own proxy or control listener; the proxy does not \
                 forward to itself"
            ));
        }
        if self.off_loopback
            && (ip.is_loopback() || ip.is_unspecified() || is_link_local(ip))
            && !self.allow.iter().any(|r| r.matches(ip, port))
        {
            return Err(format!(
                "{addr} is a loopback or link-local address and the proxy listens off \
                 loopback; list it in proxy.allow_loopback_targets to allow it"
            ));
        }
        Ok(())
    }

    /// Resolves `host:port` and checks every address: one refused address refuses the
    /// destination (a name that also points at loopback is not trusted for its others).
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ProxyError> {
        let authority = format!("{host}:{port}");
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| {
                ProxyError::new(
                    ErrorKind::UpstreamConnect,
                    format!(
                        "could not connect to upstream {authority}: could not resolve `{host}`: {e}"
                    ),
                )
            })?
            .collect();
        for a in &addrs {
            if let Err(why) = self.check(*a) {
                return Err(ProxyError::new(
                    ErrorKind::ForbiddenTarget,
                    format!("refused to forward to {authority}: {why}"),
                ));
            }
        }
        if addrs.is_empty() {
            return Err(ProxyError::new(
                ErrorKind::UpstreamConnect,
                format!("could not connect to upstream {authority}: `{host}` has no address"),
            ));
        }
        Ok(addrs)
    }

    /// Opens a TCP connection (TCP_NODELAY) to the first allowed address of `host:port`
    /// that answers, all attempts together bounded by `timeout`.
    pub async fn connect(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<TcpStream, ProxyError> {
        let authority = format!("{host}:{port}");
        let timed_out = || {
            let secs = timeout.as_secs_f64();
            ProxyError::new(
                ErrorKind::UpstreamTimeout,
                format!("connecting to upstream {authority} timed out after {secs}s"),
            )
        };
        let attempt = async {
            let addrs = self.resolve(host, port).await?;
            // Each address gets its share of the time: a black-holed first address (often
            // IPv6 in containers) must not use it all before the next is tried.
            let share = timeout / u32::try_from(addrs.len().max(1)).unwrap_or(u32::MAX);
            let mut last = None;
            for a in addrs {
                match tokio::time::timeout(share, TcpStream::connect(a)).await {
                    Ok(Ok(s)) => {
                        let _ = s.set_nodelay(true);
                        return Ok(s);
                    }
                    Ok(Err(e)) => last = Some(e),
                    Err(_) => last = Some(std::io::ErrorKind::TimedOut.into()),
                }
            }
            let e = last.unwrap_or_else(|| std::io::Error::other("no address"));
            Err(super::forward::classify(&e, true, &authority))
        };
        tokio::time::timeout(timeout, attempt)
            .await
            .map_err(|_| timed_out())?
    }
}

/// Whether `ip` is an address of this machine: loopback, unspecified (connecting to
/// 0.0.0.0 or :: reaches the local host), or one a socket can bind (an interface address).
fn is_this_machine(ip: IpAddr) -> bool {
    ip.is_loopback()
        || ip.is_unspecified()
        || std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// 169.254.0.0/16 and fe80::/10.
fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_target_rule;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn guard(listen: &str, allow: &[&str]) -> Guard {
        let allow = allow
            .iter()
            .flat_map(|e| parse_target_rule(e).unwrap())
            .collect();
        let g = Guard::new(listen.parse().unwrap(), allow);
        let own_ip: IpAddr = listen.parse().unwrap();
        g.set_own(vec![SocketAddr::new(own_ip, 8080), sa("127.0.0.1:8081")]);
        g
    }

    #[test]
    fn own_listeners_are_refused_by_every_address_of_this_machine() {
        for listen in ["127.0.0.1", "0.0.0.0", "::"] {
            let g = guard(listen, &["127.0.0.0/8", "::1", "0.0.0.0"]);
            for target in [
                "127.0.0.1:8080",
                "127.0.0.1:8081",
                "127.0.0.2:8080",
                "0.0.0.0:8080",
                "[::]:8081",
                "[::1]:8080",
                "[::ffff:127.0.0.1]:8081",
            ] {
                assert!(g.check(sa(target)).is_err(), "{listen}: {target} allowed");
            }
            // Another port on loopback is an ordinary local tool.
            if listen == "127.0.0.1" {
                assert!(g.check(sa("127.0.0.1:9000")).is_ok());
            }
        }
    }

    #[test]
    fn an_interface_address_reaches_a_wildcard_listener() {
        // Any address a socket can bind is this machine's; skip if there is none but
        // loopback (the rule is then covered above).
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        let local = probe
            .connect("192.0.2.1:9")
            .and_then(|()| probe.local_addr())
            .map(|a| a.ip());
        if let Ok(ip) = local
            && !ip.is_loopback()
            && !ip.is_unspecified()
        {
            let g = guard("0.0.0.0", &[]);
            let err = g.check(SocketAddr::new(ip, 8080)).unwrap_err();
            assert!(err.contains("own proxy or control listener"), "{err}");
            assert!(g.check(SocketAddr::new(ip, 9000)).is_ok());
        }
    }

    #[test]
    fn off_loopback_refuses_loopback_and_link_local_unless_listed() {
        let g = guard("0.0.0.0", &["127.0.0.1:9000", "fe80::/10"]);
        for target in [
            "127.0.0.1:9001",
            "127.5.5.5:80",
            "[::1]:80",
            "[::ffff:127.0.0.1]:80",
            "169.254.169.254:80",
            "[::ffff:169.254.1.1]:80",
            "0.0.0.0:80",
        ] {
            let err = g.check(sa(target)).unwrap_err();
            assert!(err.contains("allow_loopback_targets"), "{target}: {err}");
        }
        assert!(g.check(sa("127.0.0.1:9000")).is_ok());
        assert!(g.check(sa("[fe80::1]:80")).is_ok());
        assert!(g.check(sa("93.184.216.34:443")).is_ok());
    }

    #[test]
    fn loopback_listen_leaves_ordinary_local_destinations_alone() {
        let g = guard("127.0.0.1", &[]);
        for target in ["127.0.0.1:9000", "[::1]:9000", "169.254.169.254:80"] {
            assert!(g.check(sa(target)).is_ok(), "{target}");
        }
        let g = guard("::1", &[]);
        assert!(g.check(sa("127.0.0.1:9000")).is_ok());
    }

    #[tokio::test]
    async fn numeric_spellings_resolve_to_the_refused_address() {
        let g = guard("127.0.0.1", &[]);
        for host in [
            "127.0.0.1",
            "localhost",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0.0.0.0",
            "::1",
        ] {
            let err = g.resolve(host, 8081).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::ForbiddenTarget, "{host}: {err}");
        }
    }
}
