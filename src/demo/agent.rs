//! The demo's agent: an HTTP agent whose tool and LLM calls go only through the proxy, the
//! way any agent with `HTTPS_PROXY` does (CONNECT, then TLS trusting the flakestorm CA).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::origins::Mocks;

/// Serves the demo agent on `listener`: `POST /invoke {"input": …}` searches, then asks the
/// LLM (streaming) with what it found, and answers `{"result": …}`. It says so when a
/// dependency fails, as a well-behaved agent should.
pub fn serve(
    listener: tokio::net::TcpListener,
    proxy: SocketAddr,
    tls: Arc<ClientConfig>,
    mocks: &Mocks,
) {
    let (tool_port, llm_port) = (mocks.tool_port, mocks.llm_port);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tls = tls.clone();
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |_req: Request<hyper::body::Incoming>| {
                        let tls = tls.clone();
                        async move {
                            let answer = answer(proxy, &tls, tool_port, llm_port).await;
                            let body = serde_json::json!({"result": answer}).to_string();
                            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                Bytes::from(body),
                            )))
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
}

async fn answer(
    proxy: SocketAddr,
    tls: &Arc<ClientConfig>,
    tool_port: u16,
    llm_port: u16,
) -> String {
    let found = match call(
        proxy,
        tls,
        tool_port,
        Method::GET,
        "/search?q=acme+q3+revenue",
        "",
    )
    .await
    {
        Ok(r) if r.status == 200 => r.body,
        Ok(r) => {
            return format!(
                "Sorry, search is unavailable right now (HTTP {}).",
                r.status
            );
        }
        Err(e) => return format!("Sorry, search is unavailable right now ({e})."),
    };
    let question = serde_json::json!({"model": "demo", "stream": true,
        "messages": [{"role": "user", "content": String::from_utf8_lossy(&found)}]});
    match call(
        proxy,
        tls,
        llm_port,
        Method::POST,
        "/v1/chat/completions",
        &question.to_string(),
    )
    .await
    {
        Ok(r) if r.status == 200 => content(&r.body),
        Ok(r) => format!(
            "Sorry, the assistant is unavailable right now (HTTP {}).",
            r.status
        ),
        Err(e) => format!("Sorry, the assistant is unavailable right now ({e})."),
    }
}

/// The text of a streamed chat completion.
fn content(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

struct Reply {
    status: u16,
    body: Vec<u8>,
}

pub fn client_config(ca_pem: &str) -> Result<Arc<ClientConfig>, Box<dyn std::error::Error>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let mut c = ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(c))
}

async fn call(
    proxy: SocketAddr,
    tls: &Arc<ClientConfig>,
    port: u16,
    method: Method,
    path: &str,
    body: &str,
) -> Result<Reply, Box<dyn std::error::Error + Send + Sync>> {
    let mut tcp = tokio::net::TcpStream::connect(proxy).await?;
    tcp.write_all(
        format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let b = tcp.read_u8().await?;
        head.push(b);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        return Err(format!("CONNECT refused: {}", String::from_utf8_lossy(&head)).into());
    }
    let stream = tokio_rustls::TlsConnector::from(tls.clone())
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", format!("localhost:{port}"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-demo-secret")
        .body(Full::new(Bytes::from(body.to_string())))?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Reply {
        status,
        body: bytes,
    })
}
