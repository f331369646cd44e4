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

/// Serves on `port` as an agent that makes `calls` sequential GETs of `tool` through the
/// proxy in `HTTP_PROXY` (absolute-form HTTP/1.1) before answering `body`; with `exit`,
/// the process exits once it has answered (an agent that serves one case per process).
#[allow(dead_code)] // Only the run benchmark starts agent processes.
pub async fn serve_caller(port: u16, body: &'static [u8], tool: String, calls: usize, exit: bool) {
    let proxy = std::env::var("HTTP_PROXY").unwrap();
    let proxy = proxy
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    while let Ok((tcp, _)) = listener.accept().await {
        let (proxy, tool) = (proxy.clone(), tool.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |_req| {
                let (proxy, tool) = (proxy.clone(), tool.clone());
                async move {
                    for _ in 0..calls {
                        let _ = call(&proxy, &tool).await;
                    }
                    if exit {
                        // Once the answer is written: the process ends, as a one-shot agent's.
                        tokio::spawn(async {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            std::process::exit(0);
                        });
                    }
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                        Bytes::from_static(body),
                    )))
                }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

/// One GET of `url` through the proxy at `proxy`, on a connection of its own.
async fn call(proxy: &str, url: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use http_body_util::{BodyExt, Empty};
    let tcp = tokio::net::TcpStream::connect(proxy).await?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let host = url.split('/').nth(2).unwrap_or_default().to_string();
    let req = hyper::Request::get(url)
        .header("host", host)
        .body(Empty::<Bytes>::new())?;
    let res = send.send_request(req).await?;
    res.into_body().collect().await?;
    Ok(())
}
