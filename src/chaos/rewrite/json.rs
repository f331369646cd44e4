//! Rewrites of whole (non-streamed) JSON answers, and tool-call corruption shared with the
//! stream path.

use bytes::Bytes;
use serde_json::Value;

use super::{LlmRewriter, Out, ms, output, take_tokens};
use crate::chaos::spec::{Corruption, LlmMode};
use crate::llm::Wire;
use crate::llm::path::each_call_name;

impl LlmRewriter {
    pub(super) fn rewrite_json(&mut self, body: Bytes) -> Vec<Out> {
        let w = self.wire;
        // Rewrites index into the body: only an object has the provider's shape.
        let Some(mut v) = serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(Value::is_object)
        else {
            self.skipped =
                Some("response body is not a JSON object; passed through unchanged".into());
            return vec![Out::Data(body)];
        };
        let changed = match self.mode.clone() {
            LlmMode::SlowStream { first_token_ms, .. } => {
                self.applied = true;
                return vec![Out::Delay(ms(first_token_ms)), Out::Data(body)];
            }
            // A whole answer cut short is a dropped connection whether `loud` or not: the
            // body is never terminated (no `Content-Length`, chunked without its last
            // chunk), so the SDK raises its connection error and retries as it does in
            // production. A cleanly ended half body has no real counterpart.
            LlmMode::StreamCut { .. } => {
                self.applied = true;
                return vec![Out::Data(body.slice(..body.len() / 2)), Out::Abort];
            }
            LlmMode::Garbage {} => {
                self.applied = true;
                return vec![Out::Data(Bytes::from_static(
                    b"<html><body><h1>502 Bad Gateway</h1></body></html>\n",
                ))];
            }
            LlmMode::TruncatedResponse { max_tokens } => {
                let mut budget = max_tokens;
                let mut cut = false;
                w.for_each_text(&mut v, false, &mut |s| {
                    let (keep, used) = take_tokens(s, budget);
                    budget -= used;
                    cut |= keep < s.len();
                    s.truncate(keep);
                });
                if cut {
                    w.mark_truncated(&mut v);
                }
                cut
            }
            LlmMode::Empty {} => {
                let had = output::has_text(w, &mut v, false);
                w.for_each_text(&mut v, false, &mut |s| s.clear());
                had
            }
            LlmMode::ToolCallCorruption { corruption } => {
                corrupt_tools(w, &mut v, false, corruption, true)
            }
            LlmMode::ContentFilter { signal } => {
                w.mark_filtered(&mut v, signal);
                true
            }
            LlmMode::ResponseDrift { .. } => {
                self.drift.body_size(body.len());
                match self.drift.whole(w, &mut v) {
                    Ok(changed) => changed,
                    Err(e) => return self.fail(e),
                }
            }
            // Decided before forwarding (see proxy::action); nothing to do on the body.
            LlmMode::Timeout { .. }
            | LlmMode::RateLimit { .. }
            | LlmMode::ServerError { .. }
            | LlmMode::ContextLengthExceeded {}
            | LlmMode::ClientError { .. }
            | LlmMode::HtmlErrorPage { .. } => false,
        };
        self.applied = changed;
        if changed {
            vec![Out::Data(Bytes::from(v.to_string()))]
        } else {
            vec![Out::Data(body)]
        }
    }
}

/// Corrupts tool calls in `v`: renames tools, or breaks argument JSON (in a stream only
/// the first argument fragment, `first`, which is enough to break the whole).
pub(super) fn corrupt_tools(
    w: &dyn Wire,
    v: &mut Value,
    stream: bool,
    c: Corruption,
    first: bool,
) -> bool {
    let mut changed = false;
    match c {
        Corruption::UnknownTool => each_call_name(v, w.calls(stream), &mut |n| {
            if let Some(name) = n.as_str().filter(|s| !s.is_empty()) {
                *n = Value::String(format!("{name}_v2"));
                changed = true;
            }
        }),
        // Providers that answer a broken call their own way (Gemini, Ollama) say so.
        Corruption::InvalidJson => match w.malformed_call(v) {
            Some(c) => changed = c,
            None => w.for_each_tool_args(v, stream, &mut |a| match a {
                Value::String(s) if !s.is_empty() && (first || !stream) && !changed => {
                    s.insert(0, '{');
                    changed = true;
                }
                Value::Object(_) => {
                    *a = Value::String(format!("{{{a}"));
                    changed = true;
                }
                Value::Null
                | Value::Bool(_)
                | Value::Number(_)
                | Value::String(_)
                | Value::Array(_) => {}
            }),
        },
    }
    changed
}
