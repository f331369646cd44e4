//! The control listener's connection deadline: axum serves without any, so a client that
//! sent no byte (or half a request) held its connection forever. Every read that waits
//! longer than the limit (`proxy.header_timeout_ms`) fails the connection, which bounds a
//! silent client, a slow head and an idle keep-alive alike. Every byte written restarts
//! the wait too: a response that streams (a run's `/events`, which writes a keep-alive
//! comment more often than the limit) keeps its connection while it writes, and a client
//! that stops reading it stops the writes, and so meets the deadline. While a handler
//! works on one of its requests (`conn::Working`) the deadline sleeps: it bounds reading,
//! not the work a request asked for (issue #51).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

use super::conn::Working;

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
            working: Working::default(),
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
    /// Whether a handler is at work on one of its requests.
    working: Working,
}

impl ReadDeadline {
    /// What the connection's handlers mark while they work (`conn::at_work`).
    pub fn working(&self) -> Working {
        self.working.clone()
    }
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
        if this.working.busy() {
            // Hyper watching for the client to go while a handler works: no deadline.
            this.waiting = None;
            return Poll::Pending;
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A connection and the client end of it, the server's under a `limit` deadline.
    async fn pair(limit: Duration) -> (ReadDeadline, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let mut listener = DeadlineListener::new(listener, limit);
        let (io, _) = Listener::accept(&mut listener).await;
        (io, client)
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_sleeps_while_a_handler_works_and_bounds_reading_again_after() {
        let limit = Duration::from_millis(100);
        let (mut io, _client) = pair(limit).await;
        let working = io.working();
        let at_work = working.enter_for_tests();
        let mut buf = [0u8; 1];
        let waited = tokio::time::timeout(limit * 50, io.read(&mut buf)).await;
        assert!(waited.is_err(), "no deadline while at work: {waited:?}");
        drop(at_work);
        let read = tokio::time::timeout(limit * 50, io.read(&mut buf)).await;
        let e = read.expect("the deadline fires first").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
