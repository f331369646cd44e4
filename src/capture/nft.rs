//! The namespace's redirection rules as nftables text (pure): every TCP connection the
//! agent opens, to any address and port, is redirected to the capture listener, and every
//! DNS query over UDP to flakestorm's DNS socket; sockets carrying [`MARK`] (flakestorm's
//! own, opened in the namespace to reach the agent) are left alone.

use super::MARK;

/// The ports inside the namespace that traffic is redirected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// The capture listener on 127.0.0.1.
    pub tcp4: u16,
    /// The capture listener on ::1, when the namespace has IPv6.
    pub tcp6: Option<u16>,
    /// The DNS socket on 127.0.0.1.
    pub dns: u16,
}

/// The ruleset, for `nft -f -`. A NAT `output` hook: locally generated packets are all the
/// agent sends (the namespace has no other interface than `lo`), and `redirect` sends each
/// new connection to the loopback address of its family with the port changed, keeping the
/// original destination for `SO_ORIGINAL_DST`.
pub fn ruleset(ports: Ports) -> String {
    let mut rules = vec![
        format!("meta mark {MARK:#x} return"),
        format!("meta nfproto ipv4 udp dport 53 redirect to :{}", ports.dns),
        format!(
            "meta nfproto ipv4 meta l4proto tcp redirect to :{}",
            ports.tcp4
        ),
    ];
    if let Some(p) = ports.tcp6 {
        rules.push(format!(
            "meta nfproto ipv6 meta l4proto tcp redirect to :{p}"
        ));
    }
    let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
    format!(
        "table inet flakestorm {{\n  chain output {{\n    type nat hook output priority -100; \
         policy accept;\n{rules}  }}\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tcp_connection_and_dns_query_is_redirected_but_marked_sockets() {
        let text = ruleset(Ports {
            tcp4: 4000,
            tcp6: Some(4001),
            dns: 5300,
        });
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(
            lines,
            [
                "table inet flakestorm {",
                "chain output {",
                "type nat hook output priority -100; policy accept;",
                "meta mark 0x4653 return",
                "meta nfproto ipv4 udp dport 53 redirect to :5300",
                "meta nfproto ipv4 meta l4proto tcp redirect to :4000",
                "meta nfproto ipv6 meta l4proto tcp redirect to :4001",
                "}",
                "}",
            ]
        );
        // The exemption comes first: a rule after it would redirect flakestorm's own sockets.
        assert!(text.find("mark").unwrap() < text.find("redirect").unwrap());
    }

    #[test]
    fn without_ipv6_there_is_no_ipv6_rule() {
        let text = ruleset(Ports {
            tcp4: 1,
            tcp6: None,
            dns: 2,
        });
        assert!(!text.contains("ipv6"), "{text}");
    }
}
