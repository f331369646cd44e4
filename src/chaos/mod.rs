//! The fault engine, pure (no sockets): the fault vocabulary the config deserialises
//! into (`spec`, a layer below config of its own), `chaos:` specs compiled into rules
//! (`rules`), deterministic triggering (`rng`), the provider-shaped responses faults
//! answer with (`respond`), what a request is (`classify`, from the `tools:` and `llm:` declared), and
//! the `Engine` handle the proxy asks for a decision on every request, and a replay
//! session's recorded tool answers (`replay`), consulted before the rules.
//! The proxy applies what the engine decides; the run engine installs scenarios through
//! the same handle. Must not do I/O or know about connections.

pub mod attack;
pub mod budget;
mod canary;
mod classify;
mod engine;
mod fired;
pub mod profiles;
pub mod replay;
pub mod respond;
pub mod rewrite;
pub(crate) mod rng;
mod rug_pull;
mod rules;
mod scope;
pub mod spec;
mod stats;

pub use canary::{Canary, Scanner};
pub use classify::{Classifier, ClassifierError};
pub use engine::{DeclareGuard, Engine, InstallGuard, Installed, TraceGuard};
pub use fired::Fired;
pub use replay::{Replay, ReplayTable};
pub use rng::{mix, stream};
pub use rules::{Decision, Formats, RuleSet};
pub use stats::{RuleKind, RuleStats, sum as sum_stats};

/// What a fault rule does when it fires.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    Tool(crate::chaos::spec::ToolMode),
    Llm(crate::chaos::spec::LlmMode),
}

impl Fault {
    /// What the journal records it as.
    pub fn kind(&self) -> crate::exchange::FaultKind {
        match self {
            Fault::Tool(m) => m.kind(),
            Fault::Llm(m) => m.kind(),
        }
    }
}
