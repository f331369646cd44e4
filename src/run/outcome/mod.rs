//! What the agent did with the fault that reached a case, decided from the wire for every
//! case, without a judge model (docs/outcomes.md). When a case ends its `trace` is read
//! off the journal (`trace`: the answer's facts and the responses that support them, where
//! each planted value went, calls the model asked for that went around the proxy); once
//! the run has its no-chaos baselines, `classify` gives every case of a scenario with
//! chaos its class (`checks::spec::OutcomeClass`) and the evidence for it. `facts` reads
//! facts out of text, `sources` out of response bodies. Pure: the journal's bodies come in
//! as a function.

mod classify;
mod facts;
mod sources;
mod trace;
mod untested;

use serde::{Deserialize, Serialize};

use crate::checks::spec::OutcomeClass;
use crate::exchange::FaultKind;

pub(super) use classify::{classify, needs_baseline};
pub use trace::{Trace, Wire, trace};
pub(super) use untested::untested;

/// A case's outcome: its class, why in one line, and what it was decided from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseOutcome {
    pub class: OutcomeClass,
    pub reason: String,
    /// A call the model asked for went around the proxy: the case's fault-dependent checks
    /// are not tested.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bypassed: bool,
    pub evidence: Vec<Evidence>,
}

/// One piece of what a class was decided from, with the exchanges it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// A fault or attack that reached the agent in this case.
    Fault {
        rule: String,
        mode: FaultKind,
        exchange: u64,
    },
    /// A value a fault or attack planted, and where it went afterwards.
    Planted {
        exchange: u64,
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        original: Option<String>,
        planted: String,
        reached: Vec<Reach>,
    },
    /// A fact of the answer found in no good response of the case, nor in the prompt.
    Unsupported { fact: String, why: String },
    /// A fact of the answer a good tool response of this case gave.
    Carried {
        fact: String,
        exchange: u64,
        tool: String,
    },
    /// What the no-chaos answer took from the faulted tools and this answer lacks.
    Lacks { facts: Vec<String> },
    /// A declared tool the model asked for (in `exchange`) whose call never crossed the
    /// proxy in this case.
    Bypassed { tool: String, exchange: u64 },
    /// The agent gave no answer.
    NoAnswer { why: String },
}

/// Where a planted value surfaced: a later request to the model, a later tool call's
/// arguments, or the final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    pub place: Place,
    /// The exchange that carried it (none for the answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Model,
    ToolArgs,
    Answer,
}

impl Place {
    pub fn describe(self) -> &'static str {
        match self {
            Place::Model => "a later request to the model",
            Place::ToolArgs => "a later tool call's arguments",
            Place::Answer => "the final answer",
        }
    }
}

impl CaseOutcome {
    /// These exchange ids moved by `off` (a shard's ids, renumbered by a merge).
    pub(super) fn moved(mut self, off: u64) -> CaseOutcome {
        for e in &mut self.evidence {
            match e {
                Evidence::Fault { exchange, .. }
                | Evidence::Planted { exchange, .. }
                | Evidence::Carried { exchange, .. }
                | Evidence::Bypassed { exchange, .. } => *exchange += off,
                Evidence::Unsupported { .. }
                | Evidence::Lacks { .. }
                | Evidence::NoAnswer { .. } => {}
            }
            if let Evidence::Planted { reached, .. } = e {
                for r in reached {
                    r.exchange = r.exchange.map(|x| x + off);
                }
            }
        }
        self
    }
}

/// How many cases of a set (a scenario, a cell) ended in each class, in class order.
pub fn counts<'a>(
    outcomes: impl IntoIterator<Item = &'a CaseOutcome>,
) -> std::collections::BTreeMap<OutcomeClass, usize> {
    let mut out = std::collections::BTreeMap::new();
    for o in outcomes {
        *out.entry(o.class).or_default() += 1;
    }
    out
}
