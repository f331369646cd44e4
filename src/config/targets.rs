//! `proxy.allow_loopback_targets` entries: which loopback or link-local destinations a
//! proxy listening off loopback may still forward to. Parsed here (config owns the syntax);
//! the proxy's target guard applies them to resolved socket addresses.
//!
//! Forms: `127.0.0.1`, `127.0.0.1:9000`, `[::1]:9000`, `::1`, a CIDR (`127.0.0.0/8`,
//! `fe80::/10`, any port), `localhost` or `localhost:9000` (both 127.0.0.1 and ::1).

use std::net::IpAddr;

/// One parsed entry: addresses in `net/prefix`, on `port` (any port when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRule {
    net: IpAddr,
    prefix: u8,
    port: Option<u16>,
}

impl TargetRule {
    /// Whether `ip:port` falls under this rule (IPv4-mapped IPv6 compares as IPv4).
    pub fn matches(&self, ip: IpAddr, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && in_net(ip.to_canonical(), self.net, self.prefix)
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

const FORMS: &str = "expected an IP (127.0.0.1), IP:port (127.0.0.1:9000, [::1]:9000), a CIDR \
                     (127.0.0.0/8, fe80::/10) or localhost[:port]";

/// Parses one entry; `localhost` yields two rules (127.0.0.1 and ::1).
pub fn parse_target_rule(entry: &str) -> Result<Vec<TargetRule>, String> {
    let bad = || format!("`{entry}`: {FORMS}");
    let s = entry.trim();
    let host_rule = |ip: IpAddr, port| {
        let prefix = if ip.is_ipv4() { 32 } else { 128 };
        TargetRule {
            net: ip,
            prefix,
            port,
        }
    };
    let port_of = |p: &str| p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(bad);
    if let Some(rest) = s.strip_prefix("localhost") {
        let port = match rest {
            "" => None,
            _ => Some(port_of(rest.strip_prefix(':').ok_or_else(bad)?)?),
        };
        return Ok(vec![
            host_rule(IpAddr::from([127, 0, 0, 1]), port),
            host_rule(IpAddr::from(std::net::Ipv6Addr::LOCALHOST), port),
        ]);
    }
    if let Some((net, prefix)) = s.split_once('/') {
        let net: IpAddr = net.parse().map_err(|_| bad())?;
        let net = net.to_canonical();
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix
            .parse::<u8>()
            .ok()
            .filter(|&p| p <= max)
            .ok_or_else(bad)?;
        return Ok(vec![TargetRule {
            net,
            prefix,
            port: None,
        }]);
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(vec![host_rule(ip.to_canonical(), None)]);
    }
    if let Ok(sa) = s.parse::<std::net::SocketAddr>() {
        let port = port_of(&sa.port().to_string())?;
        return Ok(vec![host_rule(sa.ip().to_canonical(), Some(port))]);
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(entry: &str, ip: &str, port: u16) -> bool {
        parse_target_rule(entry)
            .unwrap()
            .iter()
            .any(|r| r.matches(ip.parse().unwrap(), port))
    }

    #[test]
    fn every_documented_form_parses_and_matches_what_it_says() {
        assert!(ok("127.0.0.1", "127.0.0.1", 1));
        assert!(!ok("127.0.0.1", "127.0.0.2", 1));
        assert!(ok("127.0.0.1:9000", "127.0.0.1", 9000));
        assert!(!ok("127.0.0.1:9000", "127.0.0.1", 9001));
        assert!(ok("[::1]:9000", "::1", 9000));
        assert!(ok("::1", "::1", 5));
        assert!(ok("127.0.0.0/8", "127.9.9.9", 5));
        assert!(ok("127.0.0.0/8", "::ffff:127.9.9.9", 5));
        assert!(!ok("127.0.0.0/8", "128.0.0.1", 5));
        assert!(ok("fe80::/10", "fe80::1", 5));
        assert!(ok("169.254.169.254", "169.254.169.254", 80));
        assert!(ok("localhost:9000", "::1", 9000));
        assert!(ok("localhost", "127.0.0.1", 1));
        assert!(!ok("localhost:9000", "127.0.0.1", 80));
    }

    #[test]
    fn malformed_entries_are_errors_that_show_the_forms() {
        for bad in [
            "",
            "example.com",
            "127.0.0.1:99999",
            "127.0.0.1:0",
            "10.0.0.0/33",
            "localhost:",
            "localhostx",
            "::1:9000:x",
        ] {
            let e = parse_target_rule(bad).unwrap_err();
            assert!(e.contains("CIDR"), "{bad}: {e}");
        }
    }
}
