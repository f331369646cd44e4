//! What the rewriter asks of a stream event or a body beyond one provider method: whether
//! it carries text or tool-call pieces, and the garbage frame a `garbage` fault sends.
//! Where things sit is the provider's (`llm::Wire`).

use crate::llm::path::each_call_name;
use serde_json::Value;

use crate::llm::Wire;
use crate::llm::frame::Event;

/// Whether any text is present.
pub fn has_text(w: &dyn Wire, v: &mut Value, stream: bool) -> bool {
    let mut any = false;
    w.for_each_text(v, stream, &mut |s| any |= !s.is_empty());
    any
}

/// Whether a stream event carries generated text or tool-call pieces (`carries_output`).
pub fn event_carries_output(w: &dyn Wire, ev: &mut crate::llm::frame::Event) -> bool {
    ev.json.as_mut().is_some_and(|j| carries_output(w, j))
}

/// Whether a stream chunk carries generated text or tool-call pieces (an OpenAI role
/// chunk with empty content does not).
pub fn carries_output(w: &dyn Wire, v: &mut Value) -> bool {
    let mut any = has_text(w, v, true);
    w.for_each_tool_args(v, true, &mut |a| {
        any |= !(a.is_null() || a.as_str() == Some(""))
    });
    each_call_name(v, w.calls(true), &mut |n| {
        any |= n.as_str().is_some_and(|s| !s.is_empty())
    });
    any
}

/// A frame whose data is not valid JSON, named so every SDK version tries to parse it.
pub fn garbage_frame(w: &dyn Wire, ev: &Event) -> Event {
    // Cut off mid-string: no JSON parser accepts it.
    ev.raw_sibling(
        w.garbage_event(),
        r#"{"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {"content": "\ufffd"#,
    )
}
