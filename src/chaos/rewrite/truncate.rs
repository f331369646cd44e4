//! `truncated_response` on streams: the token budget spent event by event, then the
//! stream ended the way the provider ends one at its token limit (the provider's
//! `truncated_summary`, else `truncation_closes`, `mark_truncated`, `truncation_tail`).

use serde_json::Value;

use super::{LlmRewriter, Out};
use crate::llm::frame::Event;

impl LlmRewriter {
    /// Spends the token budget on this event's text; once it runs out, trims the text and
    /// ends the stream the way the provider does at its token limit.
    pub(super) fn truncate_event(&mut self, mut ev: Event, max_tokens: u32) -> Vec<Out> {
        let w = self.wire;
        let Some(j) = ev.json.as_mut() else {
            return vec![Out::Data(ev.encode())];
        };
        let mut budget = self.tokens_left;
        let mut exhausted = false;
        w.for_each_text(j, true, &mut |s| {
            let (keep, used) = take_tokens(s, budget);
            budget -= used;
            if keep < s.len() {
                s.truncate(keep);
                exhausted = true;
            }
        });
        self.tokens_left = budget;
        if let (Some(r), Some(j)) = (w.recap(), ev.json.as_mut()) {
            r.record_sent(&mut self.progress, j);
        }
        if !exhausted && budget > 0 {
            return vec![Out::Data(ev.encode())];
        }
        if let Some(end) = w
            .recap()
            .and_then(|r| r.truncated_summary(&ev, &self.progress))
        {
            self.done = true;
            self.applied = true;
            return vec![Out::Data(ev.encode()), Out::Data(end.encode()), Out::End];
        }
        // A frame that already ends the stream (Gemini, Ollama `done`) is marked itself;
        // otherwise the provider's own closing events follow.
        let closes = ev.json.as_ref().is_some_and(|j| w.truncation_closes(j));
        let mut out = vec![];
        if closes {
            w.mark_truncated(ev.json.as_mut().unwrap_or(&mut Value::Null));
            out.push(Out::Data(ev.encode()));
        } else {
            let last = ev.json.clone().unwrap_or(Value::Null);
            out.push(Out::Data(ev.encode()));
            out.extend(
                w.truncation_tail(&ev, &last, max_tokens)
                    .iter()
                    .map(|e| Out::Data(e.encode())),
            );
        }
        out.push(Out::End);
        self.done = true;
        self.applied = true;
        out
    }
}

/// How much of `text` fits in `budget` tokens (a token: a run of non-space characters),
/// cut at the end of the last whole token, and how many tokens that is.
pub fn take_tokens(text: &str, budget: u32) -> (usize, u32) {
    let (mut used, mut in_word, mut end) = (0, false, 0);
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_word = false;
            continue;
        }
        if !in_word {
            if used == budget {
                return (end, used);
            }
            used += 1;
            in_word = true;
        }
        end = i + c.len_utf8();
    }
    (text.len(), used)
}
