//! The journal: the in-memory record of exchanges, newest last, bounded in size.
//!
//! Redaction happens here, at the boundary (design.md rule 9, `redact.rs`): whatever is
//! recorded has its secret headers and query values replaced, so nothing downstream (API,
//! reports, tapes) can leak them. Per-run files, live tail and slicing by run/case come
//! with the run engine.
//! When tapes are wanted (`set_keep_bodies`), the journal also keeps each exchange's bodies,
//! redacted the same way (secret header and query values, and each cookie, wherever they
//! appear in a body; fields named like them in JSON, form-encoded and SSE `data:` JSON
//! bodies), and drops them with their exchange. Each recorded exchange gets a sequence
//! number under the list lock, so a reader (a live recording) takes each one exactly once.
//! `read` holds the readers' side (slices by id, trace or sequence number, waiting for news).
//! `otel` hands exchanges to the span exporter.
//! `lanes` ties exchanges to cases (a listener's current case) and lets a case settle.
//! Two bounds: `capacity` exchanges, and `max_bytes` of them (`weight`) while no run or
//! recording is reading (`hold_while`): an idle sidecar's journal costs memory by the byte,
//! a run never loses its cases' exchanges to that budget (only to `capacity`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::exchange::Exchange;
use crate::tape::Bodies;

mod lanes;
mod otel;
mod read;
mod redact;
mod weight;

pub use lanes::{CaseWatch, InFlight, Lane, LaneAt, OpenLane, ServeCapture, Serving, Settled};
pub use read::Since;
pub use redact::{REDACTED, Redactor};
pub use weight::weight;

/// The most body bytes the journal keeps for tapes; past it the oldest exchanges' bodies
/// are dropped first (their tape entries say so).
pub const MAX_KEPT_BODY_BYTES: usize = 256 << 20;

/// Kept bodies by exchange id (oldest first), and their total size.
#[derive(Default)]
struct Kept {
    bodies: BTreeMap<u64, Arc<Bodies>>,
    bytes: usize,
    dropped: u64,
}

fn size(b: &Bodies) -> usize {
    b.request.len() + b.response.iter().map(|e| e.data.len()).sum::<usize>()
}

impl Kept {
    fn insert(&mut self, id: u64, b: Arc<Bodies>) {
        self.bytes += size(&b);
        self.bodies.insert(id, b);
        while self.bytes > MAX_KEPT_BODY_BYTES && self.bodies.len() > 1 {
            if let Some((_, old)) = self.bodies.pop_first() {
                self.bytes -= size(&old);
                self.dropped += 1;
            }
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(old) = self.bodies.remove(&id) {
            self.bytes -= size(&old);
        }
    }
}

/// The retained exchanges and how many were ever appended: the exchange at `items[i]` is
/// the `pushed - len + i + 1`th recorded (its sequence number, given under the lock, so
/// readers can ask for "everything after n" without racing writers).
#[derive(Default)]
struct List {
    items: VecDeque<Arc<Exchange>>,
    /// Each kept exchange's `weight::weight`, in the order of `items`, and their sum.
    weights: VecDeque<usize>,
    bytes: usize,
    pushed: u64,
}

struct Inner {
    exchanges: Mutex<List>,
    /// Redacted bodies by exchange id, while `keep_bodies` (tapes) and their exchange is kept.
    bodies: Mutex<Kept>,
    keep_bodies: AtomicBool,
    /// Runs that want tapes and are under way (`keep_bodies_while`).
    bodies_wanted: AtomicUsize,
    /// Count of exchanges ever recorded; lets readers wait for news without polling.
    recorded: watch::Sender<u64>,
    capacity: usize,
    /// The byte budget past which the oldest exchanges go while nobody `holds` them.
    max_bytes: AtomicUsize,
    /// Runs under way (`hold_while`): the byte budget waits until they end.
    holders: AtomicUsize,
    next_id: AtomicU64,
    evicted: AtomicU64,
    redactor: Redactor,
    /// The main listener's lane (`lanes`).
    main_lane: lanes::Lane,
    /// In-flight counts of the cases that are settling (`lanes`).
    flights: Arc<lanes::Flights>,
    /// Where each recorded exchange is also handed, when spans are exported (`otel`).
    otel: std::sync::OnceLock<crate::otel::Otel>,
}

/// Cheap-clone handle to the exchange journal.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("capacity", &self.inner.capacity)
            .finish()
    }
}

impl Journal {
    /// A journal keeping the newest `capacity` exchanges (at least one).
    pub fn new(capacity: usize, redactor: Redactor) -> Self {
        let inner = Inner {
            exchanges: Mutex::new(List::default()),
            bodies: Mutex::new(Kept::default()),
            keep_bodies: AtomicBool::new(false),
            bodies_wanted: AtomicUsize::new(0),
            recorded: watch::Sender::new(0),
            capacity: capacity.max(1),
            max_bytes: AtomicUsize::new(usize::MAX),
            holders: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            evicted: AtomicU64::new(0),
            redactor,
            main_lane: Default::default(),
            flights: Default::default(),
            otel: Default::default(),
        };
        Journal {
            inner: Arc::new(inner),
        }
    }

    /// The same journal with a byte budget (`journal.max_bytes`), applied from the next
    /// record on.
    pub fn with_max_bytes(self, max_bytes: usize) -> Self {
        self.inner
            .max_bytes
            .store(max_bytes.max(1), Ordering::Relaxed);
        self
    }

    /// Keeps every exchange (up to `capacity`) until the guard is dropped: a run under way
    /// reads its cases' exchanges after they end. The byte budget applies again after the
    /// last holder is gone.
    pub fn hold_while(&self) -> Holding {
        self.inner.holders.fetch_add(1, Ordering::Relaxed);
        Holding(self.clone())
    }

    fn max_bytes(&self) -> usize {
        self.inner.max_bytes.load(Ordering::Relaxed)
    }

    /// Bytes the kept exchanges weigh (`weight`), against `journal.max_bytes`.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Drops the oldest exchanges while over `capacity`, or over the byte budget when no
    /// run or recording holds them (at least one is kept). Returns them, to be freed after
    /// the lock is let go (readers wait for the list, not for `free`).
    fn evict(&self, list: &mut List) -> Vec<Arc<Exchange>> {
        let held = self.inner.holders.load(Ordering::Relaxed) > 0
            || self.inner.keep_bodies.load(Ordering::Relaxed);
        let mut gone = Vec::new();
        while list.items.len() > self.inner.capacity
            || (!held && list.bytes > self.max_bytes() && list.items.len() > 1)
        {
            let Some(old) = list.items.pop_front() else {
                break;
            };
            list.bytes -= list.weights.pop_front().unwrap_or(0);
            self.lock_bodies().remove(old.id);
            self.inner.evicted.fetch_add(1, Ordering::Relaxed);
            gone.push(old);
        }
        gone
    }

    /// A fresh exchange id (ids are assigned when a request arrives, not when it is recorded).
    pub fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Redacts and appends an exchange, evicting the oldest past capacity.
    pub fn record(&self, exchange: Exchange) {
        self.record_with(exchange, None);
    }

    /// Whether exchanges' bodies are captured and kept (for tapes).
    pub fn keeps_bodies(&self) -> bool {
        self.inner.keep_bodies.load(Ordering::Relaxed)
            || self.inner.bodies_wanted.load(Ordering::Relaxed) > 0
    }

    /// Keeps bodies until the guard is dropped: a daemon's run that writes tapes, beside
    /// other runs and `serve --record`, each of which may stop wanting them first.
    pub fn keep_bodies_while(&self) -> KeepBodies {
        self.inner.bodies_wanted.fetch_add(1, Ordering::Relaxed);
        KeepBodies(self.inner.clone())
    }

    /// Starts (or stops) keeping bodies: `serve --record`, `record`, `output.tapes`.
    pub fn set_keep_bodies(&self, keep: bool) {
        self.inner.keep_bodies.store(keep, Ordering::Relaxed);
    }

    /// The redaction this journal applies (a tape's request key redacts live requests the
    /// same way, to compare them with recorded ones).
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    /// The redacted bodies of exchange `id`, if they were captured and are still kept.
    pub fn bodies(&self, id: u64) -> Option<Arc<Bodies>> {
        self.lock_bodies().bodies.get(&id).cloned()
    }

    /// How many exchanges' bodies were dropped to stay under `MAX_KEPT_BODY_BYTES`.
    pub fn bodies_dropped(&self) -> u64 {
        self.lock_bodies().dropped
    }

    /// Redacts and appends an exchange with its captured bodies (redacted with the secrets
    /// of the exchange before its own redaction), evicting the oldest past capacity.
    pub fn record_with(&self, mut exchange: Exchange, bodies: Option<Bodies>) {
        let leave = self.bodies_leave();
        let bodies = bodies.map(|mut b| {
            if leave {
                self.inner.redactor.bodies(&exchange, &mut b);
            }
            Arc::new(b)
        });
        self.inner.redactor.exchange(&mut exchange);
        // Bodies captured only for a span are not kept (`otel::captures_bodies`).
        if let Some(b) = &bodies
            && self.keeps_bodies()
        {
            self.lock_bodies().insert(exchange.id, b.clone());
        }
        let weight = weight::weight(&exchange);
        let exchange = Arc::new(exchange);
        self.to_otel(&exchange, bodies);
        let mut list = self.lock();
        list.items.push_back(exchange);
        list.weights.push_back(weight);
        list.bytes += weight;
        list.pushed += 1;
        let over = list.items.len() > self.inner.capacity || list.bytes > self.max_bytes();
        let evicted = if over {
            self.evict(&mut list)
        } else {
            Vec::new()
        };
        drop(list);
        drop(evicted);
        self.inner.recorded.send_modify(|n| *n += 1);
    }

    fn lock_bodies(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.bodies.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, List> {
        // A panic while holding this lock cannot leave the deque half-updated; keep serving.
        self.inner
            .exchanges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// While it lives, the journal keeps its exchanges past its byte budget
/// (`Journal::hold_while`); the last one to go brings the journal back under it.
pub struct Holding(Journal);

impl Drop for Holding {
    fn drop(&mut self) {
        let journal = &self.0;
        if journal.inner.holders.fetch_sub(1, Ordering::Relaxed) == 1 {
            let mut list = journal.lock();
            let evicted = journal.evict(&mut list);
            drop(list);
            drop(evicted);
        }
    }
}

/// While it lives, the journal keeps exchanges' bodies (`Journal::keep_bodies_while`).
pub struct KeepBodies(Arc<Inner>);

impl Drop for KeepBodies {
    fn drop(&mut self) {
        self.0.bodies_wanted.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::*;

    fn exchange(url: &str, headers: &[(&str, &str)]) -> Exchange {
        tests_support::exchange(Target::Other, url)
            .method("GET")
            .request_headers(headers)
            .response(200, &[("set-cookie", "sid=1")])
            .build()
    }

    #[test]
    fn secrets_never_reach_the_journal() {
        let j = Journal::new(
            10,
            Redactor::new(&["X-Tenant-Secret".into()], &["sig".into()]),
        );
        j.record(exchange(
            "https://g.example/v1?key=AIza123&alt=sse&sig=abc#frag",
            &[
                ("Authorization", "Bearer sk-live"),
                ("x-tenant-secret", "s"),
                ("accept", "*/*"),
            ],
        ));
        let ex = &j.all()[0];
        assert_eq!(
            ex.request.url,
            "https://g.example/v1?key=[REDACTED]&alt=sse&sig=[REDACTED]#frag"
        );
        let h = &ex.request.headers;
        assert_eq!(h[0].1, REDACTED);
        assert_eq!(h[1].1, REDACTED);
        assert_eq!(h[2].1, "*/*");
        let Outcome::Response { response, .. } = &ex.outcome else {
            panic!()
        };
        assert_eq!(response.headers[0].1, REDACTED);
    }

    #[test]
    fn secrets_are_redacted_from_bodies_too() {
        let j = Journal::new(10, Redactor::default());
        j.set_keep_bodies(true);
        let ex = exchange(
            "https://g.example/v1?key=AIzaCANARY1",
            &[("Authorization", "Bearer sk-CANARY-0")],
        );
        let c = crate::tape::Capture::default();
        c.request(br#"{"echo":"sk-CANARY-0 and AIzaCANARY1","password":"hunter2","n":1}"#);
        c.response(b"data: sk-CANARY-0\n\n", 1.0);
        j.record_with(ex, Some(c.finish("text/event-stream")));
        let b = j.bodies(j.all()[0].id).unwrap();
        let req = String::from_utf8(b.request.to_vec()).unwrap();
        assert_eq!(
            req,
            r#"{"echo":"[REDACTED] and [REDACTED]","password":"[REDACTED]","n":1}"#
        );
        assert_eq!(&b.response[0].data[..], b"data: [REDACTED]\n\n");
    }

    #[test]
    fn bodies_are_kept_while_any_run_wants_them() {
        let j = Journal::new(10, Redactor::default());
        assert!(!j.keeps_bodies());
        let (a, b) = (j.keep_bodies_while(), j.keep_bodies_while());
        drop(a);
        assert!(j.keeps_bodies(), "the other run still wants them");
        drop(b);
        assert!(!j.keeps_bodies());
        j.set_keep_bodies(true);
        drop(j.keep_bodies_while());
        assert!(j.keeps_bodies(), "a recording keeps them on");
    }

    #[test]
    fn kept_bodies_stay_under_their_cap_oldest_dropped_first() {
        let mut k = Kept::default();
        let big = |n: usize| {
            Arc::new(Bodies {
                request: bytes::Bytes::from(vec![b'x'; n]),
                ..Bodies::default()
            })
        };
        k.insert(1, big(MAX_KEPT_BODY_BYTES / 2));
        k.insert(2, big(MAX_KEPT_BODY_BYTES / 2));
        assert_eq!((k.bodies.len(), k.dropped), (2, 0));
        k.insert(3, big(10));
        assert_eq!(k.bodies.keys().copied().collect::<Vec<_>>(), [2, 3]);
        assert_eq!((k.bytes, k.dropped), (MAX_KEPT_BODY_BYTES / 2 + 10, 1));
        k.remove(2);
        assert_eq!(k.bytes, 10);
    }

    #[test]
    fn slices_by_id_window_and_by_trace() {
        let j = Journal::new(10, Redactor::default());
        for (i, trace) in [None, Some("t1"), Some("t2"), Some("t1")]
            .into_iter()
            .enumerate()
        {
            let mut e = exchange(&format!("http://h/{i}"), &[]);
            e.id = j.next_id();
            e.trace_id = trace.map(str::to_string);
            j.record(e);
        }
        let ids = |v: Vec<Arc<Exchange>>| v.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(j.slice(2, 3)), [2, 3]);
        assert_eq!(ids(j.by_trace("t1")), [2, 4]);
        assert_eq!(j.peek_next_id(), 5);
    }

    #[test]
    fn keeps_the_newest_up_to_capacity() {
        let j = Journal::new(2, Redactor::default());
        for path in ["/a", "/b", "/c"] {
            j.record(exchange(&format!("http://h{path}"), &[]));
        }
        let urls: Vec<_> = j.all().iter().map(|e| e.request.url.clone()).collect();
        assert_eq!(urls, ["http://h/b", "http://h/c"]);
        assert_eq!(j.evicted(), 1);
        assert_eq!(j.recent(1)[0].request.url, "http://h/c");
    }

    #[test]
    fn the_byte_budget_drops_the_oldest_unless_a_run_holds_them() {
        // As recorded, that is redacted: the cookie's value is longer then.
        let probe = Journal::new(1, Redactor::default());
        probe.record(exchange("http://h/0", &[]));
        let one = probe.bytes();
        // Room for three exchanges of this weight, not four.
        let j = Journal::new(100, Redactor::default()).with_max_bytes(3 * one + one / 2);
        let urls = |j: &Journal| -> Vec<String> {
            j.all().iter().map(|e| e.request.url.clone()).collect()
        };
        for i in 1..=5 {
            j.record(exchange(&format!("http://h/{i}"), &[]));
        }
        assert_eq!(urls(&j), ["http://h/3", "http://h/4", "http://h/5"]);
        assert_eq!((j.evicted(), j.bytes()), (2, 3 * one));

        let run = j.hold_while();
        for i in 6..=9 {
            j.record(exchange(&format!("http://h/{i}"), &[]));
        }
        assert_eq!(
            j.all().len(),
            7,
            "a run under way loses none of its exchanges"
        );
        let recording = j.hold_while();
        drop(run);
        assert_eq!(j.all().len(), 7, "another run still holds them");
        drop(recording);
        assert_eq!(urls(&j), ["http://h/7", "http://h/8", "http://h/9"]);
        assert_eq!(j.evicted(), 6);
    }

    #[test]
    fn a_byte_budget_set_on_a_shared_journal_holds_for_every_clone() {
        let probe = Journal::new(1, Redactor::default());
        probe.record(exchange("http://h/0", &[]));
        let one = probe.bytes();
        let j = Journal::new(100, Redactor::default());
        // As the daemon does: the proxy and the runs hold clones before the budget is set.
        let proxy_side = j.clone();
        let _ = j.clone().with_max_bytes(2 * one);
        for i in 1..=4 {
            proxy_side.record(exchange(&format!("http://h/{i}"), &[]));
        }
        assert_eq!((j.all().len(), j.bytes()), (2, 2 * one));
    }

    #[test]
    fn a_heavy_exchange_takes_the_room_of_many_light_ones() {
        let light = weight(&exchange("http://h/l", &[]));
        let j = Journal::new(100, Redactor::default()).with_max_bytes(10 * light);
        for _ in 0..10 {
            j.record(exchange("http://h/l", &[]));
        }
        let big = "v".repeat(5 * light);
        j.record(exchange("http://h/big", &[("x-big", big.as_str())]));
        let kept = j.all();
        assert_eq!(kept.last().unwrap().request.url, "http://h/big");
        assert!(kept.len() <= 5, "{} exchanges kept", kept.len());
        assert!(j.bytes() <= 10 * light);
        let only = Journal::new(100, Redactor::default()).with_max_bytes(1);
        only.record(exchange("http://h/big", &[("x-big", big.as_str())]));
        assert_eq!(
            only.all().len(),
            1,
            "the newest is kept even over the budget"
        );
    }

    #[test]
    fn since_gives_what_came_after_and_counts_what_was_evicted() {
        let j = Journal::new(3, Redactor::default());
        let urls = |v: &Since| -> Vec<String> {
            v.exchanges.iter().map(|e| e.request.url.clone()).collect()
        };
        assert_eq!((j.since(0).exchanges.len(), j.since(0).last), (0, 0));
        for path in ["/1", "/2"] {
            j.record(exchange(&format!("http://h{path}"), &[]));
        }
        let s = j.since(0);
        assert_eq!(
            (urls(&s), s.last, s.lost),
            (vec!["http://h/1".into(), "http://h/2".into()], 2, 0)
        );
        for path in ["/3", "/4", "/5", "/6"] {
            j.record(exchange(&format!("http://h{path}"), &[]));
        }
        // Seq 3 was evicted before it was read; 4..=6 are kept.
        let s = j.since(2);
        assert_eq!(
            (urls(&s), s.last, s.lost),
            (
                vec![
                    "http://h/4".into(),
                    "http://h/5".into(),
                    "http://h/6".into()
                ],
                6,
                1
            )
        );
        let s = j.since(5);
        assert_eq!(
            (urls(&s), s.last, s.lost),
            (vec!["http://h/6".into()], 6, 0)
        );
        let s = j.since(6);
        assert_eq!((s.exchanges.len(), s.last, s.lost), (0, 6, 0));
        assert_eq!(j.sequence(), 6);
    }

    fn redacted(body: &str) -> String {
        String::from_utf8(Redactor::default().body(body.as_bytes(), &[])).unwrap()
    }

    #[test]
    fn a_body_field_named_key_is_data_but_the_query_key_is_still_found() {
        let r = Redactor::default();
        let body = br#"{"key":"AAPL","token":"tok-CANARY-9","q":"AIzaCANARY1"}"#;
        let out = String::from_utf8(r.body(body, &["AIzaCANARY1".into()])).unwrap();
        assert_eq!(
            out,
            r#"{"key":"AAPL","token":"[REDACTED]","q":"[REDACTED]"}"#
        );
    }

    #[test]
    fn secret_named_form_fields_are_redacted() {
        let got = redacted(
            "grant_type=client_credentials&client_id=app&client_secret=CANARY-f1&Password=CANARY-f2&client%5Fsecret=CANARY-f3\r\n",
        );
        assert_eq!(
            got,
            "grant_type=client_credentials&client_id=app&client_secret=[REDACTED]&Password=[REDACTED]&client%5Fsecret=[REDACTED]"
        );
        // Not a form (spaces), and a form without secret-named fields: left as they were.
        let prose = "the password=CANARY is a word & so on";
        assert_eq!(redacted(prose), prose);
        assert_eq!(redacted("a=1&b=2"), "a=1&b=2");
    }

    #[test]
    fn secret_named_fields_in_sse_json_data_are_redacted() {
        let body = "event: x\r\ndata: {\"token\":\"CANARY-s1\",\"n\":1}\r\n\ndata:{\"a\":{\"refresh_token\":\"CANARY-s2\"}}\n\ndata: not json password CANARY\n\ndata: [DONE]\n\n";
        let got = redacted(body);
        assert!(!got.contains("CANARY-s"), "{got}");
        assert_eq!(
            got,
            "event: x\r\ndata: {\"token\":\"[REDACTED]\",\"n\":1}\r\n\ndata:{\"a\":{\"refresh_token\":\"[REDACTED]\"}}\n\ndata: not json password CANARY\n\ndata: [DONE]\n\n"
        );
    }

    #[test]
    fn each_cookie_is_a_secret_of_its_own() {
        let j = Journal::new(10, Redactor::default());
        j.set_keep_bodies(true);
        let ex = tests_support::exchange(Target::Other, "http://h/")
            .method("GET")
            .request_headers(&[("Cookie", "sid=CANARY-c1; theme=CANARY-c2")])
            .response(
                200,
                &[("set-cookie", "session=CANARY-c3; Path=/; HttpOnly")],
            )
            .build();
        let c = crate::tape::Capture::default();
        c.request(b"you sent theme=CANARY-c2 and CANARY-c1");
        c.response(b"new session CANARY-c3 at Path=/; HttpOnly", 1.0);
        j.record_with(ex, Some(c.finish("text/plain")));
        let b = j.bodies(j.all()[0].id).unwrap();
        assert_eq!(&b.request[..], b"you sent [REDACTED] and [REDACTED]");
        assert_eq!(
            &b.response[0].data[..],
            b"new session [REDACTED] at Path=/; HttpOnly",
            "the cookie's attributes are not secrets"
        );
    }
}
