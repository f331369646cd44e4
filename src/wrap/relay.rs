//! A wrap's way to its bridge through the run's proxy: each line the client writes is
//! POSTed, as a Streamable HTTP client would, through the agent's lane
//! (`FLAKESTORM_WRAP_PROXY`) to `http://<bridge>.stdio.flakestorm.invalid/<tool>`, so
//! the proxy reads it, applies the run's MCP rules and journals it in the agent's case;
//! what comes back (the server's answer, edited or replaced by a fault) becomes the lines
//! the client reads.

use std::net::SocketAddr;
use std::sync::Mutex;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::mcp::stdio::{EXITED_HEADER, HOST_SUFFIX, SERVER_LINE_HEADER, url};
use crate::mcp::{SESSION_HEADER, event_data, next_event};

/// The proxy a wrap POSTs through, and what it says to it.
pub struct Through {
    proxy: SocketAddr,
    auth: Option<HeaderValue>,
    url: String,
    host: HeaderValue,
    /// The bridge's `Mcp-Session-Id`, sent back as a Streamable HTTP client does.
    session: Mutex<Option<HeaderValue>>,
}

/// What a POST came back with.
#[derive(Debug)]
pub enum Posted {
    /// Lines for the client (an event stream's messages, or a JSON answer).
    Lines(Vec<Bytes>),
    /// Accepted: nothing to hand the client.
    Nothing,
    /// The server is gone: the client sees its stdout close, as without the wrap.
    Exited,
    /// An HTTP error in place of an answer (a fault on the call, or the proxy's own).
    Status(StatusCode, Bytes),
}

/// Why a POST got no answer at all: the proxy cannot be reached.
#[derive(Debug, thiserror::Error)]
#[error("the proxy at {proxy} cannot be reached: {why}")]
pub struct Unreachable {
    proxy: SocketAddr,
    why: String,
}

impl Through {
    /// The proxy of `proxy_url` (`http://[user:password@]host:port`), for `tool` through
    /// bridge `bridge`; the error says what is wrong with the URL.
    pub fn new(proxy_url: &str, bridge: &str, tool: &str) -> Result<Through, String> {
        let rest = proxy_url
            .strip_prefix("http://")
            .ok_or_else(|| format!("`{proxy_url}` is not an http:// proxy URL"))?;
        let rest = rest.trim_end_matches('/');
        let (userinfo, addr) = match rest.rsplit_once('@') {
            Some((u, a)) => (Some(u), a),
            None => (None, rest),
        };
        let proxy: SocketAddr = addr
            .parse()
            .map_err(|_| format!("`{addr}` is not an IP address and port"))?;
        let auth = userinfo.map(|u| {
            let decoded = percent_encoding::percent_decode_str(u).decode_utf8_lossy();
            let token = base64::engine::general_purpose::STANDARD.encode(decoded.as_bytes());
            HeaderValue::from_str(&format!("Basic {token}")).unwrap_or(HeaderValue::from_static(""))
        });
        let host = HeaderValue::from_str(&format!("{bridge}{HOST_SUFFIX}"))
            .map_err(|_| format!("`{bridge}` cannot name a host"))?;
        Ok(Through {
            proxy,
            auth,
            url: url(bridge, tool),
            host,
            session: Mutex::new(None),
        })
    }

    /// POSTs one line: a message of the client's, or (`server_line`) a line the server
    /// wrote that is not JSON-RPC, for the journal alone.
    pub async fn post(&self, line: Bytes, server_line: bool) -> Result<Posted, Unreachable> {
        let unreachable = |why: String| Unreachable {
            proxy: self.proxy,
            why,
        };
        let tcp = TcpStream::connect(self.proxy)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tokio::spawn(conn);
        let json = !server_line && matches!(line.first(), Some(b'{' | b'['));
        let ct = match json {
            true => "application/json",
            false => "text/plain; charset=utf-8",
        };
        let mut req = Request::post(&self.url)
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, ct)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Full::new(line))
            .map_err(|e| unreachable(e.to_string()))?;
        let h = req.headers_mut();
        if let Some(auth) = &self.auth {
            h.insert(header::PROXY_AUTHORIZATION, auth.clone());
        }
        if let Some(session) = self.lock_session().clone() {
            h.insert(SESSION_HEADER, session);
        }
        if server_line {
            h.insert(SERVER_LINE_HEADER, HeaderValue::from_static("1"));
        }
        let resp = send
            .send_request(req)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        if let Some(s) = resp.headers().get(SESSION_HEADER) {
            *self.lock_session() = Some(s.clone());
        }
        let status = resp.status();
        let exited = resp.headers().contains_key(EXITED_HEADER);
        let stream = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(crate::exchange::is_event_stream);
        // A body that breaks off is what came: a truncation fault's answer.
        let body = match resp.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => Bytes::new(),
        };
        Ok(match () {
            () if exited => Posted::Exited,
            () if status == StatusCode::ACCEPTED => Posted::Nothing,
            () if !status.is_success() => Posted::Status(status, body),
            () if stream => Posted::Lines(events(&body)),
            () if body.is_empty() => Posted::Nothing,
            () => Posted::Lines(vec![one_line(&body)]),
        })
    }

    fn lock_session(&self) -> std::sync::MutexGuard<'_, Option<HeaderValue>> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Each event's data, as one line each (an event's data lines joined by a space: JSON
/// allows it, and the stdio transport forbids newlines in a message). A last event cut
/// off before its blank line is still handed on: the client meets the cut.
fn events(body: &[u8]) -> Vec<Bytes> {
    let mut lines = vec![];
    let mut rest = body;
    loop {
        let end = next_event(rest).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        if let Some(data) = event_data(&rest[..end]) {
            lines.push(one_line(data.as_bytes()));
        }
        rest = &rest[end..];
    }
    lines
}

/// `b` with no line break inside or at its end.
fn one_line(b: &[u8]) -> Bytes {
    let trimmed = super::server::trim_newline(b);
    match trimmed.iter().any(|&c| c == b'\n' || c == b'\r') {
        false => Bytes::copy_from_slice(trimmed),
        true => trimmed
            .iter()
            .map(|&c| if c == b'\n' || c == b'\r' { b' ' } else { c })
            .collect::<Vec<u8>>()
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_url_with_credentials_is_read_as_the_pool_writes_it() {
        let t = Through::new(
            "http://a%40b:p%3Ass@127.0.0.1:4000",
            "abcdef0123456789",
            "files",
        )
        .unwrap();
        assert_eq!(t.proxy, "127.0.0.1:4000".parse().unwrap());
        let expect = base64::engine::general_purpose::STANDARD.encode("a@b:p:ss");
        assert_eq!(t.auth.unwrap(), format!("Basic {expect}").as_str());
        assert_eq!(
            t.url,
            "http://abcdef0123456789.stdio.flakestorm.invalid/files"
        );
        for bad in [
            "https://127.0.0.1:1",
            "http://proxy.example:80",
            "127.0.0.1:1",
        ] {
            assert!(Through::new(bad, "abcdef0123456789", "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn an_event_stream_becomes_one_line_per_message() {
        let body = b"event: message\ndata: {\"a\":1}\n\nevent: message\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n: ping\n\ndata: {\"cut\"";
        let lines = events(body);
        assert_eq!(
            lines,
            vec![
                Bytes::from_static(b"{\"a\":1}"),
                Bytes::from_static(b"{\"b\": 2}"),
                Bytes::from_static(b"{\"cut\""),
            ]
        );
    }
}
