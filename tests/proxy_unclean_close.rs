//! An upstream that ends a close-delimited body (`Connection: close`, no length) by
//! closing its TLS connection without `close_notify` (Python's `http.server` behind `ssl`,
//! many small servers) sent a whole body: curl and httpx read it to its end, and so must a
//! client through the proxy, over HTTP/1.1 and HTTP/2, with no rule active and under
//! `slow_stream` (whose delayed events must all arrive). The exchange is complete, with
//! the unclean close noted.

mod common;

use std::time::Duration;

use common::*;
use flakestorm::exchange::{BodyEnd, Exchange, Outcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const EVENTS: [&str; 4] = [
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"one \"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"two \"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"three\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
];

fn whole() -> String {
    EVENTS.concat()
}

/// A TLS origin (HTTP/1.1 only) that answers every request with an SSE body delimited by
/// the connection's close, then drops the TCP connection without sending `close_notify`.
async fn unclean_origin() -> (std::net::SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(origin::server_tls(H1));
    let stop = CancellationToken::new();
    let stop2 = stop.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                r = listener.accept() => r.unwrap(),
                () = stop2.cancelled() => return,
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                read_request(&mut tls).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                tls.write_all(head.as_bytes()).await.unwrap();
                for e in EVENTS {
                    tls.write_all(e.as_bytes()).await.unwrap();
                    tls.flush().await.unwrap();
                }
                // The TCP connection closes under TLS: no `close_notify` is sent.
                let (tcp, _) = tls.into_inner();
                drop(tcp);
            });
        }
    });
    (addr, stop)
}

/// Reads a request head and its `content-length` body.
async fn read_request(tls: &mut (impl AsyncReadExt + Unpin)) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = tls.read(&mut buf).await.unwrap();
        assert!(n > 0, "client closed before its request head");
        got.extend_from_slice(&buf[..n]);
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while got.len() < head_end + len {
        let n = tls.read(&mut buf).await.unwrap();
        assert!(n > 0, "client closed before its request body");
        got.extend_from_slice(&buf[..n]);
    }
}

async fn the_exchange(p: &TestProxy) -> Exchange {
    within("the exchange is recorded", p.daemon.journal.wait_for(1)).await;
    (*p.daemon.journal.all()[0]).clone()
}

fn assert_complete_and_noted(ex: &Exchange) {
    let Outcome::Response { body, .. } = &ex.outcome else {
        panic!("{ex:?}")
    };
    assert_eq!(body, &BodyEnd::Complete, "{ex:?}");
    assert_eq!(ex.response_bytes, whole().len() as u64);
    let note = ex.note.as_deref().unwrap_or_default();
    assert!(
        note.contains("close_notify"),
        "the unclean close is noted: {ex:?}"
    );
}

async fn read_to_end_through_the_proxy(alpn: &[&[u8]], chaos: &str) -> (String, TestProxy) {
    let (addr, _stop) = unclean_origin().await;
    let p = start_proxy(chaos).await;
    let url = format!("https://localhost:{}/v1/chat/completions", addr.port());
    let resp = within(
        "response head",
        client_via(&p, alpn)
            .post(url)
            .header("content-type", "application/json")
            .body(r#"{"model":"m","stream":true,"messages":[]}"#)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let text = within("the body to its end", resp.text())
        .await
        .expect("the body reads to its end, as it does without the proxy");
    (text, p)
}

#[tokio::test]
async fn a_close_delimited_body_without_close_notify_reads_to_its_end_over_http1() {
    let (text, p) = read_to_end_through_the_proxy(H1, "").await;
    assert_eq!(text, whole());
    assert_complete_and_noted(&the_exchange(&p).await);
    p.stop().await;
}

#[tokio::test]
async fn a_close_delimited_body_without_close_notify_reads_to_its_end_over_http2() {
    let (text, p) = read_to_end_through_the_proxy(&[b"h2"], "").await;
    assert_eq!(text, whole());
    assert_complete_and_noted(&the_exchange(&p).await);
    p.stop().await;
}

#[tokio::test]
async fn slow_stream_delays_every_event_of_such_a_body_and_loses_none() {
    let between = 150;
    let chaos = format!(
        "chaos:\n  llm_faults: [{{mode: slow_stream, first_token_ms: 0, between_ms: {between}}}]\n"
    );
    let started = tokio::time::Instant::now();
    let (text, p) = read_to_end_through_the_proxy(H2, &chaos).await;
    assert_eq!(text, whole(), "every delayed event arrives");
    // Sleeps only add time: three events after the first waited `between` each.
    assert!(started.elapsed() >= Duration::from_millis(3 * between));
    let ex = the_exchange(&p).await;
    assert_complete_and_noted(&ex);
    let fault = ex.fault.as_ref().unwrap();
    assert_eq!((fault.mode.as_str(), fault.applied), ("slow_stream", true));
    p.stop().await;
}
