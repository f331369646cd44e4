//! A replay session's recorded tool answers, attached to an installed `RuleSet`: each call
//! to a tool named in `tool_responses` takes that tool's next recorded answer, in call
//! order; a call with none left (or to a tool the session does not name) is a miss, which
//! `on_miss` forwards live or answers 599. Pure: the proxy turns a `Replay` into a
//! response, and the run reads the counters. A session's tape (`with_tape`) answers the
//! calls `tool_responses` do not (LLM calls included): a tool the session does not name,
//! or one whose recorded answers are used up, goes to the tape, and only a tape miss is a
//! miss.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::respond::Synthetic;
use super::stats::{RuleKind, RuleStats};
use crate::config::replays::{OnMiss, ToolResponse};
use crate::exchange::Target;
use crate::tape::TapeTable;

/// The rule id replayed answers and misses are recorded under on the exchange.
pub const RULE: &str = "replay";

/// What the session says to do with one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// Answer with the recorded response after the recorded latency.
    Answer {
        synthetic: Synthetic,
        delay: Duration,
    },
    /// The recorded call was refused (status 0): close the connection after the latency.
    Refused { delay: Duration },
    /// No recorded answer left and `on_miss` is `error` or `strict`: answer 599.
    /// `call` is the tool's call number (1-based), `recorded` how many answers it had.
    Miss {
        tool: String,
        call: usize,
        recorded: usize,
        on_miss: OnMiss,
    },
}

/// One tool's answers and how many calls it has had.
#[derive(Debug)]
struct Tool {
    name: String,
    answers: Vec<Replay>,
    calls: AtomicUsize,
}

/// The answers of one session, consumed as the agent calls its tools.
#[derive(Debug)]
pub struct ReplayTable {
    tools: Vec<Tool>,
    on_miss: OnMiss,
    tape: Option<Arc<TapeTable>>,
    /// LLM and embeddings calls skip the tape (`replays.llm: live`).
    llm_live: bool,
    matched: AtomicU64,
    served: AtomicU64,
    missed: AtomicU64,
}

impl ReplayTable {
    pub fn new(responses: &[ToolResponse], on_miss: OnMiss) -> ReplayTable {
        let mut tools: Vec<Tool> = vec![];
        for r in responses {
            let answer = recorded(r);
            match tools.iter_mut().find(|t| t.name == r.tool) {
                Some(t) => t.answers.push(answer),
                None => tools.push(Tool {
                    name: r.tool.clone(),
                    answers: vec![answer],
                    calls: AtomicUsize::new(0),
                }),
            }
        }
        ReplayTable {
            tools,
            on_miss,
            tape: None,
            llm_live: false,
            matched: AtomicU64::new(0),
            served: AtomicU64::new(0),
            missed: AtomicU64::new(0),
        }
    }

    /// These answers, and a tape for the calls they do not answer.
    pub fn with_tape(mut self, tape: Option<Arc<TapeTable>>) -> Self {
        self.tape = tape;
        self
    }

    /// LLM and embeddings calls go to the live model instead of the tape.
    pub fn with_live_llm(mut self, live: bool) -> Self {
        self.llm_live = live;
        self
    }

    /// The session's tape, if it has one.
    pub fn tape(&self) -> Option<&Arc<TapeTable>> {
        self.tape.as_ref()
    }

    /// The session's tape, if it has one and it answers calls to `target`.
    pub fn tape_for(&self, target: &Target) -> Option<&Arc<TapeTable>> {
        let model = matches!(target, Target::Llm { .. } | Target::Embeddings { .. });
        self.tape.as_ref().filter(|_| !(model && self.llm_live))
    }

    /// What to do with a call to `tool`: its next recorded answer, a miss to answer, or
    /// `None` to forward it live (`on_miss: live`) or ask the tape.
    pub fn answer(&self, tool: &str) -> Option<Replay> {
        let (call, recorded) = match self.tools.iter().find(|t| t.name == tool) {
            Some(t) => {
                self.matched.fetch_add(1, Ordering::Relaxed);
                let i = t.calls.fetch_add(1, Ordering::Relaxed);
                if let Some(a) = t.answers.get(i) {
                    self.served.fetch_add(1, Ordering::Relaxed);
                    return Some(a.clone());
                }
                (i + 1, t.answers.len())
            }
            None => (1, 0),
        };
        if self.tape.is_some() {
            return None;
        }
        self.missed.fetch_add(1, Ordering::Relaxed);
        match self.on_miss {
            OnMiss::Live => None,
            OnMiss::Error | OnMiss::Strict => Some(Replay::Miss {
                tool: tool.to_string(),
                call,
                recorded,
                on_miss: self.on_miss,
            }),
        }
    }

    /// Whether LLM and embeddings calls go to the live model (`replays.llm: live`).
    pub fn llm_live(&self) -> bool {
        self.llm_live
    }

    /// What a call with no recorded answer gets.
    pub fn on_miss(&self) -> OnMiss {
        self.on_miss
    }

    /// Recorded answers handed out so far (the tape's included).
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed) + self.tape.as_ref().map_or(0, |t| t.served())
    }

    /// Calls that found no recorded answer (forwarded live or answered 599).
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed) + self.tape.as_ref().map_or(0, |t| t.missed())
    }

    /// The session's answers as one rule for coverage: calls to the tools it names
    /// (matched) and recorded answers served (fired). None when it records no answer.
    pub fn stats(&self) -> Vec<RuleStats> {
        if self.tools.is_empty() {
            return vec![];
        }
        let names: Vec<String> = self.tools.iter().map(|t| format!("`{}`", t.name)).collect();
        vec![RuleStats {
            rule: RULE.into(),
            kind: RuleKind::ToolFault,
            mode: crate::exchange::FaultKind::Replayed,
            matched: self.matched.load(Ordering::Relaxed),
            fired: self.served(),
            scope: format!("calls to tool {}", names.join(", ")),
            tool: (self.tools.len() == 1).then(|| self.tools[0].name.clone()),
            match_url: None,
            probability: 1.0,
            after_calls: 0,
            times: None,
        }]
    }
}

/// A recorded answer as the proxy sends it: a JSON value as JSON, a string as is, null as
/// an empty body.
#[allow(clippy::wildcard_enum_match_arm)] // every other JSON value is sent as JSON
fn recorded(r: &ToolResponse) -> Replay {
    let delay = Duration::from_millis(r.latency_ms);
    if r.status == 0 {
        return Replay::Refused { delay };
    }
    let (headers, body) = match &r.response {
        Value::Null => (vec![], Bytes::new()),
        Value::String(s) => (
            vec![("content-type", "text/plain; charset=utf-8".to_string())],
            Bytes::from(s.clone()),
        ),
        other => (
            vec![("content-type", "application/json".to_string())],
            Bytes::from(other.to_string()),
        ),
    };
    Replay::Answer {
        synthetic: Synthetic {
            status: r.status,
            headers,
            body,
        },
        delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resp(tool: &str, status: u16, response: Value) -> ToolResponse {
        ToolResponse {
            tool: tool.into(),
            status,
            response,
            latency_ms: 5,
        }
    }

    #[test]
    fn answers_come_in_call_order_per_tool_then_miss() {
        let t = ReplayTable::new(
            &[
                resp("search", 504, Value::Null),
                resp("weather", 200, json!("sunny")),
                resp("search", 200, json!({"hits": [1]})),
                resp("down", 0, Value::Null),
            ],
            OnMiss::Error,
        );
        let status = |r: Option<Replay>| match r {
            Some(Replay::Answer { synthetic, .. }) => (synthetic.status, synthetic.body),
            other => panic!("{other:?}"),
        };
        assert_eq!(status(t.answer("search")), (504, Bytes::new()));
        let (s, body) = status(t.answer("search"));
        assert_eq!((s, &body[..]), (200, &br#"{"hits":[1]}"#[..]));
        assert_eq!(status(t.answer("weather")), (200, Bytes::from("sunny")));
        assert_eq!(
            t.answer("down"),
            Some(Replay::Refused {
                delay: Duration::from_millis(5)
            })
        );
        assert_eq!(
            t.answer("search"),
            Some(Replay::Miss {
                tool: "search".into(),
                call: 3,
                recorded: 2,
                on_miss: OnMiss::Error
            })
        );
        assert!(matches!(
            t.answer("unknown"),
            Some(Replay::Miss { recorded: 0, .. })
        ));
        assert_eq!((t.served(), t.missed()), (4, 2));
        let stats = t.stats();
        assert_eq!((stats[0].matched, stats[0].fired), (5, 4));
    }

    #[test]
    fn live_misses_are_forwarded() {
        let t = ReplayTable::new(&[resp("search", 200, json!(1))], OnMiss::Live);
        assert!(t.answer("search").is_some());
        assert_eq!(t.answer("search"), None);
        assert_eq!(t.answer("other"), None);
        assert_eq!(t.missed(), 2);
    }
}
