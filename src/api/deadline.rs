//! The control listener's connection deadline: axum serves without any, so a client that
//! sent no byte (or half a request) held its connection forever. Every read that waits
//! longer than the limit (`proxy.header_timeout_ms`) fails the connection, which bounds a
//! silent client, a slow head and an idle keep-alive alike. Every byte written restarts
//! the wait too: a response that streams (a run's `/events`, which writes a keep-alive
//! comment more often than the limit) keeps its connection while it writes, and a client
//! that stops reading it stops the writes, and so meets the deadline.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// A `TcpListener` whose connections fail a read that waits longer than `limit`.
pub struct DeadlineListener {
    inner: TcpListener,
    limit: Duration,
}

impl DeadlineListener {
    pub fn new(inner: TcpListener, limit: Duration) -> Self {
        DeadlineListener { inner, limit }
    }
}

impl Listener for DeadlineListener {
    type Io = ReadDeadline;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // axum's own accept loop: it retries and pauses on resource errors.
        let (io, addr) = Listener::accept(&mut self.inner).await;
        let io = ReadDeadline {
            io,
            limit: self.limit,
            waiting: None,
        };
        (io, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A stream whose reads fail with `TimedOut` after waiting `limit` for a byte.
pub struct ReadDeadline {
    io: TcpStream,
    limit: Duration,
    /// Armed when a read first waits; cleared when bytes (or EOF) arrive or bytes are
    /// written.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl AsyncRead for ReadDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(r) = Pin::new(&mut this.io).poll_read(cx, buf) {
            this.waiting = None;
            return Poll::Ready(r);
        }
        let limit = this.limit;
        let waiting = this
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match waiting.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("control connection silent for {limit:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for ReadDeadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            this.waiting = None;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
