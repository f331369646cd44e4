//! Knowing an MCP request before the rules decide: a `protocol: mcp` tool's requests, and
//! requests whose head says MCP (the transport's headers), have their JSON-RPC body read
//! (up to `mcp::MAX_MESSAGE`) and what it carries noted on the exchange (`mcp`), so rules
//! can take a `tools/call` of one MCP tool and leave `initialize` alone. The body goes on
//! whole; a longer one is forwarded unread and journaled as `(unread)`.

use http::Method;
use http::request::Parts;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::forward::ClientBodyError;
use super::recorder::Recorder;
use super::request_body::{read_head, rejoin};
use super::{BoxError, Proxy, ProxyBody};
use crate::exchange::{McpCall, Target};
use crate::mcp::{
    MAX_MESSAGE, has_mcp_header, head_says_mcp, known_method, marker, read_request, scan_prefix,
};

/// The request body to forward, marked so that a client's broken upload is answered 400,
/// not blamed on the upstream; an MCP request's message read on the way (`read`).
pub async fn body(
    proxy: &Proxy,
    rec: &mut Recorder,
    parts: &Parts,
    incoming: Incoming,
    upgrade: bool,
) -> ProxyBody {
    let body: ProxyBody = incoming
        .map_err(|e| -> BoxError { Box::new(ClientBodyError(e)) })
        .boxed();
    match upgrade {
        true => body,
        false => read(proxy, rec, parts, body).await,
    }
}

/// Reads the MCP message of an MCP request and notes it on the exchange; returns the body
/// to forward. Other requests pass untouched, unread.
async fn read(proxy: &Proxy, rec: &mut Recorder, parts: &Parts, body: ProxyBody) -> ProxyBody {
    let declared = match &rec.exchange().target {
        Target::Tool { name } => proxy.inner.chaos.speaks_mcp(name),
        Target::Other => false,
        Target::Llm { .. } | Target::Embeddings { .. } => return body,
    };
    let detected = !declared && head_says_mcp(&parts.method, &parts.headers);
    if !declared && !detected {
        return body;
    }
    let (call, body) = match parts.method {
        Method::POST => {
            let (bytes, rest) = read_head(body, MAX_MESSAGE).await;
            let call = match &rest {
                Some(_) => unread(&bytes, detected),
                None => {
                    let ct = parts
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok());
                    read_request(&bytes, ct, detected)
                }
            };
            (call, rejoin(bytes, rest))
        }
        Method::GET if accepts_stream(&parts.headers) => (marker("(stream)", None, detected), body),
        Method::DELETE => (marker("(end session)", None, detected), body),
        ref other => {
            let ct = parts.headers.get(http::header::CONTENT_TYPE);
            let ct = ct.and_then(|v| v.to_str().ok()).unwrap_or("none");
            let note =
                format!("an HTTP {other} request carries no MCP message (content type `{ct}`)");
            (marker("(not json-rpc)", Some(note), detected), body)
        }
    };
    // Undeclared, and only an `Accept` header to go by: MCP only if the body is a request
    // of a method MCP defines (other JSON-RPC over HTTP is not MCP).
    let known = call.is_request() && known_method(&call.method);
    if detected && !has_mcp_header(&parts.headers) && !known {
        return body;
    }
    let mut call = call;
    let host = parts.uri.host().unwrap_or_default();
    if crate::mcp::stdio::bridge_of(host).is_some() {
        call.transport = Some("stdio".into());
        if parts
            .headers
            .contains_key(crate::mcp::stdio::SERVER_LINE_HEADER)
        {
            call.note = Some(
                "the server wrote a line that is not JSON-RPC on stdout: passed to the client \
                 untouched"
                    .into(),
            );
        }
    }
    call.session = parts.headers.get(crate::mcp::SESSION_HEADER).map(|v| {
        format!(
            "{:08x}",
            crate::chaos::stream(&String::from_utf8_lossy(v.as_bytes())) >> 32
        )
    });
    rec.exchange_mut().mcp = Some(call);
    body
}

/// A GET that asks for the server's event stream (a plain GET to an MCP tool is not MCP).
fn accepts_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(crate::exchange::is_event_stream))
}

/// A message not read whole: over the limit (its first bytes still say which tool it
/// calls, for the traffic checks), or its upload failed.
fn unread(read: &[u8], detected: bool) -> McpCall {
    let note = match read.len() > MAX_MESSAGE {
        true => format!("the message is over {MAX_MESSAGE} bytes: forwarded unread"),
        false => "the upload failed before the message was read".to_string(),
    };
    let mut call = marker("(unread)", Some(note), detected);
    if let (Some(m), tool) = scan_prefix(read)
        && m == crate::exchange::TOOLS_CALL
    {
        call.tool = tool;
    }
    call
}
