//! Edits to an MCP server's answer, JSON or SSE: text injected into a tool result, a data
//! fault on a tool result (`plant`), a tool list poisoned, rug-pulled or shadowed, or the
//! id of a replayed answer set to the live request's. Only JSON-RPC answers (`result` or
//! `error` with an `id`) are touched.

use bytes::Bytes;
use globset::GlobMatcher;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::exchange::Planted;
use crate::plant::PlantError;

/// Why an edit could not be made to an answer (not JSON-RPC, nothing of the kind to edit,
/// a JSON answer with no room for a notice, a data fault's own reason): the words are all
/// there is. It becomes a skip note on the exchange, which is text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EditError(String);

impl From<PlantError> for EditError {
    fn from(e: PlantError) -> EditError {
        EditError(e.into())
    }
}

impl From<EditError> for String {
    fn from(e: EditError) -> String {
        e.0
    }
}

/// Where tool poisoning hides its instructions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoisonPlace {
    /// The tool's `description`.
    #[default]
    Description,
    /// The description of the tool's first parameter (`inputSchema.properties`), which
    /// many clients pass to the model but few show their users.
    Parameters,
}

#[derive(Debug, Clone)]
pub enum Edit {
    /// `payload` appended to a `tools/call` result's text content.
    InjectResult { payload: String },
    /// `payload` added to the listed tools (those `tools` matches, else all).
    Poison {
        payload: String,
        tools: Option<GlobMatcher>,
        place: PoisonPlace,
    },
    /// A tool named `name` added to the list, described by `description`, taking the
    /// parameters of `shadows` (the tool whose calls it means to take).
    Shadow {
        shadows: String,
        name: String,
        description: String,
    },
    /// The answer carries this request id (a recorded answer replayed to a new request).
    Id(Value),
    /// A data fault (`corrupt`, `empty`, `stale`) on a `tools/call` result's structured
    /// and text content; the envelope is never touched.
    Plant(crate::plant::Plan),
    /// A `notifications/tools/list_changed` event before the answer (a stream only);
    /// `notice` is the rule's claim on telling the session, kept once the event went out.
    ListChanged {
        notice: std::sync::Arc<super::Notice>,
    },
}

/// What an edit planted (a data fault's values), or why it found nothing to plant in.
#[derive(Debug, Default)]
pub struct Planting {
    pub planted: Vec<Planted>,
    pub why_not: Option<PlantError>,
}

/// The event `Edit::ListChanged` puts before an answer stream's first byte.
pub fn list_changed_event() -> Bytes {
    Bytes::from(format!("event: message\ndata: {LIST_CHANGED}\n\n"))
}

impl Edit {
    /// At most how many bytes this edit adds to `body`, known before it is made: a
    /// poisoning adds its payload to each listed tool (each is an object, named or not),
    /// an injection to each answer of a batch (each has a `"result"`).
    pub fn growth_bound(&self, body: &[u8]) -> usize {
        let count = |needle: &[u8]| memchr::memmem::find_iter(body, needle).count().max(1);
        let wrap = 64;
        match self {
            Edit::InjectResult { payload } => {
                count(b"\"result\"").saturating_mul(payload.len() + wrap)
            }
            Edit::Poison { payload, .. } => count(b"{").saturating_mul(payload.len() + wrap),
            // The shadow takes the shadowed tool's schema: at most the body again.
            Edit::Shadow {
                name, description, ..
            } => body.len() + name.len() + description.len() + wrap,
            Edit::Id(id) => count(b"\"id\"").saturating_mul(id.to_string().len() + wrap),
            Edit::Plant(_) => crate::plant::growth_bound(body),
            Edit::ListChanged { .. } => LIST_CHANGED.len() + wrap,
        }
    }

    /// Whether a complete SSE event is a JSON-RPC answer (what an edit acts on).
    pub fn is_answer(event: &[u8]) -> bool {
        super::sse::event_json(event).is_some_and(|v| answer(&v))
    }

    /// One complete SSE event of an answer stream with this edit made, if it is the
    /// JSON-RPC answer the edit is for; `None`: the event goes on as it came.
    pub fn event(&self, event: &[u8]) -> Option<Bytes> {
        self.event_planting(event, &mut Planting::default())
    }

    /// `event`, what a data fault planted (or why not) added to `planting`.
    pub fn event_planting(&self, event: &[u8], planting: &mut Planting) -> Option<Bytes> {
        super::sse::edit_event(event, &mut |v| answer(v) && edit_answer(v, self, planting))
    }
}

/// Why a JSON answer gets no list-changed notice.
pub const NO_ROOM_FOR_NOTICE: &str =
    "the answer is JSON, not a stream: it cannot carry notifications/tools/list_changed";

/// The notification a server sends when its tool list changed.
const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

/// `body` (of type `content_type`) with `edit` made; the error says why it could not be.
pub fn apply(body: &[u8], content_type: &str, edit: &Edit) -> Result<Bytes, EditError> {
    apply_planting(body, content_type, edit, &mut Planting::default())
}

/// `apply`, what a data fault planted added to `planting`; its error is the data fault's
/// own reason when it gave one.
pub fn apply_planting(
    body: &[u8],
    content_type: &str,
    edit: &Edit,
    planting: &mut Planting,
) -> Result<Bytes, EditError> {
    apply_all(body, content_type, edit, planting).map_err(|e| match planting.why_not.take() {
        Some(why) => why.into(),
        None => EditError(e),
    })
}

fn apply_all(
    body: &[u8],
    content_type: &str,
    edit: &Edit,
    planting: &mut Planting,
) -> Result<Bytes, String> {
    let stream = crate::exchange::is_event_stream(content_type);
    if let Edit::ListChanged { .. } = edit {
        // Server messages may precede the answer on its request's stream; JSON has no room.
        if !stream {
            return Err(NO_ROOM_FOR_NOTICE.into());
        }
        let mut out = list_changed_event().to_vec();
        out.extend_from_slice(body);
        return Ok(Bytes::from(out));
    }
    let mut f = |v: &mut Value| answer(v) && edit_answer(v, edit, planting);
    if stream {
        return super::sse::map_events(body, &mut f).ok_or_else(|| missing(edit, "stream"));
    }
    let mut v: Value =
        serde_json::from_slice(body).map_err(|_| "the answer is not JSON-RPC".to_string())?;
    let changed = match &mut v {
        Value::Array(items) => items.iter_mut().fold(false, |c, m| f(m) | c),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_) => {
            f(&mut v)
        }
    };
    match changed {
        true => Ok(Bytes::from(v.to_string())),
        false => Err(missing(edit, "answer")),
    }
}

/// Why an edit found nothing to edit in an answer (`whole`: `answer` or `stream`).
pub fn missing(edit: &Edit, whole: &str) -> String {
    let what = match edit {
        Edit::InjectResult { .. } | Edit::Plant(_) => "tool result with content",
        Edit::Poison { .. } | Edit::Shadow { .. } => "tool list",
        Edit::Id(_) | Edit::ListChanged { .. } => "JSON-RPC answer",
    };
    format!("the {whole} has no {what} to edit")
}

/// A JSON-RPC answer: an id and a result or an error.
fn answer(v: &Value) -> bool {
    v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && v.get("id").is_some()
        && (v.get("result").is_some() || v.get("error").is_some())
}

fn edit_answer(v: &mut Value, edit: &Edit, planting: &mut Planting) -> bool {
    match edit {
        Edit::Plant(plan) => plant(v, plan, planting),
        Edit::Id(id) => {
            v["id"] = id.clone();
            true
        }
        Edit::InjectResult { payload } => inject(v, payload),
        Edit::Poison {
            payload,
            tools,
            place,
        } => poison(v, payload, tools.as_ref(), *place),
        Edit::Shadow {
            shadows,
            name,
            description,
        } => shadow(v, shadows, name, description),
        Edit::ListChanged { .. } => false,
    }
}

/// A data fault on the answer's result; its planted values (or why none) in `planting`.
fn plant(v: &mut Value, plan: &crate::plant::Plan, planting: &mut Planting) -> bool {
    let Some(result) = v.get_mut("result").filter(|r| r.is_object()) else {
        return false;
    };
    match crate::plant::edit_result(plan, result) {
        Ok(planted) => {
            planting.planted.extend(planted);
            true
        }
        Err(why) => {
            planting.why_not = Some(why);
            false
        }
    }
}

fn inject(v: &mut Value, payload: &str) -> bool {
    let Some(Value::Array(content)) = v.pointer_mut("/result/content") else {
        return false;
    };
    let last_text = content
        .iter_mut()
        .rev()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .and_then(|c| c.get_mut("text"));
    match last_text {
        Some(Value::String(s)) => s.push_str(&format!("\n\n{payload}")),
        Some(_) | None => content.push(json!({"type": "text", "text": payload})),
    }
    true
}

fn add_to(slot: &mut Value, key: &str, payload: &str) {
    match slot.get_mut(key) {
        Some(Value::String(s)) => s.push_str(&format!("\n\n{payload}")),
        Some(_) | None => slot[key] = Value::String(payload.to_string()),
    }
}

fn poison(v: &mut Value, payload: &str, tools: Option<&GlobMatcher>, place: PoisonPlace) -> bool {
    let Some(Value::Array(list)) = v.pointer_mut("/result/tools") else {
        return false;
    };
    let mut any = false;
    for tool in list.iter_mut().filter(|t| t.is_object()) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if tools.is_some_and(|g| !g.is_match(name)) {
            continue;
        }
        any = true;
        let first_param = tool
            .pointer_mut("/inputSchema/properties")
            .and_then(Value::as_object_mut)
            .and_then(|p| p.values_mut().find(|p| p.is_object()));
        match (place, first_param) {
            (PoisonPlace::Parameters, Some(param)) => add_to(param, "description", payload),
            (PoisonPlace::Parameters, None) | (PoisonPlace::Description, _) => {
                add_to(tool, "description", payload)
            }
        }
    }
    any
}

fn shadow(v: &mut Value, shadows: &str, name: &str, description: &str) -> bool {
    let Some(Value::Array(list)) = v.pointer_mut("/result/tools") else {
        return false;
    };
    let named = |t: &Value, n: &str| t.get("name").and_then(Value::as_str) == Some(n);
    if list.iter().any(|t| named(t, name)) {
        return false;
    }
    let schema = list
        .iter()
        .find(|t| named(t, shadows))
        .and_then(|t| t.get("inputSchema").cloned())
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    list.push(json!({"name": name, "description": description, "inputSchema": schema}));
    true
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
