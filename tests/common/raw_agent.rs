//! An in-process agent that speaks no HTTP library: it records every byte each connection
//! sends (so a test can check a raw request arrived exactly as built) and, once it has the
//! bytes it expects, answers with a canned reply, closes, or never answers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the agent does once a connection has sent what it expects.
#[derive(Debug, Clone)]
pub enum Canned {
    /// These bytes, then the connection closed.
    Reply(Vec<u8>),
    /// These bytes, then the write side closed, and nothing more read (an agent that
    /// refuses early and ignores the rest of the request).
    ReplyAndStall(Vec<u8>),
    /// Close without a byte.
    Close,
    /// Keep the connection open and never answer.
    Hang,
}

/// A complete HTTP/1.1 response with `status` and a JSON `body`.
pub fn status(status: u16, body: &str) -> Canned {
    Canned::Reply(
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

pub struct RawAgent {
    pub addr: SocketAddr,
    /// The bytes each connection sent, in the order connections were accepted.
    log: Arc<Mutex<Vec<Vec<u8>>>>,
    expect: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl RawAgent {
    /// From now on, a connection is answered once it has sent `n` bytes (by default,
    /// once it ends).
    pub fn expect(&self, n: usize) {
        self.expect.store(n, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Vec<u8>> {
        self.log.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }
}

impl Drop for RawAgent {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts the agent: each connection is read until it has sent the bytes `expect` says (or
/// ends), then connection `n` (0-based, in accept order) gets `answer(n)`. `tls`: serve TLS.
pub async fn start(
    tls: Option<Arc<ServerConfig>>,
    answer: impl Fn(usize) -> Canned + Send + Sync + 'static,
) -> RawAgent {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let stop = CancellationToken::new();
    let answer = Arc::new(answer);
    let expect = Arc::new(AtomicUsize::new(usize::MAX));
    let expect2 = expect.clone();
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let (log2, stop2) = (log.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                r = listener.accept() => r.unwrap(),
                () = stop2.cancelled() => return,
            };
            let n = {
                let mut log = log2.lock().unwrap();
                log.push(vec![]);
                log.len() - 1
            };
            let canned = answer(n);
            let expect = expect2.load(Ordering::SeqCst);
            let (log, stop, acceptor) = (log2.clone(), stop2.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    Some(a) => {
                        if let Ok(s) = a.accept(stream).await {
                            serve(s, n, expect, canned, log, stop).await;
                        }
                    }
                    None => serve(stream, n, expect, canned, log, stop).await,
                }
            });
        }
    });
    RawAgent {
        addr,
        log,
        expect,
        stop,
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    n: usize,
    expect: usize,
    canned: Canned,
    log: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: CancellationToken,
) {
    let mut buf = vec![0u8; 64 << 10];
    let mut got = 0;
    while got < expect {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                got += k;
                log.lock().unwrap()[n].extend_from_slice(&buf[..k]);
            }
        }
    }
    match canned {
        Canned::Reply(bytes) => {
            let _ = s.write_all(&bytes).await;
            let _ = s.shutdown().await;
        }
        Canned::ReplyAndStall(bytes) => {
            let _ = s.write_all(&bytes).await;
            let _ = s.shutdown().await;
            stop.cancelled().await;
        }
        Canned::Close => {
            let _ = s.shutdown().await;
        }
        Canned::Hang => {
            // Keep reading (and logging) until the test ends.
            loop {
                tokio::select! {
                    r = s.read(&mut buf) => match r {
                        Ok(0) | Err(_) => { stop.cancelled().await; return; }
                        Ok(k) => log.lock().unwrap()[n].extend_from_slice(&buf[..k]),
                    },
                    () = stop.cancelled() => return,
                }
            }
        }
    }
}
