//! Provider-aware rewrites of LLM responses as they stream back: `LlmRewriter` takes the
//! upstream body chunk by chunk and says what the client gets instead (`Out`): data,
//! pauses, an early clean end or a broken connection. Streams (SSE, NDJSON) are rewritten
//! event by event, so the first token still arrives early; whole JSON bodies are held
//! (bounded) because they can only be rewritten whole. A body it cannot parse passes
//! through unchanged and the fault is reported as skipped. Pure: no I/O, no clocks.

#![deny(clippy::wildcard_enum_match_arm)]

mod cut;
mod drift;
mod json;
mod output;
mod stream_modes;
mod truncate;

pub use truncate::take_tokens;

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
#[cfg(test)] // for the tests' `use super::*`
use serde_json::Value;

use crate::chaos::budget::{Budget, TooLarge};
use crate::chaos::spec::LlmMode;
use crate::exchange::Provider;
use crate::llm::frame::{Event, Framing, Splitter};
use crate::llm::{Kind, Progress, Wire, wire};

/// What the client receives, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Data(Bytes),
    Delay(Duration),
    /// End the body cleanly here (the rest of the upstream body is dropped).
    End,
    /// Break the connection here.
    Abort,
    /// Fail the exchange here: the rewrite would have gone over `proxy.max_rewrite_bytes`.
    Fail(String),
}

enum Body {
    Json(BytesMut),
    Stream(Splitter),
    Pass,
}

pub struct LlmRewriter {
    wire: &'static dyn Wire,
    mode: LlmMode,
    body: Body,
    limit: usize,
    /// Content events passed on so far.
    content_events: u32,
    /// Events passed on so far (for pacing).
    events: u32,
    tokens_left: u32,
    done: bool,
    applied: bool,
    drift: drift::Drift,
    skipped: Option<String>,
    /// What the stream has sent so far, for providers that repeat it when they end it.
    progress: Progress,
    /// Whether an arguments fragment was corrupted (one suffices where later events repeat
    /// the arguments whole, and those are all corrupted).
    corrupted_fragment: bool,
    /// Drifted text sent so far per text part (item id, content index), for streams whose
    /// later events repeat it whole.
    drifted: HashMap<(String, u64), String>,
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

impl LlmRewriter {
    pub fn new(
        provider: Provider,
        mode: LlmMode,
        draw: u64,
        content_type: &str,
        limit: usize,
        max_rewrite: usize,
    ) -> Self {
        let ct = content_type.to_ascii_lowercase();
        let (body, skipped) = if ct.starts_with("text/event-stream") {
            (Body::Stream(Splitter::new(Framing::Sse)), None)
        } else if ct.contains("ndjson") {
            (Body::Stream(Splitter::new(Framing::Ndjson)), None)
        } else if ct.contains("json") {
            (Body::Json(BytesMut::new()), None)
        } else {
            (
                Body::Pass,
                Some(format!(
                    "content type `{content_type}` is not an LLM response it can rewrite"
                )),
            )
        };
        let tokens_left = match mode {
            LlmMode::TruncatedResponse { max_tokens } => max_tokens,
            LlmMode::Timeout { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::Empty {}
            | LlmMode::Garbage {}
            | LlmMode::ResponseDrift { .. }
            | LlmMode::ServerError { .. }
            | LlmMode::StreamCut { .. }
            | LlmMode::SlowStream { .. }
            | LlmMode::ToolCallCorruption { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. }
            | LlmMode::ContentFilter { .. } => 0,
        };
        let drift = drift::Drift::new(&mode, draw, Budget::new(max_rewrite, 0));
        // A provider with no filter signal (Ollama) has nothing real to show.
        let unsignalled =
            matches!(mode, LlmMode::ContentFilter { .. }) && !wire(provider).has_filter_signal();
        let (body, skipped) = if unsignalled {
            (
                Body::Pass,
                Some(format!(
                    "{} has no content-filter or refusal signal; passed through unchanged",
                    provider.as_str()
                )),
            )
        } else {
            (body, skipped)
        };
        LlmRewriter {
            wire: wire(provider),
            mode,
            body,
            limit,
            content_events: 0,
            events: 0,
            tokens_left,
            done: false,
            applied: false,
            drift,
            skipped,
            progress: Progress::default(),
            corrupted_fragment: false,
            drifted: HashMap::new(),
        }
    }

    /// Why the fault was not applied, once the body has ended.
    pub fn skipped(&self) -> Option<&str> {
        self.skipped.as_deref()
    }

    pub fn push(&mut self, chunk: &[u8]) -> Vec<Out> {
        match &mut self.body {
            Body::Pass => vec![Out::Data(Bytes::copy_from_slice(chunk))],
            Body::Json(buf) if buf.len() + chunk.len() > self.limit => {
                let held = std::mem::take(buf).freeze();
                self.body = Body::Pass;
                self.skipped = Some(format!(
                    "response over {} bytes; passed through unchanged",
                    self.limit
                ));
                vec![Out::Data(held), Out::Data(Bytes::copy_from_slice(chunk))]
            }
            Body::Json(buf) => {
                buf.extend_from_slice(chunk);
                vec![]
            }
            Body::Stream(splitter) => {
                let frames = splitter.push(chunk);
                // An event that never ends is not held without bound: the stream passes
                // through from here, unchanged.
                let held = (splitter.pending() > self.limit).then(|| splitter.rest());
                let mut out: Vec<Out> = frames.into_iter().flat_map(|f| self.on_frame(f)).collect();
                if let Some(held) = held {
                    self.body = Body::Pass;
                    self.skipped = Some(format!(
                        "stream event over {} bytes; passed through unchanged",
                        self.limit
                    ));
                    if !self.done {
                        out.push(Out::Data(held));
                    }
                }
                out
            }
        }
    }

    /// The upstream body ended.
    pub fn finish(&mut self) -> Vec<Out> {
        let out = match std::mem::replace(&mut self.body, Body::Pass) {
            Body::Json(buf) => self.rewrite_json(buf.freeze()),
            Body::Stream(mut s) => {
                let rest = s.rest();
                if rest.is_empty() || self.done {
                    vec![]
                } else {
                    vec![Out::Data(rest)]
                }
            }
            Body::Pass => vec![],
        };
        if !self.applied && self.skipped.is_none() {
            self.skipped = Some(self.not_applied_reason().to_string());
        }
        out
    }

    /// Ends the body with a failure: the rewrite would have gone over its cap.
    fn fail(&mut self, e: TooLarge) -> Vec<Out> {
        self.done = true;
        self.skipped = Some(e.to_string());
        vec![Out::Fail(e.to_string())]
    }

    fn not_applied_reason(&self) -> &'static str {
        match self.mode {
            LlmMode::TruncatedResponse { .. } => "the answer was shorter than max_tokens",
            LlmMode::ToolCallCorruption { .. } => "the response had no tool call to corrupt",
            LlmMode::ServerError { .. } => "in_stream errors need a streaming response",
            LlmMode::Timeout { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::Empty {}
            | LlmMode::Garbage {}
            | LlmMode::ResponseDrift { .. }
            | LlmMode::StreamCut { .. }
            | LlmMode::SlowStream { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. }
            | LlmMode::ContentFilter { .. } => "the response had no content to rewrite",
        }
    }

    fn on_frame(&mut self, frame: Bytes) -> Vec<Out> {
        if self.done {
            return vec![];
        }
        let framing = match &self.body {
            Body::Stream(_) => self.framing(),
            Body::Json(_) | Body::Pass => Framing::Sse,
        };
        let mut ev = Event::parse(&frame, framing);
        let kind = crate::llm::classify(self.wire, &ev);
        let w = self.wire;
        if let (Some(r), Some(j)) = (w.recap(), ev.json.as_ref()) {
            r.observe(&mut self.progress, j);
        }
        let is_content = kind == Kind::Content && output::event_carries_output(w, &mut ev);
        let out = self.on_event(ev, kind, frame);
        if is_content {
            self.content_events += 1;
        }
        self.events += 1;
        out
    }

    fn framing(&self) -> Framing {
        self.wire.framing()
    }

    /// Whether a stream ends at this event: the first one carrying output once `after`
    /// content events went out, or the finish when the answer was shorter.
    fn cuts_here(&self, kind: Kind, carries: bool, after: u32) -> bool {
        matches!(kind, Kind::Finish | Kind::Terminal) || (carries && self.content_events >= after)
    }

    /// `ev` is replaced, not sent: a numbered stream's next event takes its number.
    fn unsend(&mut self, ev: &Event) {
        let numbered = ev
            .json
            .as_ref()
            .is_some_and(|j| j["sequence_number"].as_u64() == Some(self.progress.sequence));
        if numbered {
            self.progress.sequence = self.progress.sequence.saturating_sub(1);
        }
    }

    fn on_event(&mut self, mut ev: Event, kind: Kind, frame: Bytes) -> Vec<Out> {
        let w = self.wire;
        // Gemini's last frame carries text as well as the finish reason: text rewrites
        // must see it as content.
        let repeats = (w.recap().zip(ev.json.as_ref())).is_some_and(|(r, j)| r.repeats_output(j));
        let has_text = ev
            .json
            .as_mut()
            .is_some_and(|j| output::has_text(w, j, true));
        let text_bearing = kind == Kind::Content || (kind == Kind::Finish && has_text);
        match self.mode.clone() {
            LlmMode::SlowStream {
                first_token_ms,
                between_ms,
            } => {
                self.applied = true;
                let d = if self.events == 0 {
                    first_token_ms
                } else {
                    between_ms
                };
                vec![Out::Delay(ms(d)), Out::Data(frame)]
            }
            LlmMode::StreamCut { after_events, loud } => {
                let carries = output::event_carries_output(w, &mut ev);
                self.stream_cut(kind, (carries, !repeats), frame, (after_events, loud))
            }
            LlmMode::Garbage {} if kind == Kind::Content => {
                let junk = output::garbage_frame(w, &ev).encode();
                (self.done, self.applied) = (true, true);
                vec![Out::Data(frame), Out::Data(junk), Out::End]
            }
            // The error replaces the first content event past `after_events` (or the
            // finish, if the answer is shorter).
            LlmMode::ServerError {
                in_stream: true,
                after_events,
                responses_event,
                ..
            } => self.server_error(
                ev,
                (kind, frame),
                after_events.unwrap_or(1),
                responses_event,
            ),
            LlmMode::ContentFilter { signal } => self.content_filter(ev, kind, frame, signal),
            LlmMode::TruncatedResponse { max_tokens } if text_bearing => {
                self.truncate_event(ev, max_tokens)
            }
            LlmMode::Empty {} if has_text => self.empty_event(ev, frame),
            LlmMode::ToolCallCorruption { corruption } => {
                self.corrupt_calls(ev, frame, corruption, repeats)
            }
            LlmMode::ResponseDrift { .. } if repeats => self.drift_repeating(ev, frame),
            LlmMode::ResponseDrift { .. } => self.drift_event(ev, kind, frame),
            // Not this event's business: the mode acts on another kind of event, or was
            // decided before forwarding (see proxy::action).
            LlmMode::Garbage {}
            | LlmMode::ServerError {
                in_stream: false, ..
            }
            | LlmMode::TruncatedResponse { .. }
            | LlmMode::Empty {}
            | LlmMode::Timeout { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. } => vec![Out::Data(frame)],
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
#[allow(clippy::wildcard_enum_match_arm)] // tests pick the outputs they look at
mod tests;

#[cfg(test)]
#[path = "filter_tests.rs"]
#[allow(clippy::wildcard_enum_match_arm)] // tests pick the outputs they look at
mod filter_tests;
