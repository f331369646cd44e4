//! Raw requests to the agent, for the wire-level mutations: bytes written to a fresh TCP
//! (or TLS) connection exactly as given, which no HTTP client library would send (CRLF in a
//! header, conflicting lengths, a bare LF), optionally paced as a slow client, and one
//! response read back (`raw_response`), all within the agent's own deadline.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use rustls::ClientConfig;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::raw_response::{CAPPED, CLOSED, Partial, RESET, read_response};
use crate::config::AgentTarget;

/// What came back for one raw request.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    /// The final status, once a well-formed status line arrived.
    pub status: Option<u16>,
    /// The response head as text (for a reply that is not HTTP, its first bytes).
    pub head: String,
    /// Up to 1 MiB of the body, de-chunked.
    pub body: Bytes,
    pub elapsed: Duration,
    /// Why there is no complete response: "connection closed before a response",
    /// "timed out after N ms", a connect or TLS error, a malformed reply; or the note that
    /// the body was capped at 1 MiB.
    pub error: Option<String>,
    /// The connection was made (TCP, and TLS for https): the bytes were offered to the
    /// agent. False when flakestorm could not reach the endpoint at all, which says nothing
    /// about how the agent handles the attack.
    pub delivered: bool,
}

impl RawReply {
    /// The agent closed (or reset) the connection without sending a byte.
    pub fn closed_without_response(&self) -> bool {
        self.status.is_none()
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(CLOSED) || e.starts_with(RESET))
    }

    /// The response was complete but for a body over 1 MiB, whose rest was not read.
    pub fn body_capped(&self) -> bool {
        self.error.as_deref() == Some(CAPPED)
    }
}

/// How a raw request is written.
#[derive(Debug, Clone, Default)]
pub struct RawOptions {
    /// Write `chunk` bytes at a time, `every` apart (a slow client).
    pub pace: Option<(usize, Duration)>,
    /// Shut the write side down after the request, so the agent sees its input end (for a
    /// message cut short, which the agent would otherwise wait on).
    pub half_close: bool,
    /// Roots trusted for an https endpoint besides the public and OS ones (a private CA).
    pub extra_roots: Vec<CertificateDer<'static>>,
}

/// Writes `bytes` to a fresh connection to `target.endpoint` (TLS for https, trusting the
/// public and OS roots), paced as `pace` says, and reads one response: see `send_raw_with`.
pub async fn send_raw(
    target: &AgentTarget,
    bytes: &[u8],
    pace: Option<(usize, Duration)>,
) -> RawReply {
    let opts = RawOptions {
        pace,
        ..RawOptions::default()
    };
    send_raw_with(target, bytes, &opts).await
}

/// `send_raw` with every option. The response is framed by Content-Length, chunked coding
/// or the close; at most 1 MiB of body is kept. The deadline is `target.timeout` plus the
/// time the pacing itself takes, so a slow write is never the agent's delay. Never panics.
pub async fn send_raw_with(target: &AgentTarget, bytes: &[u8], opts: &RawOptions) -> RawReply {
    let started = Instant::now();
    let budget = target
        .timeout
        .saturating_add(pacing_time(bytes.len(), opts.pace));
    let mut partial = Partial::default();
    let outcome = tokio::time::timeout(budget, exchange(target, bytes, opts, &mut partial)).await;
    let error = match outcome {
        Err(_) => Some(format!("timed out after {} ms", budget.as_millis())),
        Ok(Err(e)) => Some(e),
        Ok(Ok(())) => partial.note.take(),
    };
    RawReply {
        status: partial.status,
        head: partial.head,
        body: Bytes::from(partial.body),
        elapsed: started.elapsed(),
        error,
        delivered: partial.delivered,
    }
}

/// How long writing `len` bytes paced as `pace` takes (the pauses between writes).
fn pacing_time(len: usize, pace: Option<(usize, Duration)>) -> Duration {
    let Some((chunk, every)) = pace else {
        return Duration::ZERO;
    };
    let writes = len.div_ceil(chunk.max(1)).saturating_sub(1);
    every.saturating_mul(u32::try_from(writes).unwrap_or(u32::MAX))
}

async fn exchange(
    target: &AgentTarget,
    bytes: &[u8],
    opts: &RawOptions,
    out: &mut Partial,
) -> Result<(), String> {
    let endpoint = &target.endpoint;
    let host = endpoint
        .host()
        .ok_or_else(|| format!("endpoint {endpoint} has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let https = endpoint.scheme_str() == Some("https");
    let port = endpoint.port_u16().unwrap_or(if https { 443 } else { 80 });
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))?;
    // Each paced write goes out as its own segment.
    let _ = tcp.set_nodelay(true);
    if !https {
        out.delivered = true;
        return talk(tcp, bytes, opts, out).await;
    }
    let config = tls_config(&opts.extra_roots)?;
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("`{host}` is not a TLS server name: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {host}:{port}: {e}"))?;
    out.delivered = true;
    talk(tls, bytes, opts, out).await
}

/// HTTP/1.1-only client config: the bytes written are HTTP/1, so h2 must not be offered.
/// The public and OS roots are loaded once per process.
fn tls_config(extra: &[CertificateDer<'static>]) -> Result<Arc<ClientConfig>, String> {
    static PUBLIC: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    let build = |extra: &[CertificateDer<'static>]| {
        crate::tls::client_config(extra)
            .map(|c| c.http1)
            .map_err(|e| format!("TLS for the agent endpoint: {e}"))
    };
    if extra.is_empty() {
        PUBLIC.get_or_init(|| build(&[])).clone()
    } else {
        build(extra)
    }
}

/// Writes the request while reading the response, so an agent that answers early (a 413
/// before the whole body is in) is heard, not cut off by a failed write.
async fn talk<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    bytes: &[u8],
    opts: &RawOptions,
    out: &mut Partial,
) -> Result<(), String> {
    let head_request = bytes.starts_with(b"HEAD ");
    let (mut r, mut w) = tokio::io::split(stream);
    let write = async {
        match opts.pace {
            None => w.write_all(bytes).await?,
            Some((chunk, every)) => {
                for (i, part) in bytes.chunks(chunk.max(1)).enumerate() {
                    if i > 0 {
                        tokio::time::sleep(every).await;
                    }
                    w.write_all(part).await?;
                    w.flush().await?;
                }
            }
        }
        w.flush().await?;
        if opts.half_close {
            w.shutdown().await?;
        }
        Ok::<_, std::io::Error>(w)
    };
    let read = read_response(&mut r, head_request, out);
    tokio::pin!(write, read);
    let mut write_error = None;
    // The write half, kept until the read ends.
    let mut writer = None;
    let result = loop {
        tokio::select! {
            res = &mut read => break res,
            w = &mut write, if write_error.is_none() && writer.is_none() => match w {
                Ok(w) => writer = Some(w),
                Err(e) => write_error = Some(e.to_string()),
            },
        }
    };
    match (result, write_error) {
        (Err(e), Some(w)) => Err(format!("{e} (writing the request failed: {w})")),
        (result, _) => result,
    }
}
