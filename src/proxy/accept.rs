//! What the accept loop does when it cannot take a connection: over `proxy.max_connections`
//! the new socket gets a canned 503 and is closed at once; out of file descriptors
//! (`EMFILE`/`ENFILE`) the loop backs off exponentially (capped) instead of spinning, and
//! says so in the log at most once per `LOG_EVERY`, with a count.

use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

/// First and largest pause after an accept error caused by resource exhaustion.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one log line per this period for repeated accept errors.
pub(super) const LOG_EVERY: Duration = Duration::from_secs(10);

/// Written (without waiting) to a connection refused over the cap.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
x-flakestorm-error: connection_limit\r\n\
content-type: text/plain\r\n\
content-length: 55\r\n\
connection: close\r\n\
\r\n\
flakestorm: too many open connections (max_connections)";

/// Sends the canned 503 if the socket can take it right now, then closes it. Never waits:
/// a refused client must not cost the accept loop anything.
pub(super) fn refuse(stream: TcpStream) {
    let _ = stream.try_write(REFUSED);
}

/// Accept errors that mean "no resources for a new socket now" (the backlog keeps the
/// connection; retrying at once would fail the same way). Linux and BSD numbers.
pub(super) fn is_resource_exhaustion(e: &std::io::Error) -> bool {
    const ENOMEM: i32 = 12;
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    matches!(e.raw_os_error(), Some(ENOMEM | ENFILE | EMFILE))
        || e.kind() == std::io::ErrorKind::OutOfMemory
}

/// Exponential backoff between accept attempts that fail for lack of resources.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    /// The pause before the next attempt: 10 ms, doubling to 1 s.
    pub fn failed(&mut self) -> Duration {
        let d = self.next.unwrap_or(BACKOFF_MIN);
        self.next = Some((d * 2).min(BACKOFF_MAX));
        d
    }

    pub fn succeeded(&mut self) {
        self.next = None;
    }
}

/// Lets a repeated log line through once per period and counts the ones held back.
#[derive(Debug)]
pub(super) struct LogLimiter {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl LogLimiter {
    pub fn new(every: Duration) -> Self {
        LogLimiter {
            every,
            last: None,
            held: 0,
        }
    }

    /// Records one occurrence at `now`; `Some(n)` means log now, covering `n` occurrences
    /// (this one and those held back since the last line).
    pub fn hit(&mut self, now: Instant) -> Option<u64> {
        self.held += 1;
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < self.every)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_and_resets() {
        let mut b = Backoff::default();
        let got: Vec<u64> = (0..10).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(got, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(), BACKOFF_MIN);
    }

    #[test]
    fn log_limiter_lets_one_line_per_period_with_a_count() {
        let mut l = LogLimiter::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.hit(t0), Some(1), "the first occurrence is logged");
        // Every 50 ms for just under 10 s: all held back.
        for i in 1..200 {
            assert_eq!(l.hit(t0 + Duration::from_millis(50 * i)), None);
        }
        assert_eq!(l.hit(t0 + Duration::from_secs(10)), Some(200));
        assert_eq!(l.hit(t0 + Duration::from_secs(11)), None);
        assert_eq!(l.hit(t0 + Duration::from_secs(30)), Some(2));
    }

    #[test]
    fn fd_exhaustion_is_recognised() {
        assert!(is_resource_exhaustion(&std::io::Error::from_raw_os_error(
            24
        )));
        assert!(is_resource_exhaustion(&std::io::Error::from_raw_os_error(
            23
        )));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        assert!(!is_resource_exhaustion(&reset));
    }

    #[test]
    fn refusal_is_a_well_formed_response() {
        let text = std::str::from_utf8(REFUSED).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
    }
}
