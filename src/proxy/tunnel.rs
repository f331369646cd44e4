//! Blind relaying of CONNECT tunnels (passthrough hosts, non-TLS traffic) and captured
//! TCP, with what each carried and how it ended; and `Prefixed`, which puts back bytes
//! already read from a stream (the peeked first bytes of a tunnel).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::Proxy;

/// A stream whose first reads return `prefix`, then the inner stream's bytes.
pub struct Prefixed<T> {
    prefix: Bytes,
    inner: T,
}

impl<T> Prefixed<T> {
    pub fn new(prefix: Bytes, inner: T) -> Self {
        Prefixed { prefix, inner }
    }

    /// The first byte not yet read, if it is in the prefix.
    pub fn first_byte(&self) -> Option<u8> {
        self.prefix.first().copied()
    }

    /// The bytes put back and not yet read.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Prefixed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Prefixed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// How a relay ended.
#[derive(Debug)]
pub enum Ended {
    /// Both sides closed.
    Closed,
    /// Reading from or writing to the client failed.
    ClientBroke(io::Error),
    /// Reading from or writing to the upstream failed.
    UpstreamBroke(io::Error),
    /// The proxy stopped hard first.
    ShutDown,
}

/// What a relay carried: the bytes delivered each way, whichever way it ended.
#[derive(Debug)]
pub struct Relayed {
    /// Written to the upstream.
    pub sent: u64,
    /// Written to the client.
    pub received: u64,
    pub ended: Ended,
}

/// Relays bytes both ways until either side closes or the proxy stops hard.
pub async fn relay<C>(proxy: &Proxy, client: C, upstream: TcpStream, target: &str)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let r = carry(proxy, client, upstream).await;
    let (up, down) = (r.sent, r.received);
    match r.ended {
        Ended::Closed => tracing::debug!(target, up, down, "tunnel closed"),
        Ended::ClientBroke(e) | Ended::UpstreamBroke(e) => {
            tracing::debug!(target, up, down, "tunnel ended: {e}");
        }
        Ended::ShutDown => {}
    }
}

/// Relays bytes both ways as `relay` does, and says what it carried and how it ended.
pub async fn carry<C>(proxy: &Proxy, client: C, upstream: TcpStream) -> Relayed
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    proxy.metrics().tunnel();
    let (mut client, mut upstream) = (Counted::new(client), Counted::new(upstream));
    let copied = tokio::select! {
        r = tokio::io::copy_bidirectional(&mut client, &mut upstream) => Some(r),
        () = proxy.inner.shutdown.hard.cancelled() => None,
    };
    let ended = match copied {
        None => Ended::ShutDown,
        Some(Ok(_)) => Ended::Closed,
        // The side whose own I/O failed first is the one that broke.
        Some(Err(e)) if client.failed => Ended::ClientBroke(e),
        Some(Err(e)) => Ended::UpstreamBroke(e),
    };
    Relayed {
        sent: upstream.written,
        received: client.written,
        ended,
    }
}

/// A stream that counts the bytes written to it and notes whether any of its I/O failed:
/// `copy_bidirectional` says neither when it is cut short.
struct Counted<T> {
    inner: T,
    written: u64,
    failed: bool,
}

impl<T> Counted<T> {
    fn new(inner: T) -> Self {
        Counted {
            inner,
            written: 0,
            failed: false,
        }
    }

    fn note<R>(&mut self, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        self.failed |= matches!(r, Poll::Ready(Err(_)));
        r
    }

    fn wrote(&mut self, r: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = r {
            self.written += n as u64;
        }
        self.note(r)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.note(r)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(r)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn prefix_is_read_before_the_stream() {
        let (mut a, b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut a, b"world")
            .await
            .unwrap();
        drop(a);
        let mut p = Prefixed::new(Bytes::from_static(b"hello "), b);
        let mut out = String::new();
        p.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "hello world");
    }

    #[tokio::test]
    async fn a_counted_stream_counts_what_reached_it_and_which_side_broke() {
        use tokio::io::AsyncWriteExt;
        let (client_end, mut agent) = tokio::io::duplex(64);
        let (upstream_end, mut server) = tokio::io::duplex(64);
        let (mut client, mut upstream) = (Counted::new(client_end), Counted::new(upstream_end));
        agent.write_all(b"hello").await.unwrap();
        agent.shutdown().await.unwrap();
        server.write_all(b"answer").await.unwrap();
        server.shutdown().await.unwrap();
        let (up, down) = tokio::io::copy_bidirectional(&mut client, &mut upstream)
            .await
            .unwrap();
        assert_eq!((up, down), (5, 6));
        assert_eq!((upstream.written, client.written), (5, 6));
        assert!(!client.failed && !upstream.failed);

        // The agent hangs up: writing the upstream's answer to it fails, on its side.
        let (client_end, agent) = tokio::io::duplex(64);
        let (upstream_end, mut server) = tokio::io::duplex(64);
        let (mut client, mut upstream) = (Counted::new(client_end), Counted::new(upstream_end));
        drop(agent);
        server.write_all(b"answer").await.unwrap();
        let copied = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        assert!(copied.is_err());
        assert!(client.failed && !upstream.failed);
        assert_eq!(client.written, 0);
    }
}
