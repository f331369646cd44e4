//! MCP answers under an edit (`Transform::Mcp`): an answer stream is edited as it flows,
//! each event passed on as soon as it is complete (a server's request or notification
//! before the answer must reach the client at once: the server may be waiting on it) and
//! only the answer event rewritten; a JSON answer, one message, is held whole and edited at
//! its end. What an edit can add is sized before it is made (`proxy.max_rewrite_bytes`);
//! what a data fault planted goes to the exchange's record through its `SkipNote`.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::fault_body::{BUFFER_LIMIT, PASS, SkipNote, State};
use crate::chaos::budget::Budget;
use crate::chaos::rewrite::Out;
use crate::mcp::{Edit, Planting};

/// A JSON answer held whole until the upstream ends.
pub struct McpHeld {
    pub buf: BytesMut,
    edit: Edit,
    content_type: String,
}

/// An answer stream, event by event, until its answer event is edited.
pub struct McpEvents {
    buf: BytesMut,
    edit: Edit,
    /// Where the search for the next complete event stopped in `buf`.
    scan: crate::mcp::Scan,
    /// Why a data fault found nothing to plant in the answer, if it said.
    planting: Planting,
}

/// The state of an MCP edit: a stream is edited as it flows (a list-changed notice goes
/// first, at once), a JSON answer is held whole.
pub(super) fn state(
    edit: Edit,
    content_type: &str,
    skip: &SkipNote,
    queue: &mut VecDeque<Out>,
) -> State {
    let stream = crate::exchange::is_event_stream(content_type);
    match (edit, stream) {
        (Edit::ListChanged { notice }, true) => {
            queue.push_back(Out::Data(crate::mcp::list_changed_event()));
            notice.sent();
            PASS
        }
        (Edit::ListChanged { .. }, false) => {
            let _ = skip.set(crate::mcp::NO_ROOM_FOR_NOTICE.into());
            PASS
        }
        (edit, true) => State::McpEvents(McpEvents {
            buf: BytesMut::new(),
            edit,
            scan: crate::mcp::Scan::default(),
            planting: Planting::default(),
        }),
        (edit, false) => State::McpHeld(McpHeld {
            buf: BytesMut::new(),
            edit,
            content_type: content_type.to_string(),
        }),
    }
}

impl McpHeld {
    /// The upstream ended: the answer, edited (or as it came, with why not).
    pub(super) fn end(&mut self, queue: &mut VecDeque<Out>, skip: &SkipNote) {
        let body = std::mem::take(&mut self.buf).freeze();
        let mut budget = Budget::new(skip.max_rewrite, body.len());
        if let Err(e) = budget.grow(self.edit.growth_bound(&body)) {
            queue.push_back(Out::Fail(e.to_string()));
            return;
        }
        let mut planting = Planting::default();
        let out = crate::mcp::apply_planting(&body, &self.content_type, &self.edit, &mut planting);
        let out = match out {
            Ok(edited) => {
                skip.plant(planting.planted);
                edited
            }
            Err(note) => {
                let _ = skip.set(note.into());
                body
            }
        };
        queue.push_back(Out::Data(out));
    }
}

impl McpEvents {
    /// One upstream chunk: complete events go out, the answer edited. True once the
    /// answer is edited (or an event too long to hold gave up): the rest passes as is.
    pub(super) fn feed(
        &mut self,
        chunk: Bytes,
        queue: &mut VecDeque<Out>,
        skip: &SkipNote,
    ) -> bool {
        self.buf.extend_from_slice(&chunk);
        while let Some(end) = crate::mcp::next_event_from(&self.buf, &mut self.scan) {
            let event = self.buf.split_to(end).freeze();
            let mut budget = Budget::new(skip.max_rewrite, event.len());
            if let Err(e) = budget.grow(self.edit.growth_bound(&event))
                && Edit::is_answer(&event)
            {
                queue.push_back(Out::Fail(e.to_string()));
                return true;
            }
            let Some(edited) = self.edit.event_planting(&event, &mut self.planting) else {
                queue.push_back(Out::Data(event));
                continue;
            };
            skip.plant(std::mem::take(&mut self.planting.planted));
            queue.push_back(Out::Data(edited));
            queue.push_back(Out::Data(std::mem::take(&mut self.buf).freeze()));
            return true;
        }
        if self.buf.len() > BUFFER_LIMIT {
            let _ = skip.set(format!(
                "an event over {BUFFER_LIMIT} bytes; passed through unchanged"
            ));
            queue.push_back(Out::Data(std::mem::take(&mut self.buf).freeze()));
            return true;
        }
        false
    }

    /// The stream ended before its answer: what is left goes out, and why nothing changed.
    pub(super) fn end(&mut self, queue: &mut VecDeque<Out>, skip: &SkipNote) {
        queue.push_back(Out::Data(std::mem::take(&mut self.buf).freeze()));
        let why = self.planting.why_not.take().map(String::from);
        let _ = skip.set(why.unwrap_or_else(|| crate::mcp::missing(&self.edit, "stream")));
    }
}
