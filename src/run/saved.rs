//! What reading a saved report back needs from every report type (the reader itself is
//! read.rs): fields written as fixed names (`schema`, `ci`'s phase names) read back only as
//! those names (`one_of`, `Fixed`), so a report of another kind or version fails at the
//! field that says so; the run's `RunInfo`; and `ReadError`.

use serde::de::Error;
use serde::{Deserialize, Deserializer};

use super::RunKind;

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

/// The phases `ci` reports, in its order: each is a run of that kind.
pub const PHASES: [RunKind; 4] = [
    RunKind::Mutation,
    RunKind::Contract,
    RunKind::Chaos,
    RunKind::Replay,
];

/// A `ci` phase's name: a run kind, but never `ci`.
pub(super) fn phase<'de, D: Deserializer<'de>>(d: D) -> Result<RunKind, D::Error> {
    let names = PHASES.map(RunKind::as_str);
    let kind = one_of(d, &names)?;
    PHASES
        .into_iter()
        .find(|p| p.as_str() == kind)
        .ok_or_else(|| D::Error::custom(format!("`{kind}` is not a phase")))
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
    /// With several trials per case: how the run was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<TrialsInfo>,
    /// A merged run (`report merge`): how many shard reports it was made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<u32>,
}

/// How a run with several trials per case was measured (docs/trials.md): its scores
/// compare only with runs measured the same way (`--baseline last-pass` looks for one).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize, utoipa::ToSchema)]
pub struct TrialsInfo {
    /// Trials per case (`advanced.trials`, `--trials`).
    pub trials: u32,
    /// `--trial`: the one trial each case ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// What a unit with several trials scores (`scoring.consistency`)...
    #[schema(value_type = String, example = "pass_k")]
    pub consistency: crate::config::ConsistencyScore,
    /// ...and, for `pass_k`, its k (`scoring.k`, else `trials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
}

impl TrialsInfo {
    /// The measure of a run with `t`; `None` for one trial per case.
    pub fn of(t: &super::Trials) -> Option<TrialsInfo> {
        (t.n > 1).then(|| TrialsInfo {
            trials: t.n,
            trial: t.only,
            consistency: t.scoring,
            k: match t.scoring {
                crate::config::ConsistencyScore::Mean => None,
                crate::config::ConsistencyScore::PassK => Some(t.k.unwrap_or(t.n).min(t.n)),
            },
        })
    }

    /// In words: `8 trials, pass^8` or `8 trials (trial 3 only), mean`.
    pub fn words(info: Option<&TrialsInfo>) -> String {
        let Some(t) = info else {
            return "1 trial per case".into();
        };
        let only = t
            .trial
            .map(|i| format!(" (trial {i} only)"))
            .unwrap_or_default();
        let scored = match t.k {
            Some(k) => format!("pass^{k}"),
            None => "mean".into(),
        };
        format!("{} trials{only}, scored by {scored}", t.trials)
    }
}
