//! An in-process HTTP server for the benchmarks (an agent or a tool): every request on
//! 127.0.0.1:0 answered with `body` after `delay`, over HTTP/1.1 or HTTP/2.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;

/// Starts the server; its port.
pub async fn serve(body: &'static [u8], delay: Duration) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(accept(listener, body, delay));
    port
}

/// Serves on `port` until the process ends (an agent process a run starts).
#[allow(dead_code)] // Only the run benchmark starts agent processes.
pub async fn serve_on(port: u16, body: &'static [u8], delay: Duration) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    accept(listener, body, delay).await;
}

async fn accept(listener: tokio::net::TcpListener, body: &'static [u8], delay: Duration) {
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(async move {
            let svc = service_fn(move |_req| async move {
                tokio::time::sleep(delay).await;
                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                    Bytes::from_static(body),
                )))
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}
