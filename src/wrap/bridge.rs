//! The bridge: the wrapped server as a Streamable HTTP MCP server on a Unix socket in the
//! proxy's wrap directory (`mcp::stdio`), the upstream the proxy forwards a wrap's POSTs
//! to. A request's line is written to the server's stdin and answered, as an SDK server
//! answers, with an event stream carrying the server's answer; a notification or a
//! client's answer is written and answered 202. A server that is gone is a 502 the wrap
//! knows (`EXITED_HEADER`): the proxy journals it, the client sees its stdout close.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::UnixListener;

use super::server::{Server, trim_newline};
use crate::mcp::SESSION_HEADER;
use crate::mcp::stdio::{EXITED_HEADER, Line, SERVER_LINE_HEADER, socket_file};

/// What the bridge answers from: the server, or why there is none.
pub enum Behind {
    Server(Arc<Server>),
    NotStarted(String),
}

struct State {
    behind: Behind,
    session: HeaderValue,
}

/// A bound bridge; its socket file is removed when it is dropped.
pub struct Bridge {
    path: PathBuf,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Bridge {
    /// Binds bridge `id` in `dir` and serves it until the process ends.
    pub fn bind(dir: &Path, id: &str, behind: Behind) -> std::io::Result<Bridge> {
        let path = dir.join(socket_file(id));
        let listener = UnixListener::bind(&path)?;
        let session = crate::mcp::stdio::random_hex(16);
        let state = Arc::new(State {
            behind,
            session: HeaderValue::from_str(&session).unwrap_or(HeaderValue::from_static("0")),
        });
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(&state, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Bridge { path })
    }
}

type Answer = Response<Full<Bytes>>;

async fn answer(state: &State, req: Request<Incoming>) -> Answer {
    if req.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "a stdio bridge takes POSTs");
    }
    let server_line = req.headers().contains_key(SERVER_LINE_HEADER);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("the body broke off: {e}")),
    };
    // Journaled by the proxy on its way here; the client already has it.
    if server_line {
        return plain(StatusCode::ACCEPTED, "");
    }
    let server = match &state.behind {
        Behind::Server(s) => s,
        Behind::NotStarted(why) => return exited(why),
    };
    let line = trim_newline(&body);
    match Line::read(line) {
        Line::Request { id } => match server.ask(line, &id).await {
            Ok(answer) => stream(state, &answer),
            Err(e) => exited(&e.to_string()),
        },
        Line::Notification | Line::Response { .. } | Line::Batch | Line::NotJson => {
            match server.write(line).await {
                Ok(()) => plain(StatusCode::ACCEPTED, ""),
                Err(e) => exited(&e.to_string()),
            }
        }
    }
}

/// The server's answer as the one event of an event stream.
fn stream(state: &State, answer: &[u8]) -> Answer {
    let mut body = Vec::with_capacity(answer.len() + 24);
    body.extend_from_slice(b"event: message\ndata: ");
    body.extend_from_slice(answer);
    body.extend_from_slice(b"\n\n");
    let mut r = Response::new(Full::new(Bytes::from(body)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(SESSION_HEADER, state.session.clone());
    r
}

fn exited(why: &str) -> Answer {
    let mut r = plain(StatusCode::BAD_GATEWAY, &format!("flakestorm wrap: {why}"));
    r.headers_mut()
        .insert(EXITED_HEADER, HeaderValue::from_static("1"));
    r
}

fn plain(status: StatusCode, text: &str) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(text.to_string())));
    *r.status_mut() = status;
    if !text.is_empty() {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    r
}
