//! A tape as answers: each entry's recorded response under its request's key, in recorded
//! order when the same request was made several times (the n-th identical call gets the
//! n-th answer; past the last, the last answers again, as an SDK's retry of a recorded
//! call would). Pure: the proxy keys a live request, asks `answer`, and streams what it
//! gets at the recorded pace; the run reads the counters.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;

use super::har::{Entry, Har};
use super::key::RequestKey;
use crate::exchange::Target;

/// A recorded response as the proxy plays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body in pieces, each sent `after` the request arrived (a streamed body's events
    /// at their recorded offsets; otherwise one piece at the recorded time to headers).
    pub pieces: Vec<(Duration, Bytes)>,
    /// Headers are sent after this.
    pub head_after: Duration,
    /// The recorded request had no response (status 0): close the connection.
    pub refused: bool,
    /// The tape entry's `_target`, for the exchange record.
    pub target: Option<String>,
}

/// Response headers a replay does not send as recorded: the body is re-framed.
const REFRAMED: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "content-encoding",
    "connection",
];

#[derive(Debug)]
struct Slot {
    answers: Vec<Answer>,
    next: usize,
}

/// Whether a tape holds tool or LLM faults: an entry flakestorm injected a fault into
/// (`_fault`), or an error answer (status ≥ 400, or 0: no response); and whether it holds
/// context attacks (`_attacks`) on a tool's or an LLM's entry. Played back, each reaches
/// the agent again: the chaos a replay's `when` reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    pub tool: bool,
    pub llm: bool,
    pub tool_attack: bool,
    pub llm_attack: bool,
}

impl Faults {
    /// Any fault or attack: the replayed session is under chaos.
    pub fn any(self) -> bool {
        self.tool || self.llm || self.tool_attack || self.llm_attack
    }

    fn or(self, o: Faults) -> Faults {
        Faults {
            tool: self.tool || o.tool,
            llm: self.llm || o.llm,
            tool_attack: self.tool_attack || o.tool_attack,
            llm_attack: self.llm_attack || o.llm_attack,
        }
    }
}

/// What an entry's `_target` names: an LLM provider, a tool, or neither. A replayed answer
/// (`replay/replayed`, written by a replay run's tapes) is no fault of its own: its status
/// says whether it was an error.
fn faulted(e: &Entry) -> Faults {
    let injected = e.fault.as_deref().is_some_and(|f| f != "replay/replayed");
    let bad = injected || e.response.status == 0 || e.response.status >= 400;
    let target = e.target.as_deref().map(super::write::target_of);
    let llm = matches!(target, Some(Target::Llm { .. }));
    let tool = matches!(target, Some(Target::Tool { .. }));
    let attacked = !e.attacks.is_empty();
    Faults {
        tool: bad && tool,
        llm: bad && llm,
        tool_attack: attacked && tool,
        llm_attack: attacked && llm,
    }
}

/// A tape's answers, consumed as the agent calls.
#[derive(Debug)]
pub struct TapeTable {
    slots: Mutex<HashMap<RequestKey, Slot>>,
    ignore: Vec<String>,
    entries: usize,
    faults: Faults,
    served: AtomicU64,
    missed: AtomicU64,
}

impl TapeTable {
    /// `ignore`: `replays.match.ignore_json_fields`.
    pub fn new(har: &Har, ignore: &[String]) -> TapeTable {
        let mut slots: HashMap<RequestKey, Slot> = HashMap::new();
        for e in &har.log.entries {
            let key = key_of(e, ignore);
            let answer = answer_of(e);
            slots
                .entry(key)
                .or_insert_with(|| Slot {
                    answers: vec![],
                    next: 0,
                })
                .answers
                .push(answer);
        }
        let faults = har
            .log
            .entries
            .iter()
            .map(faulted)
            .fold(Faults::default(), Faults::or);
        TapeTable {
            faults,
            slots: Mutex::new(slots),
            ignore: ignore.to_vec(),
            entries: har.log.entries.len(),
            served: AtomicU64::new(0),
            missed: AtomicU64::new(0),
        }
    }

    /// The fields left out of request keys.
    pub fn ignored(&self) -> &[String] {
        &self.ignore
    }

    /// The answer recorded for a request with this key, or `None` (a miss).
    pub fn answer(&self, key: &RequestKey) -> Option<Answer> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let found = slots.get_mut(key).map(|slot| {
            let i = slot.next.min(slot.answers.len() - 1);
            slot.next += 1;
            slot.answers[i].clone()
        });
        drop(slots);
        let counter = if found.is_some() {
            &self.served
        } else {
            &self.missed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Whether the tape holds tool or LLM faults (a replay's `when`).
    pub fn faults(&self) -> Faults {
        self.faults
    }

    /// Entries on the tape.
    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

/// The key of a recorded request.
pub fn key_of(e: &Entry, ignore: &[String]) -> RequestKey {
    let body = e
        .request
        .post_data
        .as_ref()
        .map(|p| match p.encoding.as_deref() {
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(&p.text)
                .unwrap_or_default(),
            _ => p.text.clone().into_bytes(),
        });
    let key = match e.mcp {
        Some(_) => RequestKey::mcp,
        None => RequestKey::new,
    };
    key(
        &e.request.method,
        &e.request.url,
        &body.unwrap_or_default(),
        ignore,
    )
}

/// A recorded time (ms) as a wait; `read` refused what is not finite or over the cap, and
/// a table built from a `Har` made elsewhere is clamped the same way.
fn ms(v: f64) -> Duration {
    let v = if v.is_finite() {
        v.clamp(0.0, super::read::MAX_WAIT_MS)
    } else {
        0.0
    };
    Duration::from_secs_f64(v / 1000.0)
}

fn answer_of(e: &Entry) -> Answer {
    let r = &e.response;
    let head_after = ms(e.timings.wait.max(0.0));
    let pieces = if r.content.events.is_empty() {
        let body = match (&r.content.text, r.content.encoding.as_deref()) {
            (Some(t), Some("base64")) => base64::engine::general_purpose::STANDARD
                .decode(t)
                .unwrap_or_default(),
            (Some(t), _) => t.clone().into_bytes(),
            (None, _) => vec![],
        };
        vec![(ms(e.time), Bytes::from(body))]
    } else {
        r.content
            .events
            .iter()
            .map(|ev| (ms(ev.offset_ms), Bytes::from(ev.text.clone())))
            .collect()
    };
    Answer {
        status: r.status,
        headers: r
            .headers
            .iter()
            .filter(|h| !REFRAMED.contains(&h.name.to_ascii_lowercase().as_str()))
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        pieces,
        head_after,
        refused: r.status == 0,
        target: e.target.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::read::parse;

    const TAPE: &str = r#"{"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [
      {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 30,
       "request": {"method": "POST", "url": "http://llm.test/v1/chat", "httpVersion": "HTTP/1.1",
         "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 2,
         "postData": {"mimeType": "application/json", "params": [], "text": "{\"user\":\"a\",\"m\":1}"}},
       "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
         "headers": [{"name": "content-type", "value": "text/event-stream"}, {"name": "content-length", "value": "9"}],
         "content": {"size": 9, "mimeType": "text/event-stream", "text": "data: a\n\ndata: b\n\n",
           "_events": [{"offsetMs": 10, "text": "data: a\n\n"}, {"offsetMs": 30, "text": "data: b\n\n"}]},
         "redirectURL": "", "headersSize": -1, "bodySize": 9},
       "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 25}, "_target": "openai"},
      {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 1,
       "request": {"method": "GET", "url": "http://tool.test/q", "httpVersion": "HTTP/1.1",
         "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
       "response": {"status": 503, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
         "content": {"size": 4, "mimeType": "text/plain", "text": "busy"},
         "redirectURL": "", "headersSize": -1, "bodySize": 4},
       "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}},
      {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 1,
       "request": {"method": "GET", "url": "http://tool.test/q", "httpVersion": "HTTP/1.1",
         "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
       "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
         "content": {"size": 2, "mimeType": "text/plain", "text": "ok"},
         "redirectURL": "", "headersSize": -1, "bodySize": 2},
       "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}]}}"#;

    #[test]
    fn answers_by_key_in_recorded_order_with_event_offsets() {
        let har = parse(TAPE.as_bytes()).unwrap();
        let t = TapeTable::new(&har, &["user".into()]);
        let llm = RequestKey::new(
            "POST",
            "http://llm.test/v1/chat",
            br#"{"m":1,"user":"zz"}"#,
            t.ignored(),
        );
        let a = t.answer(&llm).unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(
            a.headers,
            [("content-type".to_string(), "text/event-stream".to_string())]
        );
        let at: Vec<u128> = a.pieces.iter().map(|(d, _)| d.as_millis()).collect();
        assert_eq!(at, [10, 30]);
        let tool = RequestKey::new("GET", "http://tool.test/q", b"", &[]);
        let statuses: Vec<u16> = (0..3).map(|_| t.answer(&tool).unwrap().status).collect();
        assert_eq!(statuses, [503, 200, 200]);
        let unknown = RequestKey::new("GET", "http://tool.test/other", b"", &[]);
        assert!(t.answer(&unknown).is_none());
        assert_eq!((t.served(), t.missed(), t.entries()), (4, 1, 3));
        // The tool's 503 has no `_target`: neither a tool's nor an LLM's fault.
        assert_eq!(t.faults(), Faults::default());
        let mut har = har;
        har.log.entries[1].target = Some("search".into());
        har.log.entries[0].fault = Some("llm_faults[0]/rate_limit".into());
        let f = TapeTable::new(&har, &[]).faults();
        assert_eq!(
            f,
            Faults {
                tool: true,
                llm: true,
                ..Faults::default()
            }
        );
    }

    /// A prompt injection recorded on a tool's entry is chaos when played back, though
    /// the tool answered 200: the agent meets the injected body again.
    #[test]
    fn attacks_on_the_tape_are_chaos() {
        let mut har = parse(TAPE.as_bytes()).unwrap();
        har.log.entries[2].target = Some("search".into());
        assert!(!TapeTable::new(&har, &[]).faults().any());
        har.log.entries[2].attacks = vec!["inject/prompt_injection".into()];
        let f = TapeTable::new(&har, &[]).faults();
        assert_eq!(
            f,
            Faults {
                tool_attack: true,
                ..Faults::default()
            }
        );
        assert!(f.any());
        har.log.entries[0].attacks = vec!["poison/memory_poisoning".into()];
        assert!(TapeTable::new(&har, &[]).faults().llm_attack);
    }

    #[test]
    fn a_replayed_answer_is_no_fault_of_its_own() {
        let mut har = parse(TAPE.as_bytes()).unwrap();
        har.log.entries[1].response.status = 200;
        har.log.entries[2].target = Some("search".into());
        // A replay run's tape marks every answer it served; only the status says error.
        har.log.entries[0].fault = Some("replay/replayed".into());
        har.log.entries[2].fault = Some("replay/replayed".into());
        assert_eq!(TapeTable::new(&har, &[]).faults(), Faults::default());
        har.log.entries[2].response.status = 504;
        assert!(TapeTable::new(&har, &[]).faults().tool);
    }
}
