//! No open proxy by accident (issue #9): the proxy never forwards to its own listeners,
//! whatever the spelling of the address and whichever way (absolute-form, intercepted or
//! blind CONNECT); off loopback it needs `proxy.users` or `--allow-open-proxy`, and refuses
//! loopback destinations that `proxy.allow_loopback_targets` does not list.

mod common;

use std::net::SocketAddr;

use common::origin;
use common::raw::raw;
use common::*;
use flakestorm::config::{self, Overrides};
use flakestorm::daemon::{Daemon, DaemonError};
use flakestorm::exchange::Outcome;

/// Every way of writing "this machine" that resolves to it.
const SPELLINGS: &[&str] = &[
    "127.0.0.1",
    "localhost",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0.0.0.0",
    "[::]",
    "[::1]",
    "[::ffff:127.0.0.1]",
];

fn assert_forbidden(head: &str, what: &str) {
    assert!(head.starts_with("HTTP/1.1 403"), "{what}: {head}");
    assert!(
        head.contains("x-flakestorm-error: forbidden_target"),
        "{what}: {head}"
    );
}

#[tokio::test]
async fn absolute_form_requests_to_the_daemons_own_ports_are_refused() {
    let p = start_proxy("").await;
    let ports = [p.daemon.control_addr.port(), p.addr().port()];
    for host in SPELLINGS {
        for port in ports {
            let req = format!(
                "PUT http://{host}:{port}/v1/chaos HTTP/1.1\r\nHost: {host}:{port}\r\n\
                 Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
            );
            assert_forbidden(
                &raw(p.addr(), req.as_bytes()).await,
                &format!("{host}:{port}"),
            );
        }
    }
    // Journaled as the client's refused request, not as an upstream failure.
    let all = p.daemon.journal.all();
    let Outcome::Error { error, status } = &all.last().unwrap().outcome else {
        panic!()
    };
    assert_eq!(
        (error.kind.name(), *status),
        ("forbidden_target", Some(403))
    );
    assert!(
        error.message.contains("own proxy or control listener"),
        "{}",
        error.message
    );
    // An ordinary local tool on another port is still reachable.
    let o = origin::fixed(None, "tool").await;
    assert_eq!(get_text(&client_via(&p, H1), o.http_url("/")).await, "tool");
    p.stop().await;
}

#[tokio::test]
async fn connect_to_the_daemons_own_ports_is_refused_intercepted_or_blind() {
    for yaml in ["", "proxy: {passthrough: ['*']}"] {
        let p = start_proxy(yaml).await;
        let control = p.daemon.control_addr.port();
        for host in SPELLINGS {
            let req =
                format!("CONNECT {host}:{control} HTTP/1.1\r\nHost: {host}:{control}\r\n\r\n");
            assert_forbidden(
                &raw(p.addr(), req.as_bytes()).await,
                &format!("{yaml} {host}"),
            );
        }
        p.stop().await;
    }
}

fn config_with(listen: &str, extra: &str) -> (flakestorm::config::Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(
        &path,
        format!(
            "proxy:\n  listen: '{listen}'\n{extra}control:\n  listen: 127.0.0.1:0\nca:\n  dir: {}\n",
            dir.path().join("ca").display()
        ),
    )
    .unwrap();
    let loaded = config::load_with_env(Some(&path), &Overrides::default(), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    (loaded.config, dir)
}

#[tokio::test]
async fn a_non_loopback_listen_without_users_refuses_to_start() {
    for listen in ["0.0.0.0:0", "[::]:0", "192.0.2.7:0"] {
        let (config, _dir) = config_with(listen, "");
        let Err(e) = Daemon::start(&config).await else {
            panic!("{listen}: an open proxy started")
        };
        assert!(matches!(e, DaemonError::OpenProxy(_)), "{listen}: {e}");
        let text = e.to_string();
        for needle in ["proxy.listen", "proxy.users", "--allow-open-proxy"] {
            assert!(text.contains(needle), "{text}");
        }
    }
    // With users, the same listen is not refused by this rule (192.0.2.7 is not local, so
    // binding fails instead: the open-proxy check comes first and passed).
    let (config, _dir) = config_with("192.0.2.7:0", "  users: [{name: agent, password: pw}]\n");
    let e = Daemon::start(&config)
        .await
        .err()
        .expect("cannot bind 192.0.2.7");
    assert!(matches!(e, DaemonError::Bind { .. }), "{e}");
}

/// Off loopback (allowed explicitly), loopback destinations are refused unless listed; the
/// client reaches the wildcard listener on 127.0.0.1, so no network is involved.
#[tokio::test]
async fn off_loopback_the_proxy_refuses_loopback_targets_it_was_not_told_about() {
    let listed = origin::fixed(None, "listed").await;
    let unlisted = origin::fixed(None, "unlisted").await;
    let (mut config, dir) = config_with(
        "0.0.0.0:0",
        &format!("  allow_loopback_targets: ['{}']\n", listed.addr),
    );
    config.allow_open_proxy = true;
    let p = start_with(&config, dir).await;
    let proxy = SocketAddr::from(([127, 0, 0, 1], p.addr().port()));
    let get = |a: SocketAddr| format!("GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\n\r\n");
    let head = raw(proxy, get(listed.addr).as_bytes()).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let head = raw(proxy, get(unlisted.addr).as_bytes()).await;
    assert_forbidden(&head, "unlisted loopback target");
    assert_eq!(unlisted.log.len(), 0);
    let head = raw(
        proxy,
        b"GET http://169.254.169.254/latest HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
    )
    .await;
    assert_forbidden(&head, "link-local metadata address");
    // The daemon's own ports stay refused even though 0.0.0.0 is bound.
    let control = p.daemon.control_addr;
    assert_forbidden(&raw(proxy, get(control).as_bytes()).await, "control");
    // So is the proxy's own port at this machine's interface address, if it has one.
    if let Some(ip) = interface_address() {
        let own = SocketAddr::new(ip, p.addr().port());
        assert_forbidden(&raw(proxy, get(own).as_bytes()).await, "interface address");
    }
    p.stop().await;
}

/// A non-loopback address of this machine (the source address a UDP socket would use; no
/// packet is sent), if there is one.
fn interface_address() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}
