//! Invariants evaluated on one case: what the agent answered (`answer`), helped by a text
//! similarity (`similarity`: lexical, or embeddings computed before the checks run) and PII
//! detectors (`pii`); what it did on the wire (`traffic`, over the case's journal
//! slice); and what it did with a fault (`outcome`, the class the run decided). The two kinds are separate closed enums (`AnswerCheck` in `answer`,
//! `TrafficCheck` in `traffic`), each `spec::Check` sorted into one by exhaustive
//! matches, so a new check does not compile until it is placed and handled. Pure: no I/O.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod answer;
mod outcome;
mod pii;
mod similarity;
pub mod spec;
mod spent;
mod traffic;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use answer::{CompileError, Invariant};
pub use outcome::OutcomeView;
pub use pii::find_pii;
pub use similarity::{Similarity, similarity};

/// What a check sees of one case.
#[derive(Debug, Clone, Copy)]
pub struct CaseView<'a> {
    pub prompt: &'a str,
    /// The answer, or why there is none.
    pub answer: Result<&'a str, &'a str>,
    pub latency: Duration,
    /// The no-chaos answer to the same prompt (`behavior_unchanged: auto`).
    pub baseline: Option<&'a str>,
    /// The agent's exchanges during the case, when the run attributed them (traffic checks).
    pub traffic: Option<&'a [std::sync::Arc<crate::exchange::Exchange>]>,
    /// Why nothing at all crossed the proxy while the case's scenario ran, when nothing
    /// did: its traffic checks are then not tested. A call not seen, or a count of zero,
    /// says nothing of an agent whose traffic never reached flakestorm.
    pub silent: Option<&'a str>,
    /// How `similarity` and `behavior_unchanged` compare texts.
    pub similarity: &'a Similarity,
    /// What the agent did with the fault that reached the case (`outcome` checks); `None`
    /// when its scenario planned none.
    pub outcome: Option<OutcomeView<'a>>,
    /// The tokens and cost of its LLM calls (`max_tokens`, `max_cost`), when its traffic
    /// was attributed.
    pub usage: Option<&'a crate::cost::Tally>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum Verdict {
    Pass(String),
    Fail(String),
    /// The check does not apply to this case (e.g. `refusal_check` on a benign prompt).
    NotApplicable(String),
    /// The check could not be judged: the chaos it is about never happened, or the
    /// environment failed (flakestorm's own errors, an untrusted upstream). Never a pass,
    /// never the agent's failure.
    NotTested(String),
}

impl Verdict {
    pub fn passed(&self) -> bool {
        matches!(self, Verdict::Pass(_))
    }

    /// The check could not be judged (`NotTested`).
    pub fn is_not_tested(&self) -> bool {
        matches!(self, Verdict::NotTested(_))
    }

    /// Passed or failed: a verdict on the agent.
    pub fn judged(&self) -> bool {
        match self {
            Verdict::Pass(_) | Verdict::Fail(_) => true,
            Verdict::NotApplicable(_) | Verdict::NotTested(_) => false,
        }
    }
}
