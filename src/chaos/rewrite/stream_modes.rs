//! The stream modes whose rewrite of one event takes more than a few lines: a server error
//! mid-stream and a content filter, each ending the stream where the provider would, a
//! tool call corrupted in every copy of it, and drift (also on a stream that repeats its
//! text, the Responses API's).

use bytes::Bytes;

use super::{LlmRewriter, Out, json, output};
use crate::chaos::spec::Corruption;
use crate::llm::Kind;
use crate::llm::frame::Event;
use crate::llm::signals::{FilterSignal, ResponsesEvent};

impl LlmRewriter {
    /// `server_error` in the stream: the error replaces the first content event past
    /// `after_events` (or the finish, if the answer is shorter).
    pub(super) fn server_error(
        &mut self,
        mut ev: Event,
        (kind, frame): (Kind, Bytes),
        after_events: u32,
        form: Option<ResponsesEvent>,
    ) -> Vec<Out> {
        let w = self.wire;
        let carries = output::event_carries_output(w, &mut ev);
        if !self.cuts_here(kind, carries, after_events) {
            return vec![Out::Data(frame)];
        }
        self.unsend(&ev);
        let err = w.stream_error(&ev, &self.progress, form.unwrap_or_default());
        (self.done, self.applied) = (true, true);
        vec![Out::Data(err.encode()), Out::End]
    }

    /// `content_filter`: the events before the signal go out; at it, the provider's
    /// filtered ending (its finish reason, block or refusal) ends the stream.
    pub(super) fn content_filter(
        &mut self,
        mut ev: Event,
        kind: Kind,
        frame: Bytes,
        signal: FilterSignal,
    ) -> Vec<Out> {
        let w = self.wire;
        let carries = output::event_carries_output(w, &mut ev);
        if !self.cuts_here(kind, carries, signal.passes()) {
            if let (Some(r), Some(j)) = (w.recap(), ev.json.as_mut()) {
                r.record_sent(&mut self.progress, j);
            }
            return vec![Out::Data(frame)];
        }
        self.unsend(&ev);
        let mut out: Vec<Out> = w
            .filter_tail(&ev, &self.progress, signal)
            .iter()
            .map(|e| Out::Data(e.encode()))
            .collect();
        out.push(Out::End);
        (self.done, self.applied) = (true, true);
        out
    }

    /// `tool_call_corruption`: the first call is broken; on streams that repeat the whole
    /// arguments later (`repeats`; Responses: `.done`, `output_item.done`, `completed`)
    /// every copy is, and the argument fragments once.
    pub(super) fn corrupt_calls(
        &mut self,
        mut ev: Event,
        frame: Bytes,
        corruption: Corruption,
        repeats: bool,
    ) -> Vec<Out> {
        let w = self.wire;
        let Some(j) = ev.json.as_mut() else {
            return vec![Out::Data(frame)];
        };
        let fragment = w.recap().is_some_and(|r| r.is_args_fragment(j));
        let first = if repeats {
            !fragment || !self.corrupted_fragment
        } else {
            !self.applied
        };
        if json::corrupt_tools(w, j, true, corruption, first) {
            self.corrupted_fragment |= fragment;
            self.applied = true;
            vec![Out::Data(ev.encode())]
        } else {
            vec![Out::Data(frame)]
        }
    }

    /// `response_drift` on a stream that repeats its text: the deltas are drifted piece by
    /// piece as they come, and every later whole copy (`.done`, `output_item.done`,
    /// `response.completed`) says what the deltas said.
    pub(super) fn drift_repeating(&mut self, mut ev: Event, frame: Bytes) -> Vec<Out> {
        let w = self.wire;
        let (Some(j), Some(r)) = (ev.json.as_mut(), w.recap()) else {
            return vec![Out::Data(frame)];
        };
        match r.text_delta_part(j) {
            Some(part) => match self.drift.stream_event(w, j, Kind::Content) {
                Ok(changed) => {
                    let mut said = String::new();
                    w.for_each_text(j, true, &mut |s| said.push_str(s));
                    self.drifted.entry(part).or_default().push_str(&said);
                    self.applied |= changed;
                    if changed {
                        vec![Out::Data(ev.encode())]
                    } else {
                        vec![Out::Data(frame)]
                    }
                }
                Err(e) => self.fail(e),
            },
            None if self.applied => {
                let drifted = &self.drifted;
                // A server that leaves out item ids has one text part to match.
                let only = (drifted.len() == 1)
                    .then(|| drifted.values().next())
                    .flatten();
                r.for_each_repeated_text(j, &mut |id, index, s| {
                    if let Some(d) = drifted.get(&(id.to_string(), index)).or(only) {
                        s.clone_from(d);
                    }
                });
                vec![Out::Data(ev.encode())]
            }
            None => vec![Out::Data(frame)],
        }
    }

    /// `response_drift` on a stream that says each thing once: each content event drifted.
    pub(super) fn drift_event(&mut self, mut ev: Event, kind: Kind, frame: Bytes) -> Vec<Out> {
        let Some(j) = ev.json.as_mut() else {
            return vec![Out::Data(frame)];
        };
        match self.drift.stream_event(self.wire, j, kind) {
            Ok(true) => {
                self.applied = true;
                vec![Out::Data(ev.encode())]
            }
            Ok(false) => vec![Out::Data(frame)],
            Err(e) => self.fail(e),
        }
    }

    /// `empty`: every copy of the text cleared (Responses API `done`/`completed` events
    /// repeat it).
    pub(super) fn empty_event(&mut self, mut ev: Event, frame: Bytes) -> Vec<Out> {
        let Some(j) = ev.json.as_mut() else {
            return vec![Out::Data(frame)];
        };
        self.wire.for_each_text(j, true, &mut |s| s.clear());
        self.applied = true;
        vec![Out::Data(ev.encode())]
    }
}
