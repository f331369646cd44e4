//! The store's own record types: what a run, a case and a cell look like once stored.
//! Plain serde structs and closed enums, so `store` and its readers (the CLI, the API)
//! never depend on a report's internals; `from_run` builds them from the run types.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::config::Severity;
pub use crate::run::RunKind;

/// Where a run stands. `queued` and `running` are the only states a run leaves.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    Passed,
    Failed,
    /// The run could not judge the agent: never a pass.
    NotTested,
    Cancelled,
    /// The process running it stopped (SIGKILL, crash) before it ended.
    Interrupted,
    Error,
}

/// A verdict stored for a case or a cell (`checks::Verdict`'s four, without the reason).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    NotApplicable,
    NotTested,
}

/// Generates `all`, `as_str`, `Display` and `FromStr` over the derived snake_case names
/// (serde's, which a test checks), also the words stored in SQLite and accepted by
/// `--kind`/`--status`.
macro_rules! words {
    ($t:ident, $what:literal) => {
        impl $t {
            /// Every value, in declaration order.
            pub fn all() -> <$t as strum::IntoEnumIterator>::Iterator {
                <$t as strum::IntoEnumIterator>::iter()
            }
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                $t::all().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<&str> = $t::all().map($t::as_str).collect();
                    format!("unknown {} `{s}` (one of {})", $what, all.join(", "))
                })
            }
        }
    };
}

words!(RunStatus, "run status");
words!(Verdict, "verdict");

impl RunStatus {
    /// A run in this state has ended and will not change again.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Queued | RunStatus::Running)
    }
}

/// What `Store::begin_run` records when a run starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    pub kind: RunKind,
    /// `Loaded::digest` of the config (`sha256:…`), if it came from a file.
    pub config_digest: Option<String>,
    pub seed: Option<u64>,
    /// `queued` (waiting for the daemon) or `running`.
    pub status: RunStatus,
}

/// One stored run, as `get` and `list` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunRecord {
    pub id: String,
    pub kind: RunKind,
    pub config_digest: Option<String>,
    pub seed: Option<u64>,
    /// Unix milliseconds.
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    pub status: RunStatus,
    /// Why it is not a pass (verdict reasons, an error, "interrupted: …").
    pub reason: Option<String>,
    /// Score per phase (`contract`, `chaos`, `mutation`, `replay`, `overall`), 0–100.
    pub scores: BTreeMap<String, f64>,
    pub done: u64,
    pub total: u64,
    /// Files beside the database, by kind (`json` → `runs/<id>/report.json`).
    pub artifacts: BTreeMap<String, String>,
    /// The contract a contract run tested (its `contract.name`), once it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// With several trials per case: how the run was measured (docs/trials.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<crate::run::TrialsInfo>,
    /// A run merged from shard reports (`report merge`): how many it was made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
}

#[cfg(test)]
impl RunRecord {
    /// A run of `kind` that ended `status`, for tests; nothing else known.
    pub(crate) fn for_test(id: &str, kind: RunKind, status: RunStatus) -> RunRecord {
        RunRecord {
            id: id.into(),
            kind,
            config_digest: None,
            seed: None,
            started_ms: 0,
            finished_ms: Some(1),
            status,
            reason: None,
            scores: BTreeMap::new(),
            done: 0,
            total: 0,
            artifacts: BTreeMap::new(),
            contract: None,
            trials: None,
            shards: None,
        }
    }
}

/// Which stored runs can be a run's baseline (`--baseline last-pass`): those of the same
/// config (its digest) or, for a contract run, of the same contract (its name). A run
/// with neither has none: another agent's runs share the folder's store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SameAs {
    pub config_digest: Option<String>,
    /// For contract runs only.
    pub contract: Option<String>,
    /// Measured the same way: as many trials per case, scored alike (none: one trial).
    pub trials: Option<crate::run::TrialsInfo>,
}

impl SameAs {
    /// Whether `r` is of the same config or contract (`Store::last_passing` asks SQLite
    /// the same).
    pub fn matches(&self, r: &RunRecord) -> bool {
        let same =
            |mine: &Option<String>, theirs: &Option<String>| mine.is_some() && mine == theirs;
        (same(&self.config_digest, &r.config_digest) || same(&self.contract, &r.contract))
            && self.trials == r.trials
    }
}

/// One case (one invocation of the agent) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    /// Which phase of the run (`contract`, `chaos`, `mutation`, …; a `ci` run has several),
    /// stored by its name.
    pub phase: RunKind,
    pub scenario: String,
    /// The prompt sent (a mutation's variant text for mutation runs).
    pub input: String,
    pub answer: Option<String>,
    /// Why there is no answer, or why the case could not be judged.
    pub error: Option<String>,
    /// `None` until judged (contract cases are judged through their cells).
    pub verdict: Option<Verdict>,
    /// The checks' verdicts, as the report has them.
    pub checks: serde_json::Value,
    /// Faults and attacks fired on the case's traffic.
    pub faults: serde_json::Value,
    /// One line per exchange: method, url, status or error, fault.
    pub exchanges: serde_json::Value,
    pub latency_ms: f64,
    /// Its trial (1-based) when cases run several times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// What the agent did with the fault that reached it (cases of scenarios with chaos).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<crate::checks::spec::OutcomeClass>,
    /// Its calls as its wire timeline draws them (`store::timeline`), when they are known
    /// and within the run's bound; read on their own (`Store::timelines`), never with the
    /// case.
    #[serde(skip)]
    pub timeline: Option<Vec<crate::exchange::Exchange>>,
}

/// Which of a run's cases a verdict or an outcome class is for: phase, scenario, input and
/// trial (cases sharing one are told apart by nothing else the store keeps).
pub type CaseKey<'a> = (RunKind, &'a str, &'a str, Option<u32>);

/// One (invariant × scenario) verdict of a contract run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub phase: RunKind,
    pub scenario: String,
    pub invariant: String,
    /// Stored by its name: `critical`, `high`, `medium`, `low`.
    pub severity: Severity,
    pub verdict: Verdict,
    pub reason: String,
    /// With several trials: how consistently its trials passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<crate::run::Consistency>,
}

/// A stored case with its place in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCase {
    /// Order of arrival in the run, from 1.
    pub seq: u64,
    #[serde(flatten)]
    pub case: CaseRecord,
}

/// `list`'s filter: newest first, `limit` runs older than `cursor` (a run id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub kind: Option<RunKind>,
    pub status: Option<RunStatus>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

/// A page of `list`: the runs and, when more match, the cursor for the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Page {
    pub runs: Vec<RunRecord>,
    pub next_cursor: Option<String>,
}
