//! The HTTP client of a running daemon's control API (`--server URL`): where it is, its
//! token (given, or read from the data_dir of a daemon on this machine), requests with the
//! daemon's errors in words, and a 401 that says where the token comes from. Also the
//! plain-HTTP probe of its open `/healthz` and `/readyz` (`flakestorm health`).

use std::path::Path;

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::agent::{DirectClient, direct_client};

/// Where the daemon is and how to talk to it.
pub struct Server {
    pub(super) base: String,
    token: Option<String>,
    /// Where the token was looked for when none was given, and what came of it.
    token_file: Option<String>,
    client: DirectClient,
}

/// Streams that drop are resumed this many times before the client gives up.
pub(super) const RESUMES: u32 = 5;

impl Server {
    pub fn new(url: &str, token: Option<String>) -> Result<Server, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("--server {url}: not a URL ({e})"))?;
        match uri.scheme_str() {
            Some("http" | "https") if uri.host().is_some() => {}
            _ => {
                return Err(format!(
                    "--server {url}: expected http://HOST:PORT or https://…"
                ));
            }
        }
        let client = direct_client(true).map_err(|e| e.to_string())?;
        Ok(Server {
            base: url.trim_end_matches('/').to_string(),
            token,
            token_file: None,
            client,
        })
    }

    /// The token in `path` (`--token-file`), when one is given: an error names the file
    /// when it cannot be read or holds no token.
    pub fn token_file(mut self, path: Option<&Path>) -> Result<Server, String> {
        let Some(path) = path else { return Ok(self) };
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--token-file {shown}: cannot read it ({e})"))?;
        let token = text.trim();
        if token.is_empty() || token.contains(char::is_whitespace) {
            return Err(format!(
                "--token-file {shown}: expected the daemon's control token alone in the file, \
                 found {}",
                if token.is_empty() {
                    "nothing"
                } else {
                    "several words"
                }
            ));
        }
        self.token = Some(token.to_string());
        self.token_file = Some(shown.to_string());
        Ok(self)
    }

    /// Without `--token`, a daemon on this machine's loopback is sent the token it keeps in
    /// `data_dir/control.token` (the config's `data_dir`), which this user can read.
    pub fn token_from(mut self, data_dir: &Path) -> Server {
        if self.token.is_some() || !self.local() {
            return self;
        }
        match crate::api::token::read(data_dir) {
            Ok(t) => {
                self.token = Some(t);
                self.token_file =
                    Some(data_dir.join(crate::api::token::FILE).display().to_string());
            }
            Err(e) => self.token_file = Some(e.to_string()),
        }
        self
    }

    /// The daemon runs on this machine, so it can read the config file where it is.
    pub(super) fn local(&self) -> bool {
        let uri: Uri = self.base.parse().unwrap_or_default();
        let host = uri.host().unwrap_or("").trim_matches(['[', ']']);
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        last_event: Option<u64>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        if let Some(t) = &self.token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        if let Some(n) = last_event {
            req = req.header("last-event-id", n.to_string());
        }
        let body = match body {
            Some(v) => {
                req = req.header(http::header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(v.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        let req = req.body(body).map_err(|e| format!("{url}: {e}"))?;
        self.client.request(req).await.map_err(|e| {
            format!(
                "cannot reach the daemon at {}: {}",
                self.base,
                crate::agent::root_cause(&e)
            )
        })
    }

    /// A JSON answer, or the daemon's error in words.
    pub(super) async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let resp = self.send(method, path, body, None).await?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(self.unauthorized());
        }
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the daemon's answer: {e}"))?
            .to_bytes();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(v);
        }
        Err(api_error(status, &v))
    }
}

impl Server {
    /// A 401 in words: where the token comes from, and where it was looked for.
    pub(super) fn unauthorized(&self) -> String {
        let tried = match (&self.token, &self.token_file) {
            (Some(_), Some(file)) => format!(" (the token sent was read from {file})"),
            (None, Some(why)) => format!(" (none was found: {why})"),
            (Some(_), None) => " (the token sent was --token or FLAKESTORM_API_TOKEN)".into(),
            (None, None) => String::new(),
        };
        format!(
            "the daemon refused the request: missing or wrong token{tried}. Pass --token-file \
             (or FLAKESTORM_API_TOKEN, or --token) with the daemon's control.token or, when it \
             has none set, the token it keeps in its data_dir/control.token"
        )
    }
}

/// The daemon's error body in words: its message and each problem with its path.
pub(super) fn api_error(status: StatusCode, v: &Value) -> String {
    let e = &v["error"];
    let mut out = match e["message"].as_str() {
        Some(m) => format!("the daemon refused the run: {m}"),
        None => format!("the daemon answered HTTP {status}"),
    };
    for p in e["errors"].as_array().into_iter().flatten() {
        let (path, message) = (
            p["path"].as_str().unwrap_or(""),
            p["message"].as_str().unwrap_or(""),
        );
        out.push_str(&format!("\n  - {path}: {message}"));
    }
    out
}

/// One GET of an open probe over plain HTTP/1.1: the status and at most `limit` bytes of
/// the body, or the root cause of the failure. No TLS roots are loaded (a container's
/// health check runs every few seconds), no proxy is taken from the environment (the
/// agent's sidecar sets one), no token is sent, no connection is kept; `host` is the Host
/// header as the URL wrote it.
pub(super) async fn probe(url: &str, host: &str, limit: usize) -> Result<(u16, String), String> {
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Empty<Bytes>>();
    let req = Request::get(url)
        .header(http::header::HOST, host)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    let resp = client
        .request(req)
        .await
        .map_err(|e| crate::agent::root_cause(&e))?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = frame.map_err(|e| crate::agent::root_cause(&e))?;
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    bytes.truncate(limit);
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}
