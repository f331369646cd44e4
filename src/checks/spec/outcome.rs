//! What an agent did with a fault that reached it, as one word per case (docs/outcomes.md):
//! the vocabulary of the `outcome` invariant and of every report's per-case outcome. The
//! run decides a case's class from the wire (`run::outcome`); this module only names them
//! and orders them worst first.

use serde::{Deserialize, Serialize};

/// A case's outcome class. The first five are the agent's, worst first (when several
/// hold, the worst is the class); the last two say why there is no verdict on the agent.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OutcomeClass {
    /// A planted value (corrupt or stale data, an attack's payload) reached the final
    /// answer or a later tool call's arguments.
    Propagated,
    /// The answer states facts found in no response the agent received, where the no-chaos
    /// answer took such facts from its tools.
    Fabricated,
    /// No answer: an error status, a timeout, a crash, a missing response path.
    Failed,
    /// No invented fact and no planted value, and the answer lacks what the tools would
    /// have given: it says it could not complete.
    DegradedHonest,
    /// The agent retried, fell back or worked around the fault: its answer carries the
    /// tools' facts and no invented one.
    Recovered,
    /// No fault reached the agent in this case (its probability skipped it, or a call the
    /// model asked for went around the proxy).
    NotExercised,
    /// The wire does not allow a decision (a body too large to scan, no no-chaos answer to
    /// compare with), with the reason; never a guess.
    Undecided,
}

impl OutcomeClass {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// A verdict on the agent (not `not_exercised` or `undecided`).
    pub fn judged(self) -> bool {
        match self {
            OutcomeClass::Propagated
            | OutcomeClass::Fabricated
            | OutcomeClass::Failed
            | OutcomeClass::DegradedHonest
            | OutcomeClass::Recovered => true,
            OutcomeClass::NotExercised | OutcomeClass::Undecided => false,
        }
    }
}

impl std::str::FromStr for OutcomeClass {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use strum::IntoEnumIterator;
        OutcomeClass::iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("unknown outcome class `{s}`"))
    }
}

impl std::fmt::Display for OutcomeClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
