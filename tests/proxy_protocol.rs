//! HTTP details a proxy must get right (issue #9): upgrades reach the origin in origin-form,
//! impossible ports, duplicate `Host`, a CONNECT without a host and a client's malformed
//! chunked body are 400s, and a password in a URL reaches neither the origin's request
//! line nor the journal.

mod common;

use std::sync::Arc;

use common::origin;
use common::raw::{exchange_raw, raw};
use common::*;
use flakestorm::exchange::Outcome;
use flakestorm::proxy::ERROR_HEADER;

/// An origin that accepts every upgrade (101) and records the request line it got.
async fn upgrading_origin(tls: Option<&[&[u8]]>) -> origin::Origin {
    origin::start(tls, |_req| async {
        let mut resp = origin::text("");
        *resp.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
        let h = resp.headers_mut();
        h.remove(http::header::CONTENT_LENGTH);
        h.insert(http::header::UPGRADE, "websocket".parse().unwrap());
        h.insert(http::header::CONNECTION, "Upgrade".parse().unwrap());
        resp
    })
    .await
}

const WS_HEADERS: &str = "Connection: Upgrade\r\nUpgrade: websocket\r\n\
     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

#[tokio::test]
async fn upgrades_through_http_proxy_reach_the_origin_in_origin_form() {
    let o = upgrading_origin(None).await;
    let p = start_proxy("").await;
    let a = o.addr;
    let head = raw(
        p.addr(),
        format!("GET http://{a}/chat?x=1 HTTP/1.1\r\nHost: {a}\r\n{WS_HEADERS}").as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let seen = &o.log.all()[0];
    assert_eq!(seen.uri, "/chat?x=1");
    assert_eq!(seen.headers["host"], a.to_string());
    p.stop().await;
}

#[tokio::test]
async fn upgrades_inside_intercepted_tls_reach_the_origin_in_origin_form() {
    let o = upgrading_origin(Some(H1)).await;
    let p = start_proxy("").await;
    let port = o.addr.port();
    let mut tcp = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
    let head = exchange_raw(
        &mut tcp,
        format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(tls_client(&p.ca_pem(), H1)))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let head = exchange_raw(
        &mut tls,
        format!("GET /chat?x=1 HTTP/1.1\r\nHost: localhost:{port}\r\n{WS_HEADERS}").as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert_eq!(o.log.all()[0].uri, "/chat?x=1");
    p.stop().await;
}

/// The journal's last record is a proxy error of `kind`.
fn last_error_kind(p: &TestProxy) -> String {
    let all = p.daemon.journal.all();
    match &all.last().expect("a journal record").outcome {
        Outcome::Error { error, .. } => error.kind.name().to_string(),
        other => panic!("not an error: {other:?}"),
    }
}

#[tokio::test]
async fn ports_above_65535_are_400s_not_port_80() {
    let p = start_proxy("").await;
    for port in ["99999", "65536", "4294967376"] {
        let head = raw(
            p.addr(),
            format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
                .as_bytes(),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 400"), "{port}: {head}");
        assert!(head.contains("bad_request"), "{head}");
    }
    p.stop().await;
}

#[tokio::test]
async fn two_host_headers_are_a_400_and_never_reach_the_origin() {
    let o = origin::fixed(None, "should not be reached").await;
    let p = start_proxy("").await;
    let a = o.addr;
    let head = raw(
        p.addr(),
        format!("GET http://{a}/ HTTP/1.1\r\nHost: {a}\r\nHost: evil.example\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert!(
        head.contains(&format!("{ERROR_HEADER}: bad_request")),
        "{head}"
    );
    assert_eq!(o.log.len(), 0);
    p.stop().await;
}

#[tokio::test]
async fn connect_without_a_host_is_a_400() {
    let p = start_proxy("").await;
    for target in [":443", "localhost:99999"] {
        let head = raw(
            p.addr(),
            format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 400"), "{target}: {head}");
        assert!(head.contains("bad_connect_target"), "{target}: {head}");
    }
    p.stop().await;
}

#[tokio::test]
async fn a_clients_malformed_chunked_body_is_a_400_not_an_upstream_error() {
    let o = origin::start(
        None,
        |req: http::Request<hyper::body::Incoming>| async move {
            // Read the body, as a real origin would, so the proxy streams it upstream.
            let _ = http_body_util::BodyExt::collect(req.into_body()).await;
            origin::text("ok")
        },
    )
    .await;
    let p = start_proxy("").await;
    let a = o.addr;
    let head = raw(
        p.addr(),
        format!(
            "POST http://{a}/up HTTP/1.1\r\nHost: {a}\r\nTransfer-Encoding: chunked\r\n\r\n\
             5\r\nhello\r\nzz-not-hex\r\nmore\r\n0\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert_eq!(last_error_kind(&p), "bad_request");
    p.stop().await;
}

/// The same broken upload where the proxy holds the body before forwarding it: an LLM
/// request under a context attack (held whole: nothing reaches the origin), and a tool
/// call while a canary is planted (scanned as it goes).
#[tokio::test]
async fn a_malformed_chunked_body_is_a_400_where_the_proxy_buffers_it_too() {
    let o = origin::start(
        None,
        |req: http::Request<hyper::body::Incoming>| async move {
            let _ = http_body_util::BodyExt::collect(req.into_body()).await;
            origin::text("ok")
        },
    )
    .await;
    let a = o.addr;
    let broken = |path: &str| {
        format!(
            "POST http://{a}{path} HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n5\r\n{{\"a\":\r\nzz-not-hex\r\nmore\r\n0\r\n\r\n"
        )
    };
    let attacked =
        start_proxy("chaos:\n  context_attacks:\n    - {type: overflow, inject_tokens: 10}\n")
            .await;
    let head = raw(attacked.addr(), broken("/v1/chat/completions").as_bytes()).await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert_eq!(last_error_kind(&attacked), "bad_request");
    assert_eq!(o.log.len(), 0, "the held request was not sent");
    attacked.stop().await;

    let planted = start_proxy(&format!(
        "tools:\n  - {{name: email, match_url: 'http://{a}/mail*'}}\n"
    ))
    .await;
    let _canary = planted
        .daemon
        .chaos
        .install(
            &Default::default(),
            Some(std::sync::Arc::new(flakestorm::chaos::Canary::new(9))),
        )
        .unwrap();
    let head = raw(planted.addr(), broken("/mail").as_bytes()).await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert_eq!(last_error_kind(&planted), "bad_request");
    planted.stop().await;
}

#[tokio::test]
async fn a_password_in_the_url_reaches_neither_the_origin_nor_the_journal() {
    let o = origin::fixed(None, "hi").await;
    let p = start_proxy("").await;
    let a = o.addr;
    let head = raw(
        p.addr(),
        format!("GET http://agent:s3cret-pw@{a}/x HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    assert_eq!(ex.request.url, format!("http://{a}/x"));
    assert!(!format!("{:?}", o.log.all()[0].headers).contains("s3cret"));
    p.stop().await;
}
