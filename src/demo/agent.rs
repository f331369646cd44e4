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

/// Serves the demo agent on `listener`: `POST /invoke {"input": …}` asks the LLM, which
/// asks for the search tool; the agent runs the search and asks again (streaming) with the
/// result, and answers `{"result": …}`. It waits out one `429` as `retry-after` says, and
/// says so when a dependency fails, as a well-behaved agent should.
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
    let user = serde_json::json!({"role": "user", "content": "What was ACME's Q3 revenue?"});
    let tools = serde_json::json!([{"type": "function", "function": {"name": "web_search",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]);
    let ask = |messages: serde_json::Value, stream: bool| {
        serde_json::json!({"model": "demo", "stream": stream, "tools": tools, "messages": messages})
            .to_string()
    };
    let llm = |body: String| async move {
        let path = "/v1/chat/completions";
        let first = call(proxy, tls, llm_port, Method::POST, path, &body).await?;
        match first.retry_after {
            Some(wait) if first.status == 429 => {
                tokio::time::sleep(std::time::Duration::from_secs_f64(wait.min(5.0))).await;
                call(proxy, tls, llm_port, Method::POST, path, &body).await
            }
            _ => Ok(first),
        }
    };
    let unavailable =
        |what: &str, why: String| format!("Sorry, {what} is unavailable right now ({why}).");
    let plan = match llm(ask(serde_json::json!([user]), false)).await {
        Ok(r) if r.status == 200 => r.body,
        Ok(r) => return unavailable("the assistant", format!("HTTP {}", r.status)),
        Err(e) => return unavailable("the assistant", e.to_string()),
    };
    let plan: serde_json::Value = serde_json::from_slice(&plan).unwrap_or_default();
    let message = &plan["choices"][0]["message"];
    let Some(call_) = message["tool_calls"].get(0) else {
        return match message["content"].as_str() {
            Some(text) if !text.is_empty() => text.to_string(),
            _ => unavailable("the assistant", "it sent no usable reply".into()),
        };
    };
    let query = call_["function"]["arguments"]
        .as_str()
        .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
        .and_then(|a| a["query"].as_str().map(str::to_string))
        .unwrap_or_default();
    let path = format!("/search?q={}", query.replace(' ', "+"));
    let found = match call(proxy, tls, tool_port, Method::GET, &path, "").await {
        Ok(r) if r.status == 200 => r.body,
        Ok(r) => return unavailable("search", format!("HTTP {}", r.status)),
        Err(e) => return unavailable("search", e.to_string()),
    };
    let result = serde_json::json!({"role": "tool", "tool_call_id": call_["id"],
        "content": String::from_utf8_lossy(&found)});
    match llm(ask(serde_json::json!([user, message, result]), true)).await {
        Ok(r) if r.status == 200 => content(&r.body),
        Ok(r) => unavailable("the assistant", format!("HTTP {}", r.status)),
        Err(e) => unavailable("the assistant", e.to_string()),
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
    /// `retry-after` in seconds, when the response carried one.
    retry_after: Option<f64>,
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
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Reply {
        status,
        retry_after,
        body: bytes,
    })
}
