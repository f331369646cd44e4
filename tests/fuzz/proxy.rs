//! The `proxy_heads` target's harness: raw request heads and bodies over TCP to a real
//! daemon, several connections at once. Inputs are independent (each on its own
//! connection), except `PUT /v1/chaos` bodies: the rules one installs apply to every
//! proxied request, so a write runs alone (no proxied input in flight) and its rules are
//! reset before any proxied input runs again — the same isolation as one input at a time.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Once, RwLock};
use std::time::Duration;

/// Panics on the daemon's threads (its runtime's workers and blocking pool).
static DAEMON_PANICS: AtomicUsize = AtomicUsize::new(0);
pub const DAEMON_THREADS: &str = "fuzz-daemon";

/// Counts panics on the daemon's threads, then reports them as the default hook does.
pub fn count_daemon_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(DAEMON_THREADS) {
                DAEMON_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

pub fn daemon_panics() -> usize {
    DAEMON_PANICS.load(Ordering::SeqCst)
}

/// What one execution needs: the daemon's two listeners, the requests the harness sends
/// itself, and the lock that keeps chaos writes apart from proxied inputs.
pub struct Harness {
    pub proxy: SocketAddr,
    pub control: SocketAddr,
    healthy: String,
    reset: String,
    writes: RwLock<()>,
    done: AtomicU64,
}

impl Harness {
    pub fn new(proxy: SocketAddr, control: SocketAddr, origin: SocketAddr, token: &str) -> Harness {
        Harness {
            proxy,
            control,
            healthy: format!(
                "GET http://{origin}/health HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n"
            ),
            reset: format!(
                "DELETE /v1/chaos HTTP/1.1\r\nHost: {control}\r\nAuthorization: Bearer {token}\r\n\
                 Connection: close\r\n\r\n"
            ),
            writes: RwLock::new(()),
            done: AtomicU64::new(0),
        }
    }

    /// One input: an answer or a close within 20 s, no daemon task panics, and every 50
    /// inputs a well-formed request through the proxy is still answered.
    pub fn check(&self, input: &[u8]) {
        let panics = daemon_panics();
        if input.starts_with(b"PUT /v1/") {
            let _alone = self.writes.write().unwrap_or_else(|p| p.into_inner());
            let answer = exchange_raw(self.control, input, true);
            // A write refused as a client error changed nothing; any other may have
            // installed rules, which must not reach the inputs after it.
            if !answer.starts_with(b"HTTP/1.1 4") {
                let reset = exchange_raw(self.control, self.reset.as_bytes(), false);
                assert!(
                    reset.starts_with(b"HTTP/1.1 200"),
                    "{}",
                    String::from_utf8_lossy(&reset)
                );
            }
        } else {
            let _shared = self.writes.read().unwrap_or_else(|p| p.into_inner());
            exchange_raw(self.proxy, input, true);
        }
        if self.done.fetch_add(1, Ordering::Relaxed) % 50 == 49 {
            let _shared = self.writes.read().unwrap_or_else(|p| p.into_inner());
            let answer = exchange_raw(self.proxy, self.healthy.as_bytes(), false);
            assert!(
                answer.starts_with(b"HTTP/1.1 200") && answer.ends_with(b"ok"),
                "the proxy stopped serving: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        assert_eq!(
            daemon_panics(),
            panics,
            "a daemon task panicked (on this input, or one in flight beside it)"
        );
    }
}

/// Writes `input` and reads until the daemon closes. A daemon that neither answers nor
/// closes within 20 s is hung on this input. `half_close` ends the input with EOF, so that
/// a mutated, incomplete request is answered or dropped at once (hyper then closes the
/// connection, answer or not); well-formed requests ask for `Connection: close` instead.
fn exchange_raw(to: SocketAddr, input: &[u8], half_close: bool) -> Vec<u8> {
    let mut s = TcpStream::connect(to).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // The daemon may answer and close before reading everything: a reset is an answer.
    let _ = s.write_all(input);
    if half_close {
        let _ = s.shutdown(Shutdown::Write);
    }
    let mut out = vec![];
    match s.read_to_end(&mut out) {
        Ok(_) => out,
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut =>
        {
            panic!("no answer and no close within 20 s")
        }
        Err(_) => out,
    }
}
