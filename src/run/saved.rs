//! What reading a saved report back needs from every report type (the reader itself is
//! read.rs): fields written as fixed names (`schema`, `ci`'s phase names) read back only as
//! those names (`one_of`, `Fixed`), so a report of another kind or version fails at the
//! field that says so; the run's `RunInfo`; and `ReadError`.

use serde::de::Error;
use serde::{Deserialize, Deserializer};

pub(super) fn one_of<'de, D: Deserializer<'de>>(
    d: D,
    allowed: &[&'static str],
) -> Result<&'static str, D::Error> {
    let s = String::deserialize(d)?;
    allowed
        .iter()
        .find(|a| **a == s)
        .copied()
        .ok_or_else(|| D::Error::custom(format!("`{s}` is not {}", allowed.join(" or "))))
}

/// The phases `ci` reports, in its order.
pub const PHASES: [&str; 4] = ["mutation", "contract", "chaos", "replay"];

pub(super) fn phase<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    one_of(d, &PHASES)
}

/// Why a file is not a report this build can read; each names the field at fault.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReadError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a flakestorm report: {0}")]
    NotAReport(String),
    #[error(
        "`schema` is {found}, newer than this build reads ({reads}): render it with a newer \
         flakestorm"
    )]
    Newer { found: String, reads: &'static str },
    #[error(
        "`schema` is {found}, older than this build reads ({reads}): render it with the \
         flakestorm that wrote it, or run again"
    )]
    Older { found: String, reads: &'static str },
    #[error("`{path}`: {message}")]
    Field { path: String, message: String },
}

/// A name a report writes from a fixed set. Spelled through this alias because serde's
/// derive borrows every field it sees typed `&str` from the input, which a report read
/// from a file cannot lend: the alias keeps it to `deserialize_with`.
pub type Fixed = &'static str;

/// When a run started, how long it took, and which flakestorm ran it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct RunInfo {
    /// The flakestorm version that ran it.
    pub flakestorm: String,
    /// Unix time in milliseconds.
    pub started_at_ms: u64,
    pub duration_ms: f64,
    /// The agent's endpoint, without credentials or query (`agent.endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}
