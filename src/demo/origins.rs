//! The demo's mock upstreams, served over HTTPS with certificates from a throwaway CA:
//! a search tool (`GET /search?q=`) and an OpenAI-compatible chat endpoint
//! (`POST /v1/chat/completions`): until the conversation carries a tool result it asks for
//! `web_search` (a JSON `tool_calls` reply), then it answers, JSON or SSE when the request
//! says `"stream": true`.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rcgen::{CertificateParams, IsCa, Issuer, KeyPair};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;

use super::DemoError;

pub struct Mocks {
    pub tool_port: u16,
    pub llm_port: u16,
    /// The throwaway CA that signed the mocks' certificates (the proxy trusts it upstream).
    pub ca_file: PathBuf,
}

type Body = BoxBody<Bytes, Infallible>;

pub async fn start(dir: &Path) -> Result<Mocks, DemoError> {
    let (tls, ca_pem) = tls_config().map_err(DemoError::from("making demo certificates"))?;
    let ca_file = dir.join("demo-origin-ca.pem");
    std::fs::write(&ca_file, ca_pem).map_err(DemoError::from("writing the demo CA"))?;
    let tool_port = serve(tls.clone(), |req| async move { tool(req) }).await?;
    let llm_port = serve(tls, llm).await?;
    Ok(Mocks {
        tool_port,
        llm_port,
        ca_file,
    })
}

fn tls_config() -> Result<(Arc<ServerConfig>, String), Box<dyn std::error::Error>> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["localhost".to_string()])?.signed_by(&key, &issuer)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let mut config = ServerConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((Arc::new(config), ca.pem()))
}

async fn serve<F, Fut>(tls: Arc<ServerConfig>, handler: F) -> Result<u16, DemoError>
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(DemoError::from("binding a mock"))?;
    let port = listener
        .local_addr()
        .map_err(DemoError::from("binding a mock"))?
        .port();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req| {
                    let fut = handler(req);
                    async move { Ok::<_, Infallible>(fut.await) }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    Ok(port)
}

fn json(body: serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    r.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn tool(req: Request<Incoming>) -> Response<Body> {
    let q = req
        .uri()
        .query()
        .unwrap_or_default()
        .trim_start_matches("q=")
        .replace('+', " ");
    json(serde_json::json!({"query": q, "results": [
        {"title": "ACME Q3 report", "url": "https://acme.example/q3",
         "snippet": "Revenue rose 12% to $4.1B.", "revenue_growth_pct": 12, "revenue_usd_bn": 4.1}
    ]}))
}

async fn llm(req: Request<Incoming>) -> Response<Body> {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
    let stream = request["stream"].as_bool().unwrap_or(false);
    let result = request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
        .map(|m| m["content"].as_str().unwrap_or_default().to_string());
    let Some(result) = result else {
        // First turn: the model asks for the search tool, as a tool-calling model does.
        return json(
            serde_json::json!({"id": "chatcmpl-demo-1", "object": "chat.completion", "model": "demo",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_demo_1", "type": "function",
                    "function": {"name": "web_search", "arguments": "{\"query\":\"acme q3 revenue\"}"}}]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}}),
        );
    };
    let text = worded(&result);
    let words: Vec<String> = text
        .split(' ')
        .enumerate()
        .map(|(i, w)| {
            if i == 0 {
                w.to_string()
            } else {
                format!(" {w}")
            }
        })
        .collect();
    if !stream {
        return json(
            serde_json::json!({"id": "chatcmpl-demo", "object": "chat.completion", "model": "demo",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}}),
        );
    }
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let c = serde_json::json!({"id": "chatcmpl-demo", "object": "chat.completion.chunk", "model": "demo",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        Bytes::from(format!("data: {c}\n\n"))
    };
    let mut frames: Vec<Bytes> = words
        .iter()
        .map(|w| chunk(serde_json::json!({"content": w}), serde_json::Value::Null))
        .collect();
    frames.push(chunk(serde_json::json!({}), serde_json::json!("stop")));
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    // One frame per SSE event, as a streaming LLM sends them.
    let frames = frames
        .into_iter()
        .map(|b| Ok::<_, Infallible>(http_body::Frame::data(b)));
    let mut r = Response::new(StreamBody::new(futures_util::stream::iter(frames)).boxed());
    r.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("text/event-stream"),
    );
    r
}

/// The model's answer from the search result it was given: the figures the result has; a
/// result with none gets the figures a model remembers (made up, as models do).
fn worded(result: &str) -> String {
    let found: serde_json::Value = serde_json::from_str(result).unwrap_or_default();
    let first = &found["results"][0];
    match (&first["revenue_growth_pct"], &first["revenue_usd_bn"]) {
        (g @ serde_json::Value::Number(_), r @ serde_json::Value::Number(_)) => {
            format!("According to the Q3 report, revenue rose {g}% to ${r}B.")
        }
        _ => "According to the Q3 report, revenue rose 9% to $3.8B.".to_string(),
    }
}
