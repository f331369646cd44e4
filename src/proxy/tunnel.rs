//! Blind relaying of CONNECT tunnels (passthrough hosts, non-TLS traffic), and `Prefixed`,
//! which puts back bytes already read from a stream (the peeked first bytes of a tunnel).

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

/// Relays bytes both ways until either side closes or the proxy stops hard.
pub async fn relay<C>(proxy: &Proxy, mut client: C, mut upstream: TcpStream, target: &str)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    proxy.metrics().tunnel();
    tokio::select! {
        r = tokio::io::copy_bidirectional(&mut client, &mut upstream) => match r {
            Ok((up, down)) => tracing::debug!(target, up, down, "tunnel closed"),
            Err(e) => tracing::debug!(target, "tunnel ended: {e}"),
        },
        () = proxy.inner.shutdown.hard.cancelled() => {}
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
}
