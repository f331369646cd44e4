//! The demo's agent: reaches its tool and its LLM only through the proxy, the way any
//! agent with `HTTPS_PROXY` does (CONNECT, then TLS trusting the flakestorm CA).

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
use tokio::time::Instant;

use super::origins::Mocks;

/// Runs the agent's three calls; returns one line per step.
pub async fn run(proxy: SocketAddr, ca_pem: &str, mocks: &Mocks) -> Vec<String> {
    let tls = match client_config(ca_pem) {
        Ok(t) => t,
        Err(e) => return vec![format!("could not trust the flakestorm CA: {e}")],
    };
    let calls = [
        (
            "search the web tool",
            mocks.tool_port,
            Method::GET,
            "/search?q=acme+q3+revenue",
            "",
        ),
        (
            "ask the LLM (streaming)",
            mocks.llm_port,
            Method::POST,
            "/v1/chat/completions",
            r#"{"model":"demo","stream":true,"messages":[]}"#,
        ),
        (
            "ask the LLM",
            mocks.llm_port,
            Method::POST,
            "/v1/chat/completions",
            r#"{"model":"demo","messages":[]}"#,
        ),
    ];
    let mut steps = vec![];
    for (what, port, method, path, body) in calls {
        let line = match call(proxy, &tls, port, method, path, body).await {
            Ok(r) => format!(
                "{what}: {} in {:.1} ms, {} body frames: {}",
                r.status,
                r.total_ms,
                r.frames,
                summary(&r.body)
            ),
            Err(e) => format!("{what}: failed: {e}"),
        };
        steps.push(line);
    }
    steps
}

struct Reply {
    status: u16,
    frames: usize,
    total_ms: f64,
    body: Vec<u8>,
}

/// What the agent got, in a few words: the answer text of a chat completion (streamed or
/// not), else the start of the body.
fn summary(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut answer = String::new();
    for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(data) {
            answer.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or(""));
        }
    }
    if answer.is_empty()
        && let Ok(v) = serde_json::from_slice::<serde_json::Value>(body)
    {
        answer = v["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_default();
    }
    let shown = if answer.is_empty() {
        text.trim().to_string()
    } else {
        answer
    };
    let short: String = shown.chars().take(70).collect();
    format!("{short:?}")
}

fn client_config(ca_pem: &str) -> Result<Arc<ClientConfig>, Box<dyn std::error::Error>> {
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
    let started = Instant::now();
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
    let (mut frames, mut bytes) = (0, Vec::new());
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            bytes.extend_from_slice(&data);
            frames += 1;
        }
    }
    Ok(Reply {
        status,
        frames,
        total_ms: started.elapsed().as_secs_f64() * 1000.0,
        body: bytes,
    })
}
