//! What `/v1/runs/{id}/events` tells (docs/api.md, "Events"), typed once for both ends: the
//! daemon's runs log `RunEvent`s (`EventLog`), `api::sse` sends each as one SSE message
//! (`event:` its kind's name, `data:` its JSON) and the `--server` client (`cli::remote`)
//! reads them back with `RunEvent::parse`. The names and the data's fields are a public
//! wire format: the tests pin each kind's message. Owns no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run::{CaseChecks, CaseResult, CellResult, CellSoFar, Judged, RunKind, SoFar};
use crate::store::RunRecord;

/// One event of a run, in the order they come: `queued`, `started`, any `warning`, a
/// `case_started` and a
/// `case` per case, then (a run that ended with a report) a `phase` per phase scored and a
/// `cell` per contract cell, and `done` last. Serde's tag is the SSE event's name, its
/// content the data; `EventKind` (derived) names the kinds alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
#[strum_discriminants(
    name(EventKind),
    derive(
        strum::IntoStaticStr,
        strum::EnumString,
        strum::EnumIter,
        strum::Display
    ),
    strum(serialize_all = "snake_case")
)]
pub enum RunEvent {
    /// Accepted, waiting for its turn.
    Queued {
        id: String,
    },
    /// It has its turn.
    Started {
        id: String,
    },
    /// Something the run must say that does not stop it, as soon as it is known (it is in
    /// the report's warnings too): today, a `telemetry.otlp` the daemon does not apply.
    Warning {
        message: String,
    },
    /// A case is sent to the agent (its prompt cut to 200 characters).
    CaseStarted {
        scenario: String,
        input: String,
    },
    Case(CaseEnded),
    /// A phase's score, at the end (a run of one kind has one phase).
    Phase {
        phase: RunKind,
        score: f64,
    },
    /// A contract cell, at the end.
    Cell(Box<CellResult>),
    /// The run's final record, as `GET /v1/runs/{id}` returns it; nothing comes after it.
    Done(Box<RunRecord>),
}

/// A case ended: `done` of `total` planned so far, how it went, and how it stands judged
/// on its own answer (`so_far`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEnded {
    pub done: u64,
    pub total: u64,
    pub scenario: String,
    /// Its prompt, cut to 200 characters.
    pub input: String,
    pub answered: bool,
    pub error: Option<String>,
    pub not_judged: Option<String>,
    pub latency_ms: f64,
    /// How many faults fired on its traffic.
    pub faults: usize,
    pub so_far: SoFar,
    /// The faults, `rule (mode)` each (the web view lists them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_rules: Vec<String>,
    /// Its outcome class when it is known as it ends (docs/outcomes.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The pool instance it ran on (1-based), when flakestorm started a pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<usize>,
    /// The journal ids of its exchanges (the web view draws its timeline from them); absent
    /// when its traffic could not be attributed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchanges: Option<Vec<u64>>,
    /// A contract case's cells as it ended, each with the cell's number of cases: the
    /// matrix's progress before the `cell` events give the verdicts (provisional: see
    /// docs/api.md, "Events").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellSoFar>,
}

/// An event this build cannot read.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// A newer daemon's kind, say.
    #[error("an event of a kind this build does not know: `{0}`")]
    Unknown(String),
    #[error("the data of a `{kind}` event: {source}")]
    Data {
        kind: EventKind,
        source: serde_json::Error,
    },
}

impl EventError {
    /// The kind of the event that could not be read, when it is one this build knows.
    pub fn kind(&self) -> Option<EventKind> {
        match self {
            EventError::Unknown(_) => None,
            EventError::Data { kind, .. } => Some(*kind),
        }
    }
}

/// Prompts are cut to this many characters in events.
const INPUT_CHARS: usize = 200;

impl RunEvent {
    pub fn case_started(scenario: &str, input: &str) -> RunEvent {
        RunEvent::CaseStarted {
            scenario: scenario.into(),
            input: crate::text::cut(input, INPUT_CHARS),
        }
    }

    /// The `case` event of `c`, judged so far as `judged`, the `done`th case of `total`.
    pub fn case(c: &CaseResult, judged: &Judged, (done, total): (u64, u64)) -> RunEvent {
        let so_far: SoFar = judged.so_far;
        let cells = match &judged.checks {
            CaseChecks::Cells(cells) => cells.clone(),
            CaseChecks::Invariants(_) | CaseChecks::Named(_) => vec![],
        };
        RunEvent::Case(CaseEnded {
            done,
            total,
            scenario: c.scenario.clone(),
            input: crate::text::cut(&c.prompt, INPUT_CHARS),
            answered: c.answer.is_some(),
            error: c.error.clone(),
            not_judged: c.not_judged.clone(),
            latency_ms: c.latency_ms,
            faults: c.faults.len(),
            so_far,
            fault_rules: c
                .faults
                .iter()
                .map(|f| format!("{} ({})", f.rule, f.mode))
                .collect(),
            outcome: c.outcome.as_ref().map(|o| o.class.as_str().to_string()),
            instance: c.instance,
            exchanges: c.traffic.as_ref().map(|t| t.iter().map(|e| e.id).collect()),
            cells,
        })
    }

    pub fn kind(&self) -> EventKind {
        self.into()
    }

    /// Its `data:` JSON on the wire.
    pub fn data(&self) -> String {
        // Adjacently tagged: the data is serde's `data` field. Our records always serialize
        // (string keys; a number that is not finite is null), as `json!` assumed before.
        match serde_json::to_value(self) {
            Ok(mut v) => v["data"].take().to_string(),
            Err(_) => Value::Null.to_string(),
        }
    }

    /// The event an SSE message named `kind` with `data` stands for.
    pub fn parse(kind: &str, data: Value) -> Result<RunEvent, EventError> {
        let known: EventKind = kind
            .parse()
            .map_err(|_| EventError::Unknown(kind.to_string()))?;
        let tagged = serde_json::json!({"event": kind, "data": data});
        serde_json::from_value(tagged).map_err(|source| EventError::Data {
            kind: known,
            source,
        })
    }
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[cfg(test)]
#[path = "run_event_tests.rs"]
mod tests;
