//! 50 MB each way through an intercepted HTTPS tunnel with bounded memory. Its own test
//! binary: it reads the process's peak RSS (VmHWM), which other tests would disturb.

mod common;

use bytes::Bytes;
use common::origin::{self, Body};
use common::*;
use futures_util::StreamExt;
use http_body_util::BodyExt;

const TOTAL: usize = 50 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;

/// Peak resident set size of this process, in bytes (Linux).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A body of `TOTAL` bytes produced chunk by chunk, never held whole.
fn generated() -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let chunk = Bytes::from(vec![b'x'; CHUNK]);
    futures_util::stream::iter((0..TOTAL / CHUNK).map(move |_| Ok(chunk.clone())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_megabytes_each_way_with_bounded_memory() {
    let o = origin::start(
        Some(H1),
        |req: http::Request<hyper::body::Incoming>| async move {
            if req.method() == http::Method::POST {
                // Count the upload as it arrives; never collect it.
                let mut body = req.into_body();
                let mut n = 0usize;
                while let Some(frame) = body.frame().await {
                    n += frame.unwrap().data_ref().map_or(0, |d| d.len());
                }
                return origin::text(&n.to_string());
            }
            let frames = generated().map(|r| r.map(http_body::Frame::data));
            http::Response::new(Body::new(http_body_util::StreamBody::new(frames)))
        },
    )
    .await;
    let p = start_proxy("").await;
    let client = client_via(&p, H1);
    // Baseline after start-up and one warm-up exchange (leaf issued, pools and TLS set up).
    client
        .post(o.https_url("/warm"))
        .body("x")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let Some(before) = peak_rss() else {
        eprintln!("no /proc/self/status: skipping the memory bound on this platform");
        return;
    };

    let upload = reqwest::Body::wrap_stream(generated());
    let resp = client
        .post(o.https_url("/upload"))
        .body(upload)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.text().await.unwrap(),
        TOTAL.to_string(),
        "every uploaded byte arrived"
    );

    let mut resp = client.get(o.https_url("/download")).send().await.unwrap();
    let mut got = 0usize;
    while let Some(chunk) = resp.chunk().await.unwrap() {
        got += chunk.len();
    }
    assert_eq!(got, TOTAL);

    let grown = peak_rss().unwrap().saturating_sub(before);
    // Buffering either body whole would add at least 50 MiB; streaming stays far below.
    assert!(
        grown < 16 * 1024 * 1024,
        "peak RSS grew by {} MiB",
        grown / (1024 * 1024)
    );
    p.daemon.journal.wait_for(3).await;
    assert_eq!(p.daemon.journal.all()[2].response_bytes, TOTAL as u64);
    p.stop().await;
}
