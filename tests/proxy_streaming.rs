//! Bodies stream through the proxy as they arrive: SSE events reach the client one by one,
//! a client leaving mid-body releases the upstream, and a graceful stop lets in-flight
//! responses finish.

mod common;

use bytes::Bytes;
use common::origin;
use common::*;
use flakestorm::exchange::{BodyEnd, Outcome};

#[tokio::test]
async fn sse_events_reach_the_client_before_the_origin_sends_the_rest() {
    let (o, mut senders) = origin::streaming(Some(H1), "text/event-stream").await;
    let p = start_proxy("").await;
    let client = client_via(&p, H2);
    let req = client
        .post(o.https_url("/v1/chat/completions"))
        .body(r#"{"stream":true}"#);
    let pending = tokio::spawn(req.send());
    let tx = within("origin receives the request", senders.recv())
        .await
        .unwrap();
    tx.send(Bytes::from_static(b"data: {\"n\":1}\n\n"))
        .await
        .unwrap();
    let mut resp = within("response head", pending).await.unwrap().unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    // The origin has sent only the first event and is waiting: if the proxy buffered,
    // this read would never complete.
    let first = within("first event through the proxy", resp.chunk())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, "data: {\"n\":1}\n\n");
    tx.send(Bytes::from_static(b"data: {\"n\":2}\n\n"))
        .await
        .unwrap();
    tx.send(Bytes::from_static(b"data: [DONE]\n\n"))
        .await
        .unwrap();
    drop(tx);
    let mut rest = Vec::new();
    while let Some(c) = within("rest of the stream", resp.chunk()).await.unwrap() {
        rest.extend_from_slice(&c);
    }
    assert_eq!(rest, b"data: {\"n\":2}\n\ndata: [DONE]\n\n");
    p.daemon.journal.wait_for(1).await;
    assert_eq!(p.daemon.journal.all()[0].response_bytes, 44);
    p.stop().await;
}

#[tokio::test]
async fn a_client_leaving_mid_body_releases_the_upstream_and_is_not_an_error() {
    // The proxy reads on a moment after the client left (proxy::body's tests); no end
    // comes within that bound, so the client left mid-body.
    let (o, mut senders) = origin::streaming(None, "application/x-ndjson").await;
    let p = start_proxy("").await;
    let client = client_via(&p, H1);
    let pending = tokio::spawn(client.get(o.http_url("/api/chat")).send());
    let tx = within("origin receives the request", senders.recv())
        .await
        .unwrap();
    tx.send(Bytes::from_static(b"{\"done\":false}\n"))
        .await
        .unwrap();
    let mut resp = within("head", pending).await.unwrap().unwrap();
    within("first line", resp.chunk()).await.unwrap().unwrap();
    drop(resp);
    drop(client);
    // The proxy must drop its upstream body too, so a real LLM stops generating.
    within("upstream sees the client leave", tx.closed()).await;
    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    let Outcome::Response { body, .. } = &ex.outcome else {
        panic!("{ex:?}")
    };
    assert_eq!(body, &BodyEnd::ClientDisconnected);
    assert_eq!(ex.response_bytes, 15);
    assert!(
        !p.daemon
            .metrics
            .encode()
            .contains("flakestorm_proxy_errors_total{"),
        "not a proxy error"
    );
    // And the proxy keeps serving.
    let o2 = origin::fixed(None, "still here").await;
    assert_eq!(
        get_text(&client_via(&p, H1), o2.http_url("/")).await,
        "still here"
    );
    p.stop().await;
}

#[tokio::test]
async fn graceful_stop_finishes_in_flight_exchanges_then_refuses_new_ones() {
    let (o, mut senders) = origin::streaming(Some(H1), "text/plain").await;
    let p = start_proxy("").await;
    let addr = p.addr();
    let client = client_via(&p, H1);
    let pending = tokio::spawn(client.get(o.https_url("/slow")).send());
    let tx = within("origin receives the request", senders.recv())
        .await
        .unwrap();
    tx.send(Bytes::from_static(b"part one, ")).await.unwrap();
    let resp = within("head", pending).await.unwrap().unwrap();
    let finish_origin = async move {
        tx.send(Bytes::from_static(b"part two")).await.unwrap();
    };
    // `join!` polls in order: the stop has begun (listener closing) before the origin
    // sends the rest of the body.
    let (_, body, ()) = within("drain", async {
        tokio::join!(p.stop(), resp.text(), finish_origin)
    })
    .await;
    assert_eq!(body.unwrap(), "part one, part two");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "listener closed after stop"
    );
}
