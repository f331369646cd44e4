//! Genuine failures and bad input: upstream refused or silent, malformed requests, bad
//! CONNECT targets, invalid TLS, oversized heads, non-HTTP bytes. Each gets a clear status
//! (marked `x-flakestorm-error` when the proxy answers) and the daemon keeps serving.

mod common;

use std::net::SocketAddr;

use common::origin;
use common::raw::raw;
use common::*;
use flakestorm::exchange::Outcome;
use flakestorm::proxy::ERROR_HEADER;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback port with nothing listening on it, for the rest of this test process: held
/// bound and never listening (`common::ports`), so no other process can take it meanwhile.
async fn closed_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], common::ports::closed_port()))
}

async fn still_serving(p: &TestProxy) {
    let o = origin::fixed(None, "alive").await;
    let text = get_text(&client_via(p, H1), o.http_url("/")).await;
    assert_eq!(text, "alive");
}

#[tokio::test]
async fn refused_upstreams_are_502s_that_say_why() {
    let p = start_proxy("").await;
    let dead = closed_port().await;
    let client = client_via(&p, H1);
    for url in [
        format!("http://{dead}/x"),
        format!("https://localhost:{}/x", dead.port()),
    ] {
        let resp = client.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 502, "{url}");
        assert_eq!(resp.headers()[ERROR_HEADER], "upstream_connect");
        let body = resp.text().await.unwrap();
        assert!(
            body.contains(&format!("could not connect to upstream {dead}"))
                || body.contains("localhost"),
            "{body}"
        );
        assert!(body.to_lowercase().contains("refused"), "{body}");
    }
    p.daemon.journal.wait_for(2).await;
    for ex in p.daemon.journal.all() {
        let Outcome::Error { error, status } = &ex.outcome else {
            panic!("{ex:?}")
        };
        assert_eq!(
            (error.kind.name(), *status),
            ("upstream_connect", Some(502))
        );
    }
    p.stop().await;
}

#[tokio::test]
async fn passthrough_to_a_dead_host_fails_the_connect_itself() {
    let p = start_proxy("proxy:\n  passthrough: ['*']\n").await;
    let dead = closed_port().await;
    let reply = raw(
        p.addr(),
        format!("CONNECT {dead} HTTP/1.1\r\nHost: {dead}\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 502"), "{reply}");
    assert!(
        reply.contains("x-flakestorm-error: upstream_connect"),
        "{reply}"
    );
    p.stop().await;
}

/// Paused time: the 600 s response timeout elapses instantly once everything is idle.
#[tokio::test(start_paused = true)]
async fn a_silent_upstream_times_out_with_504() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((s, _)) = silent.accept().await {
            held.push(s); // accept, never answer
        }
    });
    let p = start_proxy("").await;
    let resp = client_via(&p, H1)
        .get(format!("http://{addr}/slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 504);
    assert_eq!(resp.headers()[ERROR_HEADER], "upstream_timeout");
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("sent no response head within 600s")
    );
    p.stop().await;
}

#[tokio::test]
async fn bad_input_gets_a_clear_status_and_the_daemon_keeps_serving() {
    let p = start_proxy("").await;
    let big = "a".repeat(100 * 1024);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "malformed request line",
            b"GARBAGE\r\n\r\n".to_vec(),
            "HTTP/1.1 400",
        ),
        (
            "non-HTTP bytes",
            vec![0u8, 1, 2, 3, 0xff, 0xfe, b'\r', b'\n', b'\r', b'\n'],
            "HTTP/1.1 400",
        ),
        (
            "oversized headers",
            format!("GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n")
                .into_bytes(),
            "HTTP/1.1 431",
        ),
        (
            "CONNECT without a port",
            b"CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n".to_vec(),
            "HTTP/1.1 400",
        ),
    ];
    for (what, bytes, want) in cases {
        let reply = raw(p.addr(), &bytes).await;
        assert!(reply.starts_with(want), "{what}: got {reply:?}");
    }
    still_serving(&p).await;
    p.stop().await;
}

#[tokio::test]
async fn invalid_tls_from_a_client_closes_that_connection_only() {
    let o = origin::fixed(Some(H1), "unused").await;
    let p = start_proxy("").await;
    let port = o.addr.port();
    let mut s = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 256];
    let n = s.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"));
    // A TLS record header announcing a handshake, followed by nonsense.
    s.write_all(b"\x16\x03\x01\x00\x20this is not a client hello at all!!")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = within("proxy closes the tunnel", s.read_to_end(&mut rest)).await;
    assert!(
        p.daemon
            .metrics
            .encode()
            .contains(r#"flakestorm_tls_handshakes_total{result="error"} 1"#)
    );
    assert_eq!(o.log.len(), 0);
    still_serving(&p).await;
    p.stop().await;
}

/// Upstream certificates are verified: without `upstream_ca_file` the fixture origin's
/// private CA is not trusted, and the client is told so.
#[tokio::test]
async fn an_untrusted_upstream_certificate_is_a_502_upstream_tls() {
    let o = origin::fixed(Some(H1), "never").await;
    let p = start_proxy("proxy:\n  upstream_ca_file: null\n").await;
    let resp = client_via(&p, H1)
        .get(o.https_url("/"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 502);
    let kind = resp.headers()[ERROR_HEADER].clone();
    let body = resp.text().await.unwrap();
    assert_eq!(kind, "upstream_tls", "{body}");
    assert!(
        body.contains("TLS with upstream") && body.to_lowercase().contains("certificate"),
        "{body}"
    );
    assert_eq!(o.log.len(), 0);
    p.stop().await;
}

/// `proxy.upstream_connect_failure: close`: an unreachable upstream closes the client's
/// connection with no response (plain and intercepted HTTPS), as the agent would meet it
/// without the proxy; the exchange is still journaled as `upstream_connect`, no status.
#[tokio::test]
async fn a_refused_upstream_can_close_the_connection_instead_of_a_502() {
    let p = start_proxy("proxy:\n  upstream_connect_failure: close\n").await;
    let dead = closed_port().await;
    let client = client_via(&p, H1);
    for url in [
        format!("http://{dead}/x"),
        format!("https://localhost:{}/x", dead.port()),
    ] {
        let err = client.get(&url).send().await.unwrap_err();
        assert!(err.status().is_none() && !err.is_timeout(), "{url}: {err}");
    }
    p.daemon.journal.wait_for(2).await;
    for ex in p.daemon.journal.all() {
        let Outcome::Error { error, status } = &ex.outcome else {
            panic!("{ex:?}")
        };
        assert_eq!((error.kind.name(), *status), ("upstream_connect", None));
    }
    // Only a connect failure closes: a reachable upstream still answers.
    still_serving(&p).await;
    p.stop().await;
}

#[tokio::test]
async fn an_unknown_upstream_connect_failure_is_an_error_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(&path, "proxy:\n  upstream_connect_failure: reset\n").unwrap();
    let err = flakestorm::config::load_with_env(
        Some(&path),
        &flakestorm::config::Overrides::default(),
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("upstream_connect_failure"), "{err}");
    assert!(err.contains("status_502") && err.contains("close"), "{err}");
}

/// A fault or attack counts as applied only when what it made reached the agent. Here the
/// tool's upstream refuses every connection: a response rewrite (`malformed`), a held and
/// paced answer (`slow`) and a prompt injection in the tool's answer all fired, but the
/// agent got flakestorm's 502 instead, so none of them is applied (journal, metrics); an
/// injected `error` answers before any upstream, and is.
#[tokio::test]
async fn faults_on_a_refused_upstream_are_not_applied() {
    // Bound and never listening: refused, and no other process can take the port.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let dead = closed.local_addr().unwrap();
    let tools = format!("tools:\n  - {{name: search, match_url: 'http://{dead}/*'}}\n");
    for (mode, chaos) in [
        (
            "malformed",
            "tool_faults: [{tool: search, mode: malformed}]",
        ),
        (
            "slow",
            "tool_faults: [{tool: search, mode: slow, delay_ms: 1, bytes_per_second: 1000}]",
        ),
        (
            "indirect_injection",
            "context_attacks: [{type: indirect_injection, tool: search, payloads: [OBEY]}]",
        ),
        (
            "error",
            "tool_faults: [{tool: search, mode: error, error_code: 503}]",
        ),
    ] {
        let p = start_proxy(&format!("{tools}chaos:\n  {chaos}\n")).await;
        let resp = client_via(&p, H1)
            .get(format!("http://{dead}/q"))
            .send()
            .await
            .unwrap();
        p.daemon.journal.wait_for(1).await;
        let ex = p.daemon.journal.all()[0].clone();
        let record = ex.fault.clone().or(ex.attacks.first().cloned()).unwrap();
        assert_eq!(record.mode.as_str(), mode);
        let metrics = p.daemon.metrics.encode();
        if mode == "error" {
            assert_eq!(resp.status(), 503);
            assert!(record.applied, "{record:?}");
            p.stop().await;
            continue;
        }
        assert_eq!(resp.status(), 502, "{mode}");
        assert_eq!(resp.headers()[ERROR_HEADER], "upstream_connect", "{mode}");
        assert!(!record.applied, "{mode}: {record:?}");
        let note = record.note.unwrap_or_default();
        assert!(
            note.starts_with("the agent got flakestorm's `upstream_connect` error instead: "),
            "{mode}: {note}"
        );
        assert!(
            metrics.contains(&format!(
                r#"flakestorm_faults_skipped_total{{target="tool",mode="{mode}"}} 1"#
            )) && !metrics.contains("flakestorm_faults_injected_total{"),
            "{mode}: {metrics}"
        );
        p.stop().await;
    }
}
