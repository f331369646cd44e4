//! `stream_cut` on one event of a stream: the event goes out, or the stream ends there
//! (cleanly, or with a broken connection when `loud`).

use bytes::Bytes;

use super::{LlmRewriter, Out};
use crate::llm::Kind;

impl LlmRewriter {
    /// The event `frame` of kind `kind` under a cut after `after_events` content events,
    /// `loud` or not; `carries`: it carries output; `new`: not a repeat of output sent
    /// before (a Responses `completed` event repeats what the deltas sent: it adds none).
    pub(super) fn stream_cut(
        &mut self,
        kind: Kind,
        (carries, new): (bool, bool),
        frame: Bytes,
        (after_events, loud): (u32, bool),
    ) -> Vec<Out> {
        let end = matches!(kind, Kind::Finish | Kind::Terminal);
        let fresh = carries && new;
        // The stream's last event carries output and its finish together (a Gemini function
        // call in one chunk) within the first `after_events` content events: a real cut
        // after them comes after that event, which is the whole answer. Loud, the connection
        // still breaks after it; quiet, nothing differs and the fault is not applied. (A
        // finish event of its own is dropped as the cut's, below.)
        let had = self.content_events + u32::from(fresh);
        let short = end && fresh && had <= after_events;
        if short && !loud {
            self.skipped = Some(format!(
                "the stream had {had} content event(s), the last with its finish, not more \
                 than after_events {after_events}: it ended before the cut"
            ));
            return vec![Out::Data(frame)];
        }
        if !(short || end || (carries && self.content_events >= after_events)) {
            return vec![Out::Data(frame)];
        }
        self.done = true;
        self.applied = true;
        match (short, loud) {
            (true, _) => vec![Out::Data(frame), Out::Abort],
            (false, true) => vec![Out::Abort],
            (false, false) => vec![Out::End],
        }
    }
}
