//! Plausible-but-wrong data (pure): what a data fault does to a real response. `corrupt`
//! replaces chosen values by canaries (believable for their type, seeded by the rule's
//! draw, distinctive enough to be traced), `stale` moves its dates back, `empty` leaves an
//! empty value of the body's own kind. Owns JSON paths (`fields:`), canary values, and the
//! edits of a JSON body, a text body and an MCP `tools/call` result, each returning the
//! values it planted (`exchange::Planted`). Knows no rule, request or connection:
//! `chaos::spec` parses `fields:` with it, `mcp` edits tool results with it, the proxy
//! edits held bodies with it.

mod body;
mod canary;
mod date;
mod json;
mod path;
mod result;
mod text;
mod words;

pub use body::{Edited, edit_body, plantable};
pub use path::JsonPath;
pub use result::edit_result;

use crate::exchange::Planted;

/// Why a data fault planted nothing (a stream, a binary or empty body, no value of its
/// kind, a `fields:` entry that is no JSON path): the words are all there is. It becomes a
/// skip note on the exchange, which is text, hence `From<PlantError> for String`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlantError(String);

impl From<String> for PlantError {
    fn from(why: String) -> PlantError {
        PlantError(why)
    }
}

impl From<&str> for PlantError {
    fn from(why: &str) -> PlantError {
        PlantError(why.to_string())
    }
}

impl From<PlantError> for String {
    fn from(e: PlantError) -> String {
        e.0
    }
}

/// The path of a value planted in a text (a text body, or a text item's text after `#`).
pub const TEXT: &str = "(text)";

/// The path of an attack's payload put into what the agent or its model reads.
pub const INJECTED: &str = "(injected)";

/// At most this many values are planted in one body (the first in document order), so
/// a body of a million numbers records a bounded list.
pub const MAX_PLANTED: usize = 10_000;

/// What a data fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The values `fields` names (else the numbers, dates and short strings) replaced.
    Corrupt { fields: Vec<JsonPath> },
    /// An empty value of the body's own kind.
    Empty,
    /// Dates moved back `days`.
    Stale { days: u32 },
}

/// A data fault as it fires: its mode, and the rule's draw for the call, which seeds every
/// canary (so each case plants its own values, and the same call the same ones).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub mode: Mode,
    pub draw: u64,
}

impl Plan {
    /// `corrupt` of the values `fields` name; the error names the entry that is no path.
    pub fn corrupt(fields: &[String], draw: u64) -> Result<Plan, PlantError> {
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, f)| JsonPath::parse(f).map_err(|e| PlantError(not_a_path(f, i, &e))))
            .collect::<Result<_, _>>()?;
        Ok(Plan {
            mode: Mode::Corrupt { fields },
            draw,
        })
    }
}

/// Why `fields` entry `i` is refused.
pub fn not_a_path(entry: &str, i: usize, why: &PlantError) -> String {
    format!("`{entry}` (entry {i}) is not a JSON path: {why}")
}

/// An attack's payload, as recorded where the agent or its model read it.
pub fn injected(payload: impl Into<String>) -> Planted {
    Planted {
        path: INJECTED.into(),
        original: None,
        planted: payload.into(),
    }
}

/// Why `mode` planted nothing in a `whole` (`body`, `tool result`).
fn nothing_found(mode: &Mode, whole: &str) -> String {
    match mode {
        Mode::Corrupt { fields } if fields.is_empty() => {
            format!("the {whole} has no number, date or short string to corrupt")
        }
        Mode::Corrupt { fields } => {
            let named: Vec<&str> = fields.iter().map(JsonPath::as_str).collect();
            format!(
                "the {whole} has no value to corrupt at {}",
                named.join(", ")
            )
        }
        Mode::Stale { .. } => format!(
            "the {whole} has no date (an ISO date, or a Unix time under a key that names a time)"
        ),
        Mode::Empty => format!("the {whole} is already empty"),
    }
}

/// At most how many bytes planting can add to `body` (an MCP answer, sized before it is
/// edited): a digit or a letter more per value, a few for decimals a small number needs.
pub fn growth_bound(body: &[u8]) -> usize {
    let mut values = 0usize;
    let mut prev_word = false;
    for b in body {
        let word = b.is_ascii_alphanumeric();
        values += usize::from(word && !prev_word);
        prev_word = word;
    }
    values.saturating_mul(4).saturating_add(64)
}
