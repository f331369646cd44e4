//! No client connection lives forever, and the proxy refuses connections over its cap:
//! header, idle and TLS-handshake deadlines and `proxy.max_connections`, with their
//! metrics. Timing runs on paused tokio time: deadlines elapse as soon as everything waits.

mod common;

use std::time::Duration;

use common::origin;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

const LIMITS: &str = "proxy:\n  header_timeout_ms: 5000\n  idle_timeout_ms: 12000\n  tls_handshake_timeout_ms: 7000\n";

/// Reads until the proxy closes the connection; returns what was read and when it closed.
async fn read_until_closed(s: &mut TcpStream) -> (String, Instant) {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return (String::from_utf8_lossy(&all).into_owned(), Instant::now()),
            Ok(n) => all.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads one response head (and a short body, `content-length` bytes) from `s`.
async fn read_response(s: &mut TcpStream) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "closed mid-response: {}",
            String::from_utf8_lossy(&all)
        );
        all.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&all).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .map_or(0, |v| v.trim().parse().unwrap());
            if body.len() >= len {
                return text;
            }
        }
    }
}

fn metric(p: &TestProxy, line: &str) -> bool {
    p.daemon.metrics.encode().contains(line)
}

fn assert_closed_after(opened: Instant, closed: Instant, limit: Duration) {
    let took = closed - opened;
    assert!(
        took >= limit && took < limit + Duration::from_secs(1),
        "closed after {took:?}, expected {limit:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_no_byte_is_closed_after_the_header_timeout() {
    let p = start_proxy(LIMITS).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    let opened = Instant::now();
    let (got, closed) = within("silent connection closed", read_until_closed(&mut s)).await;
    assert_eq!(got, "");
    assert_closed_after(opened, closed, Duration::from_secs(5));
    assert!(metric(
        &p,
        r#"flakestorm_connection_timeouts_total{kind="header"} 1"#
    ));
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn half_a_request_line_is_closed_after_the_header_timeout() {
    let p = start_proxy(LIMITS).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    let opened = Instant::now();
    s.write_all(b"GET http://127.0.0.1:9/ HT").await.unwrap();
    let (_, closed) = within("half request line closed", read_until_closed(&mut s)).await;
    assert_closed_after(opened, closed, Duration::from_secs(5));
    assert!(metric(
        &p,
        r#"flakestorm_connection_timeouts_total{kind="header"} 1"#
    ));
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let o = origin::fixed(None, "hi").await;
    let p = start_proxy(LIMITS).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    let req = format!(
        "GET {} HTTP/1.1\r\nhost: {}\r\n\r\n",
        o.http_url("/"),
        o.addr
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let resp = within("first response", read_response(&mut s)).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // Idle, not header: the connection outlives the 5 s header timeout.
    let idle_from = Instant::now();
    let (_, closed) = within("idle connection closed", read_until_closed(&mut s)).await;
    assert_closed_after(idle_from, closed, Duration::from_secs(12));
    assert!(metric(
        &p,
        r#"flakestorm_connection_timeouts_total{kind="idle"} 1"#
    ));
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_connection_serves_requests_slower_than_every_deadline() {
    let o = origin::start(None, |_req| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        origin::text("late")
    })
    .await;
    let p = start_proxy(LIMITS).await;
    let client = client_via(&p, H1);
    for _ in 0..2 {
        let slow = get_text(&client, o.http_url("/slow"));
        let body = tokio::time::timeout(Duration::from_secs(120), slow).await;
        assert_eq!(body.expect("slow response arrives"), "late");
    }
    assert!(
        !p.daemon
            .metrics
            .encode()
            .contains("connection_timeouts_total{")
    );
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_connect_with_a_partial_tls_record_is_closed_after_the_handshake_timeout() {
    let p = start_proxy(LIMITS).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(b"CONNECT api.example.test:443 HTTP/1.1\r\nhost: api.example.test:443\r\n\r\n")
        .await
        .unwrap();
    let resp = within("CONNECT answered", read_response(&mut s)).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // A TLS handshake record header promising 512 bytes, and only 2 of them.
    s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
        .await
        .unwrap();
    let sent = Instant::now();
    let (_, closed) = within("stuck handshake closed", read_until_closed(&mut s)).await;
    assert_closed_after(sent, closed, Duration::from_secs(7));
    assert!(metric(
        &p,
        r#"flakestorm_connection_timeouts_total{kind="tls_handshake"} 1"#
    ));
    assert!(metric(
        &p,
        r#"flakestorm_tls_handshakes_total{result="error"} 1"#
    ));
    p.stop().await;
}

/// Waits (on paused time) until the open-connections gauge reads `n`.
async fn open_connections_reach(p: &TestProxy, n: usize) {
    let line = format!("flakestorm_active_connections {n}\n");
    within("open connections gauge", async {
        while !metric(p, &line) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn over_the_cap_a_connection_is_refused_and_counted_and_traffic_goes_on() {
    let o = origin::fixed(None, "hi").await;
    let p = start_proxy(
        "proxy:\n  max_connections: 1\n  passthrough: [\"127.0.0.1\"]\n  header_timeout_ms: 5000\n",
    )
    .await;
    // The one slot is held by a blind CONNECT tunnel: a tunnel keeps its slot after the upgrade.
    let mut tunnel = TcpStream::connect(p.addr()).await.unwrap();
    let connect = format!("CONNECT {0} HTTP/1.1\r\nhost: {0}\r\n\r\n", o.addr);
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    let resp = within("CONNECT answered", read_response(&mut tunnel)).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    open_connections_reach(&p, 1).await;

    let mut refused = TcpStream::connect(p.addr()).await.unwrap();
    let (got, _) = within("refused connection closed", read_until_closed(&mut refused)).await;
    assert!(got.starts_with("HTTP/1.1 503"), "{got}");
    assert!(
        got.contains("x-flakestorm-error: connection_limit"),
        "{got}"
    );
    assert!(metric(
        &p,
        r#"flakestorm_connections_rejected_total{reason="cap"} 1"#
    ));

    // The tunnel still works, and once it closes the slot is free again.
    let req = format!("GET / HTTP/1.1\r\nhost: {}\r\n\r\n", o.addr);
    tunnel.write_all(req.as_bytes()).await.unwrap();
    let through = within("request through the tunnel", read_response(&mut tunnel)).await;
    assert!(through.ends_with("hi"), "{through}");
    drop(tunnel);
    open_connections_reach(&p, 0).await;
    let client = client_via(&p, H1);
    assert_eq!(
        within("after the cap", get_text(&client, o.http_url("/"))).await,
        "hi"
    );
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_control_connection_is_closed_and_the_api_keeps_serving() {
    let p = start_proxy(LIMITS).await;
    let mut silent = TcpStream::connect(p.daemon.control_addr).await.unwrap();
    let opened = Instant::now();
    let (got, closed) = within(
        "silent control connection closed",
        read_until_closed(&mut silent),
    )
    .await;
    assert_eq!(got, "");
    assert_closed_after(opened, closed, Duration::from_secs(5));
    let health = format!("http://{}/healthz", p.daemon.control_addr);
    let body = within("healthz", get_text(&direct_client(), health)).await;
    assert!(body.contains("ok"), "{body}");
    p.stop().await;
}
