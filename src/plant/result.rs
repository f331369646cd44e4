//! Data faults on an MCP `tools/call` result (the `result` of its JSON-RPC answer): its
//! `structuredContent`, and each `content[]` text item: the JSON it carries when it parses
//! (written back compact), else its text. `fields:` paths name values of the structured
//! content and of JSON carried in text items, never plain text. The envelope (`jsonrpc`,
//! `id`, `isError`) and other content items (images, resources) are not touched.

use serde_json::Value;

use super::canary::Canaries;
use super::json::{self, Record};
use super::{Mode, Plan, PlantError, text};
use crate::exchange::Planted;

/// `plan` made on `result`; the values planted, or why nothing was.
pub fn edit_result(plan: &Plan, result: &mut Value) -> Result<Vec<Planted>, PlantError> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err("the tool result is an error (`isError: true`): no data to change".into());
    }
    let mut numbers = vec![];
    json::numbers(result, &mut numbers);
    let mut c = Canaries::new(plan.draw, numbers);
    let mut out = vec![];
    let mut parts = 0;
    let mut emptied = false;
    if let Some(sc) = result.get_mut("structuredContent") {
        parts += 1;
        let mut rec = Record {
            root: "$.result.structuredContent",
            out: &mut out,
        };
        emptied |= edit_json(plan, sc, &mut c, &mut rec);
    }
    if let Some(Value::Array(items)) = result.get_mut("content") {
        for (i, item) in items.iter_mut().enumerate() {
            let is_text = item.get("type").and_then(Value::as_str) == Some("text");
            if let (true, Some(Value::String(s))) = (is_text, item.get_mut("text")) {
                parts += 1;
                emptied |= text_item(plan, s, i, &mut c, &mut out);
            }
        }
    }
    match (&plan.mode, parts) {
        (_, 0) => Err("the tool result has no structuredContent or text content".into()),
        (Mode::Empty, _) if !emptied => Err("the tool result is already empty".into()),
        (Mode::Corrupt { .. } | Mode::Stale { .. }, _) if out.is_empty() => {
            Err(super::nothing_found(&plan.mode, "tool result").into())
        }
        (Mode::Empty | Mode::Corrupt { .. } | Mode::Stale { .. }, _) => Ok(out),
    }
}

/// `plan` made on a JSON value; true when `empty` changed it.
fn edit_json(plan: &Plan, v: &mut Value, c: &mut Canaries, rec: &mut Record) -> bool {
    match &plan.mode {
        Mode::Corrupt { fields } => json::corrupt(v, fields, c, rec),
        Mode::Stale { days } => json::stale(v, *days, rec),
        Mode::Empty => {
            if let Ok(empty) = json::empty(v) {
                *v = empty;
                return true;
            }
        }
    }
    false
}

/// `plan` made on the text of `content[i]`; true when `empty` changed it.
fn text_item(
    plan: &Plan,
    s: &mut String,
    i: usize,
    c: &mut Canaries,
    out: &mut Vec<Planted>,
) -> bool {
    let carried = s
        .trim_start()
        .starts_with(['{', '['])
        .then(|| serde_json::from_str::<Value>(s).ok())
        .flatten();
    if let Some(mut v) = carried {
        let root = format!("$.result.content[{i}].text#$");
        let before = out.len();
        let emptied = edit_json(plan, &mut v, c, &mut Record { root: &root, out });
        if emptied || out.len() > before {
            *s = v.to_string();
        }
        return emptied;
    }
    let reps = match &plan.mode {
        Mode::Empty => {
            let had = !s.is_empty();
            s.clear();
            return had;
        }
        // Paths name JSON values: plain text has none.
        Mode::Corrupt { fields } if !fields.is_empty() => return false,
        Mode::Corrupt { .. } => text::corrupt(s, c),
        Mode::Stale { days } => text::stale(s, *days),
    };
    let path = format!("$.result.content[{i}].text#{}", super::TEXT);
    for r in &reps {
        out.push(Planted {
            path: path.clone(),
            original: Some(s[r.start..r.end].to_string()),
            planted: r.new.clone(),
        });
    }
    *s = text::apply(s, &reps);
    false
}
