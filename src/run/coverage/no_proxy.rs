//! Whether a `NO_PROXY` value sends a URL glob's requests around the proxy, read the way
//! curl, Python's requests/urllib, httpx and undici read it: a comma (or space) separated
//! list, without regard to case; `*` alone covers every host; a name covers itself and its
//! subdomains, with or without a leading `.` or `*.`; `host:port` only that port; an IP
//! address itself, and `addr/prefix` (CIDR, IPv4 or IPv6) the literal addresses in it.
//! A glob whose host is a pattern (`*.example.com`) is covered when every host it names
//! is. Names are not resolved (`localhost` does not cover `127.0.0.1`), as none of these
//! clients does. Pure.

use std::net::IpAddr;

/// The entry of `no_proxy` that covers the requests of URL glob `glob`, if one does.
pub(crate) fn covering<'a>(no_proxy: &'a str, glob: &str) -> Option<&'a str> {
    let mut entries = no_proxy
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty());
    if let Some(all) = entries.clone().find(|e| *e == "*") {
        return Some(all);
    }
    let target = Target::of(glob)?;
    entries.find(|e| covers(e, &target))
}

/// The host and port a URL glob's requests go to.
#[derive(Debug)]
struct Target {
    /// Lowercase, without brackets; `*.` kept for a subdomain pattern.
    host: String,
    /// The port written, else the scheme's; `None` when neither is known.
    port: Option<u16>,
}

impl Target {
    fn of(glob: &str) -> Option<Target> {
        let (scheme, rest) = match glob.split_once("://") {
            Some((s, r)) => (s, r),
            None => ("", glob),
        };
        let authority = rest.split(['/', '?', '#']).next()?;
        let authority = authority.rsplit('@').next()?;
        let (host, port) = split_port(authority);
        let port = match port {
            Some("*") => None,
            Some(p) => Some(p.parse().ok()?),
            None => match scheme {
                "http" | "ws" => Some(80),
                "https" | "wss" => Some(443),
                _ => None,
            },
        };
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        // A host that is a pattern other than a subdomain one cannot be told covered.
        let pattern = host.strip_prefix("*.").unwrap_or(&host);
        if host.is_empty() || pattern.contains(['*', '?', '[', '{']) {
            return None;
        }
        Some(Target { host, port })
    }
}

/// `host` and `port` of `host:port`, `[v6]:port` or a host alone (an IPv6 address
/// unbracketed has no port).
fn split_port(s: &str) -> (&str, Option<&str>) {
    if let Some(end) = s.find(']') {
        let port = s[end + 1..].strip_prefix(':');
        return (&s[..=end], port);
    }
    match s.split_once(':') {
        Some((h, p)) if !p.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

fn covers(entry: &str, target: &Target) -> bool {
    let entry = entry.to_ascii_lowercase();
    let (name, port) = split_port(&entry);
    if let Some(p) = port
        && (target.port.is_none() || p.parse::<u16>().ok() != target.port)
    {
        return false;
    }
    let name = name.trim_matches(['[', ']']);
    if let Some((net, bits)) = name.split_once('/') {
        return in_network(&target.host, net, bits);
    }
    let domain = name.trim_start_matches("*.").trim_start_matches('.');
    if domain.is_empty() {
        return false;
    }
    let under = |host: &str| host.ends_with(&format!(".{domain}")) && !is_ip(domain);
    // `*.example.com` as a target: every host it names is under `domain` when its own
    // suffix is, or is `domain`.
    match target.host.strip_prefix("*.") {
        Some(suffix) => suffix == domain && !is_ip(domain) || under(suffix),
        None => target.host == domain || under(&target.host) && !is_ip(&target.host),
    }
}

fn is_ip(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok()
}

/// Whether the literal address `host` is in `net/bits`.
fn in_network(host: &str, net: &str, bits: &str) -> bool {
    let (Ok(host), Ok(net), Ok(bits)) = (
        host.parse::<IpAddr>(),
        net.parse::<IpAddr>(),
        bits.parse::<u32>(),
    ) else {
        return false;
    };
    let (h, n, width) = match (host, net) {
        (IpAddr::V4(h), IpAddr::V4(n)) => (u128::from(h.to_bits()), u128::from(n.to_bits()), 32),
        (IpAddr::V6(h), IpAddr::V6(n)) => (h.to_bits(), n.to_bits(), 128),
        _ => return false,
    };
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift >= width || h >> shift == n >> shift
}

#[cfg(test)]
mod tests {
    use super::covering;

    #[test]
    fn names_cover_themselves_and_their_subdomains() {
        let glob = "https://api.openai.com/v1/*";
        for covered in [
            "api.openai.com",
            "openai.com",
            ".openai.com",
            "*.openai.com",
            "OPENAI.COM",
            "*",
        ] {
            assert_eq!(covering(covered, glob), Some(covered), "{covered}");
        }
        for not in ["notopenai.com", "api.openai.co", "com.openai", ""] {
            assert_eq!(covering(not, glob), None, "{not}");
        }
        assert_eq!(
            covering("localhost, example.org , openai.com", glob),
            Some("openai.com")
        );
        assert_eq!(covering("localhost example.org", glob), None);
    }

    #[test]
    fn ports_count_when_written() {
        let glob = "http://127.0.0.1:4010/search*";
        assert_eq!(covering("127.0.0.1", glob), Some("127.0.0.1"));
        assert_eq!(covering("127.0.0.1:4010", glob), Some("127.0.0.1:4010"));
        assert_eq!(covering("127.0.0.1:4011", glob), None);
        // The scheme's port when the glob names none.
        assert!(covering("api.example:443", "https://api.example/*").is_some());
        assert!(covering("api.example:80", "https://api.example/*").is_none());
        // A glob that names no scheme and no port: a port entry cannot be told to cover it.
        assert!(covering("api.example:443", "*://api.example/*").is_none());
        assert!(covering("api.example", "*://api.example/*").is_some());
    }

    #[test]
    fn addresses_match_whole_or_by_network() {
        let glob = "http://10.1.2.3:8080/*";
        assert!(covering("10.0.0.0/8", glob).is_some());
        assert!(covering("10.1.2.0/24", glob).is_some());
        assert!(covering("10.1.3.0/24", glob).is_none());
        assert!(covering("0.0.0.0/0", glob).is_some());
        // An address is not a domain: `2.3` is no suffix of it.
        assert!(covering("2.3", glob).is_none());
        assert!(covering("localhost", "http://127.0.0.1:1/*").is_none());
        let v6 = "http://[::1]:9000/*";
        assert!(covering("::1", v6).is_some());
        assert!(covering("[::1]:9000", v6).is_some());
        assert!(covering("::/0", v6).is_some());
        assert!(covering("fe80::/10", v6).is_none());
        assert!(covering("10.0.0.0/99", glob).is_none(), "a bad prefix");
    }

    #[test]
    fn a_subdomain_pattern_is_covered_only_whole() {
        let glob = "https://*.search.example/*";
        assert!(covering("search.example", glob).is_some());
        assert!(covering(".example", glob).is_some());
        assert!(covering("a.search.example", glob).is_none());
        // Other patterns cannot be decided: never blamed, but by `*`.
        assert!(covering("example", "https://api-*.example/*").is_none());
        assert_eq!(covering("a, *", "https://api-*.example/*"), Some("*"));
        assert!(covering("127.0.0.1", "http://127.0.0.1:*/*").is_some());
    }
}
