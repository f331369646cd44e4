//! In-process origin servers: hyper on `127.0.0.1:0`, plain or TLS with the fixture
//! certificate for `localhost`/`127.0.0.1`, recording every request head they receive.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::fixture;

pub type Body = BoxBody<Bytes, std::io::Error>;

/// What an origin saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub version: Version,
    pub headers: http::HeaderMap,
}

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    pub fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

pub fn text(body: &str) -> Response<Body> {
    Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed(),
    )
}

/// `body` with a `content-type` (JSON, SSE, … : what the proxy's rewrites key on).
pub fn typed(body: &str, content_type: &'static str) -> Response<Body> {
    let mut r = text(body);
    r.headers_mut()
        .insert("content-type", http::HeaderValue::from_static(content_type));
    r
}

pub struct Origin {
    pub addr: SocketAddr,
    pub log: Log,
    pub stop: CancellationToken,
}

impl Origin {
    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    pub fn https_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub fn server_tls(alpn: &[&[u8]]) -> Arc<ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(fixture("origin.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(fixture("origin.key")).unwrap();
    let mut c = ServerConfig::builder_with_provider(super::ring())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(c)
}

/// Serves `handler` over plain HTTP (`tls: None`) or TLS with the given ALPN list.
pub async fn start<F, Fut>(tls: Option<&[&[u8]]>, handler: F) -> Origin
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Log::default();
    let stop = CancellationToken::new();
    let acceptor = tls.map(|alpn| tokio_rustls::TlsAcceptor::from(server_tls(alpn)));
    let (log2, stop2) = (log.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                r = listener.accept() => r.unwrap(),
                () = stop2.cancelled() => return,
            };
            let (handler, log, acceptor) = (handler.clone(), log2.clone(), acceptor.clone());
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    log.0.lock().unwrap().push(Seen {
                        method: req.method().to_string(),
                        uri: req.uri().to_string(),
                        version: req.version(),
                        headers: req.headers().clone(),
                    });
                    let fut = handler(req);
                    async move { Ok::<_, Infallible>(fut.await) }
                });
                let builder = auto::Builder::new(TokioExecutor::new());
                let _ = match acceptor {
                    Some(a) => match a.accept(stream).await {
                        Ok(tls) => {
                            builder
                                .serve_connection_with_upgrades(TokioIo::new(tls), svc)
                                .await
                        }
                        Err(_) => return,
                    },
                    None => {
                        builder
                            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                            .await
                    }
                };
            });
        }
    });
    Origin { addr, log, stop }
}

/// An origin answering every request with `body` (200, text/plain).
pub async fn fixed(tls: Option<&[&[u8]]>, body: &'static str) -> Origin {
    start(tls, move |_req| async move { text(body) }).await
}

/// An origin answering every request with `body` (200, application/json), over plain HTTP.
pub async fn json(body: &'static str) -> Origin {
    start(
        None,
        move |_req| async move { typed(body, "application/json") },
    )
    .await
}

/// An origin that answers with the body it received, as JSON: what the LLM would have seen.
pub async fn echo() -> Origin {
    start(None, |req: Request<Incoming>| async move {
        let bytes = req.into_body().collect().await.unwrap().to_bytes();
        let mut r = Response::new(Full::new(bytes).map_err(|n| match n {}).boxed());
        r.headers_mut().insert(
            "content-type",
            http::HeaderValue::from_static("application/json"),
        );
        r
    })
    .await
}

/// An agent that answers `{"result": "fine"}` once per permit: `permits` to begin with,
/// then one for each the test adds to the semaphore; the others wait.
pub async fn held_agent(permits: usize) -> (Origin, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(permits));
    let g = gate.clone();
    let agent = start(None, move |_req| {
        let g = g.clone();
        async move {
            g.acquire().await.unwrap().forget();
            text(r#"{"result": "fine"}"#)
        }
    })
    .await;
    (agent, gate)
}

/// A search tool's API: every request gets `{"results": [the fact]}`.
pub async fn search_tool() -> Origin {
    json(r#"{"results": ["ACME Q3 revenue was $4.1B"]}"#).await
}

/// A response body the test writes into chunk by chunk; the handler hands the sender out.
pub fn channel_body() -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
    use futures_util::stream;
    use http_body::Frame;
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let frames = stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok(Frame::data(b)), rx))
    });
    (tx, http_body_util::StreamBody::new(frames).boxed())
}

/// An origin whose responses (`content_type`, 200) stream whatever the test sends through
/// the sender it receives from `senders` for each request.
pub async fn streaming(
    tls: Option<&[&[u8]]>,
    content_type: &'static str,
) -> (
    Origin,
    tokio::sync::mpsc::UnboundedReceiver<tokio::sync::mpsc::Sender<Bytes>>,
) {
    let (give, senders) = tokio::sync::mpsc::unbounded_channel();
    let o = start(tls, move |_req| {
        let give = give.clone();
        async move {
            let (tx, body) = channel_body();
            give.send(tx).unwrap();
            let mut resp = Response::new(body);
            resp.headers_mut()
                .insert("content-type", http::HeaderValue::from_static(content_type));
            resp
        }
    })
    .await;
    (o, senders)
}
