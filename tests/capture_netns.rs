//! `agent.capture: netns` at the namespace's edge (docs/capture.md): a real namespace made
//! by flakestorm's own supervisor, with an agent inside that connects to a literal address
//! on any port and to a name its DNS resolves. Each connection arrives on the capture
//! listener with its original destination, the name behind a fake address is known, the
//! driver's socket from the factory reaches the agent's own listener inside, and the agent
//! runs as the user who started flakestorm. (The proxy's side, with real agents and faults:
//! tests/frameworks/test_capture_netns.py.)
//!
//! A machine that cannot make the namespace fails this test with the reason, unless
//! FLAKESTORM_SKIP_NETNS=1 says to skip it.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use flakestorm::agent::{AgentProcess, supervise_with, wait_ready};
use flakestorm::capture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The agent: a listener of its own (its port on stdout), then a raw connection to a
/// literal address on an odd port, then one to a name (resolved by the namespace's DNS)
/// with a plain HTTP/1.1 request, each reply printed; its uid.
const AGENT: &str = r#"
import os, socket, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
print("PORT", srv.getsockname()[1], "UID", os.getuid(), flush=True)
c = socket.create_connection(("203.0.113.7", 8443), timeout=10); c.sendall(b"hello")
print("RAW", c.recv(100).decode(), flush=True)
addr = socket.getaddrinfo("svc.example", 80, socket.AF_INET)[0][4][0]
h = socket.create_connection((addr, 80), timeout=10)
h.sendall(b"GET / HTTP/1.1\r\nHost: svc.example\r\n\r\n")
print("HTTP", addr, h.recv(100).decode().split("\r\n")[0], flush=True)
a, _ = srv.accept(); a.sendall(b"pong"); a.close()
print("DONE", flush=True)
srv.accept()  # held until stopped: an exit here would race the test reading DONE
"#;

fn netns_available() -> bool {
    match capture::check() {
        Ok(()) => true,
        Err(why) if std::env::var("FLAKESTORM_SKIP_NETNS").as_deref() == Ok("1") => {
            eprintln!("skipped: {why} (FLAKESTORM_SKIP_NETNS=1)");
            false
        }
        Err(why) => panic!("{why} (set FLAKESTORM_SKIP_NETNS=1 to skip on purpose)"),
    }
}

/// The original destination of a captured connection.
fn original_dst(s: &tokio::net::TcpStream) -> SocketAddr {
    SocketAddr::V4(rustix::net::sockopt::ip_original_dst(s).unwrap())
}

/// Waits until the log has a line starting with `word`, and returns it.
async fn line(p: &mut AgentProcess, log: &std::path::Path, word: &str) -> String {
    let find = || {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with(word))
            .map(str::to_string)
    };
    let seen = || async { find().is_some() };
    wait_ready(Some(p), word, Duration::from_secs(20), seen)
        .await
        .unwrap();
    find().unwrap()
}

#[tokio::test]
async fn every_connection_of_the_agent_arrives_with_its_destination() {
    if !netns_available() {
        return;
    }
    supervise_with(env!("CARGO_BIN_EXE_flakestorm"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.log");
    let cmd = format!("exec python3 -c '{AGENT}'");
    let (mut p, ns) = AgentProcess::start_captured(&cmd, &[], Some(&log))
        .await
        .unwrap();
    let capture::Captured {
        mut tcp,
        dns,
        names,
    } = ns.captured;
    let dns = tokio::net::UdpSocket::from_std(dns).unwrap();
    tokio::spawn(capture::serve_dns(dns, names.clone(), || {}));
    let listener = tokio::net::TcpListener::from_std(tcp.remove(0)).unwrap();

    let started = line(&mut p, &log, "PORT").await;
    let words: Vec<&str> = started.split_whitespace().collect();
    let port: u16 = words[1].parse().unwrap();
    let uid: u32 = words[3].parse().unwrap();
    assert_eq!(
        uid,
        rustix::process::getuid().as_raw(),
        "the agent runs as its user"
    );

    // A literal address on an odd port: the connection is flakestorm's, destination kept.
    let (mut raw, _) = common::within("raw", listener.accept()).await.unwrap();
    assert_eq!(original_dst(&raw), "203.0.113.7:8443".parse().unwrap());
    let mut hello = [0u8; 5];
    raw.read_exact(&mut hello).await.unwrap();
    assert_eq!(&hello, b"hello");
    raw.write_all(b"captured").await.unwrap();
    assert_eq!(line(&mut p, &log, "RAW").await, "RAW captured");

    // A name: a fake address from the namespace's DNS, which maps back to it.
    let (mut http, _) = common::within("http", listener.accept()).await.unwrap();
    let dst = original_dst(&http);
    let IpAddr::V4(fake) = dst.ip() else {
        unreachable!()
    };
    assert!(capture::fake_address(fake), "{dst}");
    assert_eq!(names.name(fake).as_deref(), Some("svc.example"));
    assert_eq!(dst.port(), 80);
    let mut head = vec![0u8; 64];
    let n = http.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"GET / HTTP/1.1\r\nHost: svc.example"));
    http.write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
        .await
        .unwrap();
    let said = line(&mut p, &log, "HTTP").await;
    assert_eq!(said, format!("HTTP {fake} HTTP/1.1 204 No Content"));

    // flakestorm's own socket, made in the namespace, reaches the agent's listener there
    // and is not captured.
    let socket = ns.factory.socket(false).await.unwrap();
    let socket = tokio::net::TcpSocket::from_std_stream(socket);
    let mut to_agent = common::within(
        "connect",
        socket.connect(SocketAddr::from(([127, 0, 0, 1], port))),
    )
    .await
    .unwrap();
    let mut pong = vec![];
    to_agent.read_to_end(&mut pong).await.unwrap();
    assert_eq!(pong, b"pong");
    line(&mut p, &log, "DONE").await;
    p.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn a_namespace_that_cannot_be_set_up_is_an_error_not_a_hang() {
    if !netns_available() {
        return;
    }
    supervise_with(env!("CARGO_BIN_EXE_flakestorm"));
    // An `nft` that refuses the rules: the supervisor's setup fails and says which step.
    let dir = tempfile::tempdir().unwrap();
    let nft = dir.path().join("nft");
    std::fs::write(&nft, "#!/bin/sh\necho 'nft: no nat here' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&nft, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", dir.path().display());
    let env = vec![("PATH".to_string(), path)];
    let started = common::within(
        "start",
        AgentProcess::start_captured("sleep 30", &env, None),
    )
    .await;
    let err = started
        .err()
        .expect("no namespace without its rules")
        .to_string();
    assert!(err.contains("network namespace"), "{err}");
    assert!(
        err.contains("`nft -f -` failed") && err.contains("no nat here"),
        "{err}"
    );
}
