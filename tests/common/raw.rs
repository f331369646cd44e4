//! Raw bytes to the proxy, for requests no HTTP client would send: write them, read the
//! response head (or whatever arrives before the proxy closes the connection).

use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::within;

/// Writes `bytes` on `s` and reads up to the end of the response head.
pub async fn exchange_raw<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, bytes: &[u8]) -> String {
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    within("proxy answers", async {
        let mut buf = [0u8; 4096];
        while !out.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    String::from_utf8_lossy(&out).into_owned()
}

/// `exchange_raw` on a new connection to `proxy`.
pub async fn raw(proxy: SocketAddr, bytes: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(proxy).await.unwrap();
    exchange_raw(&mut s, bytes).await
}
