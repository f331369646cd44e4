//! Per-connection deadlines, so no client connection lives forever: a request head must
//! arrive within `proxy.header_timeout_ms` of accept (or of the first byte of a later
//! keep-alive request), and a connection with nothing in flight may sit silent for at most
//! `proxy.idle_timeout_ms`. Hyper's own header timer is not used: it does not cover the
//! HTTP/1-or-2 detection read (a client sending no byte was never timed out) and it runs
//! from the end of each response, which makes it an idle timeout too.
//!
//! `Activity` is the shared state, `Watched` the socket wrapper that reports bytes read
//! (and holds the connection's slot under `proxy.max_connections` for as long as the socket
//! lives, tunnels included), and `RequestGuard` marks a request in flight until its
//! response body is done.
//!
//! State changes never wake the watcher (a wake per request, across threads, cost more
//! than the request itself): the watcher wakes at least every `min(header, idle)` and
//! re-reads the state. Every change starts a deadline at least that far ahead, so none is
//! missed or late.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The deadlines one connection is held to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub header: Duration,
    pub idle: Duration,
}

/// Which deadline closed a connection (the `kind` label of the timeout metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expired {
    Header,
    Idle,
}

impl Expired {
    pub fn label(self) -> &'static str {
        match self {
            Expired::Header => "header",
            Expired::Idle => "idle",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head: since accept, or since a byte arrived while idle.
    Head,
    /// At least one request in flight: no deadline here (upstream limits apply).
    Busy,
    /// Between requests.
    Idle,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    since: Instant,
    in_flight: usize,
}

#[derive(Debug)]
pub(super) struct Activity {
    state: Mutex<State>,
    /// Fast path for `bytes_read`: only a read while idle changes anything.
    idle: AtomicBool,
    /// HTTP/2 (seen from the preface): frames such as PING arrive between requests, so a
    /// byte while idle does not start a head deadline.
    h2: AtomicBool,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Activity {
            state: Mutex::new(State {
                phase: Phase::Head,
                since: Instant::now(),
                in_flight: 0,
            }),
            idle: AtomicBool::new(false),
            h2: AtomicBool::new(false),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, s: &mut State, phase: Phase) {
        s.phase = phase;
        s.since = Instant::now();
        self.idle.store(phase == Phase::Idle, Ordering::Relaxed);
    }

    /// A request head was parsed: no deadline until its response is done.
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        let mut s = self.state();
        s.in_flight += 1;
        if s.phase != Phase::Busy {
            self.set(&mut s, Phase::Busy);
        }
        RequestGuard {
            activity: self.clone(),
        }
    }

    fn request_finished(&self) {
        let mut s = self.state();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            self.set(&mut s, Phase::Idle);
        }
    }

    fn bytes_read(&self, first: Option<&[u8]>) {
        if let Some(bytes) = first {
            self.h2
                .store(bytes.starts_with(b"PRI * HTTP/2"), Ordering::Relaxed);
        }
        if !self.idle.load(Ordering::Relaxed) || self.h2.load(Ordering::Relaxed) {
            return;
        }
        let mut s = self.state();
        if s.phase == Phase::Idle {
            self.set(&mut s, Phase::Head);
        }
    }

    /// Resolves when the connection has overrun a deadline; pending while it keeps to them.
    pub async fn expired(&self, limits: Limits) -> Expired {
        let step = limits.header.min(limits.idle);
        loop {
            let (deadline, kind) = {
                let s = self.state();
                match s.phase {
                    Phase::Busy => (None, Expired::Idle),
                    Phase::Head => (Some(s.since + limits.header), Expired::Header),
                    Phase::Idle => (Some(s.since + limits.idle), Expired::Idle),
                }
            };
            let now = Instant::now();
            if deadline.is_some_and(|d| d <= now) {
                return kind;
            }
            let next = deadline.map_or(now + step, |d| d.min(now + step));
            tokio::time::sleep_until(next).await;
        }
    }
}

/// Marks one request in flight until dropped (with the response body).
pub(super) struct RequestGuard {
    activity: Arc<Activity>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.request_finished();
    }
}

/// A client stream that reports reads to its `Activity` and holds `slot` (the
/// connection's place under the cap) until the stream itself is dropped.
pub(super) struct Watched<T, S> {
    io: T,
    activity: Arc<Activity>,
    first: bool,
    _slot: S,
}

impl<T, S> Watched<T, S> {
    pub fn new(io: T, activity: Arc<Activity>, slot: S) -> Self {
        Watched {
            io,
            activity,
            first: true,
            _slot: slot,
        }
    }
}

impl<T: AsyncRead + Unpin, S: Unpin> AsyncRead for Watched<T, S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        let read = &buf.filled()[before..];
        if matches!(r, Poll::Ready(Ok(()))) && !read.is_empty() {
            let first = std::mem::take(&mut this.first).then_some(read);
            this.activity.bytes_read(first);
        }
        r
    }
}

impl<T: AsyncWrite + Unpin, S: Unpin> AsyncWrite for Watched<T, S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
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

    const LIMITS: Limits = Limits {
        header: Duration::from_secs(10),
        idle: Duration::from_secs(60),
    };

    #[tokio::test(start_paused = true)]
    async fn head_deadline_runs_from_creation() {
        let a = Activity::new();
        let start = Instant::now();
        assert_eq!(a.expired(LIMITS).await, Expired::Header);
        assert_eq!(start.elapsed(), LIMITS.header);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_then_a_byte_starts_a_head_deadline() {
        let a = Activity::new();
        drop(a.request_started());
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(30)).await;
        a.bytes_read(None);
        assert_eq!(a.expired(LIMITS).await, Expired::Header);
        assert_eq!(start.elapsed(), Duration::from_secs(40));
    }

    #[tokio::test(start_paused = true)]
    async fn no_deadline_while_a_request_is_in_flight() {
        let a = Activity::new();
        let guard = a.request_started();
        let r = tokio::time::timeout(Duration::from_secs(3600), a.expired(LIMITS)).await;
        assert!(r.is_err(), "expired while busy");
        drop(guard);
        let start = Instant::now();
        assert_eq!(a.expired(LIMITS).await, Expired::Idle);
        assert_eq!(start.elapsed(), LIMITS.idle);
    }

    /// The watcher is never woken by a change: it must still meet a deadline that a change
    /// made earlier than the one it was sleeping towards.
    #[tokio::test(start_paused = true)]
    async fn a_running_watcher_meets_deadlines_that_changes_brought_forward() {
        let a = Activity::new();
        drop(a.request_started()); // idle: its deadline is 60 s away
        let start = Instant::now();
        let watcher = tokio::spawn({
            let a = a.clone();
            async move { a.expired(LIMITS).await }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        a.bytes_read(None); // a head starts: 10 s from now, before the idle deadline
        assert_eq!(watcher.await.unwrap(), Expired::Header);
        assert_eq!(start.elapsed(), Duration::from_secs(15));

        let short_idle = Limits {
            header: Duration::from_secs(60),
            idle: Duration::from_secs(10),
        };
        let a = Activity::new();
        let guard = a.request_started();
        let start = Instant::now();
        let watcher = tokio::spawn({
            let a = a.clone();
            async move { a.expired(short_idle).await }
        });
        tokio::time::sleep(Duration::from_secs(25)).await;
        drop(guard);
        assert_eq!(watcher.await.unwrap(), Expired::Idle);
        assert_eq!(start.elapsed(), Duration::from_secs(35));
    }

    #[tokio::test(start_paused = true)]
    async fn h2_frames_while_idle_do_not_start_a_head_deadline() {
        let a = Activity::new();
        a.bytes_read(Some(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        drop(a.request_started());
        a.bytes_read(None);
        assert_eq!(a.expired(LIMITS).await, Expired::Idle);
    }
}
