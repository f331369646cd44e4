//! The in-process origins: plain HTTP and HTTPS servers that answer every request with the
//! same 1 KiB JSON body (or an SSE stream on `/sse`) and count what reaches them.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::{BODY_LEN, SSE_EVENTS, SSE_GAP};

/// The 1 KiB JSON body every non-SSE request gets.
pub static BODY: LazyLock<Bytes> = LazyLock::new(|| {
    let head = r#"{"id":"chatcmpl-bench","object":"chat.completion","model":"bench","content":""#;
    let tail = r#""}"#;
    let pad = "x".repeat(BODY_LEN - head.len() - tail.len());
    Bytes::from(format!("{head}{pad}{tail}"))
});

pub fn sse_event(i: usize) -> Bytes {
    Bytes::from(format!("data: {{\"n\":{i}}}\n\n"))
}

pub struct Origin {
    pub addr: SocketAddr,
    pub counts: Arc<OriginCounts>,
}

/// What an origin has seen so far.
#[derive(Default)]
pub struct OriginCounts {
    /// TCP connections accepted.
    pub conns: AtomicU64,
    /// Requests that came over HTTP/2.
    pub h2_requests: AtomicU64,
}

type OriginBody = UnsyncBoxBody<Bytes, Infallible>;

async fn origin_handler(
    req: Request<Incoming>,
    counts: Arc<OriginCounts>,
) -> Result<Response<OriginBody>, Infallible> {
    if req.version() == hyper::Version::HTTP_2 {
        counts.h2_requests.fetch_add(1, Ordering::Relaxed);
    }
    let response = if req.uri().path() == "/sse" {
        let events = futures_util::stream::unfold(0, |i| async move {
            if i == SSE_EVENTS {
                return None;
            }
            if i == 1 {
                tokio::time::sleep(SSE_GAP).await;
            }
            Some((Ok(Frame::data(sse_event(i))), i + 1))
        });
        Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache")
            .body(StreamBody::new(events).boxed_unsync())
    } else {
        Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(BODY.clone()).boxed_unsync())
    };
    Ok(response.expect("static response parts are valid"))
}

/// Starts an origin on `runtime` (its own, so that the origin and the clients do not share
/// worker threads, as they would not if they were separate processes).
pub fn start_origin(runtime: &tokio::runtime::Handle, tls: Option<TlsAcceptor>) -> Result<Origin> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let origin = Origin {
        addr: listener.local_addr()?,
        counts: Arc::default(),
    };
    let counts = origin.counts.clone();
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    runtime.spawn(async move {
        let listener = TcpListener::from_std(listener).expect("registering the origin listener");
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    eprintln!("origin accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            };
            counts.conns.fetch_add(1, Ordering::Relaxed);
            let _ = tcp.set_nodelay(true);
            let (builder, tls, counts) = (builder.clone(), tls.clone(), counts.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| origin_handler(req, counts.clone()));
                match tls {
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                    }
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                }
            });
        }
    });
    Ok(origin)
}

pub fn origin_tls(root: &Path) -> Result<TlsAcceptor> {
    let fixtures = root.join("tests/fixtures");
    let certs = CertificateDer::pem_file_iter(fixtures.join("origin.pem"))?
        .collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(fixtures.join("origin.key"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
