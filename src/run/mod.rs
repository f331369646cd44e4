//! Runs: drive the agent through scenarios and judge what it did. `contract` runs the
//! invariants × chaos-scenarios matrix (design.md §5) and scores it (§7); `coverage`
//! proves each scenario's chaos reached the agent; `verdict` decides pass, fail, not
//! tested or error. The proxy is reached only through the chaos `Engine` (scenarios are
//! installed on it) and the `Journal` (the faults each case met): this module never
//! touches sockets of the proxy. Types the runners share (`RunContext`, `CellResult`,
//! `RunError`) live here, so `contract`, `judge` and `matrix` never import each other in
//! a circle.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod case_trace;
mod cases;
mod chaos;
mod ci;
mod classes;
mod consistency;
mod contract;
mod count;
mod coverage;
mod embed;
mod environment;
mod execute;
pub mod export;
mod judge;
mod late;
mod live_cells;
mod matrix;
mod merge;
mod mutation;
mod mutation_report;
pub mod outcome;
mod prompts;
mod read;
mod replay;
mod replay_setup;
mod replay_verdict;
mod saved;
mod score;
mod scored;
mod scoring;
mod sent;
mod settle;
pub mod shard;
mod summary;
pub mod tapes;
mod tie;
mod trials_shown;
mod unread;
mod usage;
mod verdict;
mod when;
mod wire_cases;

use serde::{Deserialize, Serialize};

use crate::agent::Agent;
use crate::chaos::Engine;
use crate::checks::Verdict;
use crate::config::{Attribution, Severity};
use crate::journal::Journal;

pub use cases::{CaseCheck, CaseResult, EarlierAttempt};
pub use chaos::{ChaosReport, run_chaos};
pub use ci::{CiReport, Phase, combine};
pub use consistency::{CaseTrials, Consistency};
pub use contract::{ContractReport, run_contract};
pub use coverage::{Coverage, Declared, RuleCoverage, Stack, Started};
pub use embed::{Cause as EmbedCause, EmbedError, Embedder, EmbedderError};
pub use execute::{Prepared, Report, RunKind, RunRequest, execute, prepare};
pub use live_cells::CellSoFar;
pub use merge::{carried_config, carry_config, merge_reports};
pub use mutation::{MutantVerdict, MutationReport, TypeScore, plan_mutations, run_mutation};
pub use outcome::{CaseOutcome, Evidence as OutcomeEvidence};
pub use replay::{ReplayReport, SessionVerdict, run_replay};
pub use replay_setup::session_files;
pub use saved::{ReadError, RunInfo, TrialsInfo};
pub use score::{Score, contract_score, contract_score_credited};
pub use scored::Scored;
pub use scoring::Scoring;
pub use sent::PromptVerdict;
pub use shard::Shard;
pub use summary::{
    chaos_summary, mutation_summary, replay_summary, summary, summary_of, verdict_line,
    verdict_line_of,
};
pub use trials_shown::{ESTIMATOR, figures as trials_figures, hidden_zero, shown_k};
pub use verdict::{Judgement, RunVerdict};

impl RunContext {
    /// The context of a run of `config` with `engine`, `journal` and `agent`, drawing from
    /// `seed`; without a pool, a process, progress, `--trial` or `--shard` (the session
    /// adds what it has).
    pub fn of(config: &crate::config::Config, parts: Parts) -> RunContext {
        let scoring = Scoring::of(
            config,
            parts.seed,
            parts.config_digest,
            parts.min_score,
            parts.embedder,
        );
        RunContext {
            engine: parts.engine,
            journal: parts.journal,
            agent: parts.agent,
            concurrency: config.concurrency() as usize,
            pool: None,
            process: None,
            settle: std::time::Duration::from_millis(config.advanced.settle_ms),
            settle_max: std::time::Duration::from_millis(config.advanced.settle_max_ms),
            progress: None,
            shard: None,
            scoring,
        }
    }

    /// Tells the progress hooks a phase starts.
    pub(crate) fn phase(&self, kind: RunKind) {
        if let Some(p) = &self.progress {
            (p.phase)(kind);
        }
    }

    /// This context, or a copy that runs one case at a time when `traffic` checks need each
    /// exchange to belong to exactly one case and only exclusive attribution can tell.
    pub(crate) fn for_traffic(&self, traffic: bool) -> std::borrow::Cow<'_, RunContext> {
        let exclusive = self.pool.is_none() && self.scoring.attribution == Attribution::Exclusive;
        if traffic && exclusive && self.concurrency > 1 {
            std::borrow::Cow::Owned(RunContext {
                concurrency: 1,
                ..self.clone()
            })
        } else {
            std::borrow::Cow::Borrowed(self)
        }
    }
}

/// How many times each case runs (`advanced.trials`), or the one trial to run (`--trial`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trials {
    pub n: u32,
    /// 1-based; `None`: every trial.
    pub only: Option<u32>,
    /// What a cell with several trials scores (`scoring.consistency`) and its `k`.
    pub scoring: crate::config::ConsistencyScore,
    pub k: Option<u32>,
    /// `scoring.critical_pass_k`: the pass^k a failed critical cell must keep not to fail
    /// the run; `None`: any failing trial fails it.
    pub critical_pass_k: Option<f64>,
}

impl Default for Trials {
    fn default() -> Self {
        Trials {
            n: 1,
            only: None,
            scoring: Default::default(),
            k: None,
            critical_pass_k: None,
        }
    }
}

impl Trials {
    /// `config`'s trials and how they score (`advanced.trials`, `scoring`), every trial.
    pub fn of(config: &crate::config::Config) -> Trials {
        Trials {
            n: config.advanced.trials,
            only: None,
            scoring: config.scoring.consistency,
            k: config.scoring.k,
            critical_pass_k: config.scoring.critical_pass_k,
        }
    }

    /// The trials to run, 0-based.
    pub fn indices(&self) -> Vec<u32> {
        match self.only {
            Some(t) => vec![t.saturating_sub(1)],
            None => (0..self.n.max(1)).collect(),
        }
    }
}

/// A progress display: told how many more cases a run plans, then of each case as it ends
/// and how it stands so far.
#[derive(Clone)]
pub struct Progress {
    /// A phase of the run starts (`mutation`, `contract`, `chaos`): `ci` has several.
    pub phase: std::sync::Arc<dyn Fn(RunKind) + Send + Sync>,
    pub planned: std::sync::Arc<dyn Fn(usize) + Send + Sync>,
    /// A case starts: its scenario and input.
    pub started: StartHook,
    pub case: CaseHook,
}

impl Progress {
    /// Hooks that tell both `self` and `other`.
    pub fn tee(self, other: Progress) -> Progress {
        let (a, b) = (self, other);
        let (p1, p2) = (a.phase, b.phase);
        let (n1, n2) = (a.planned, b.planned);
        let (s1, s2) = (a.started, b.started);
        let (c1, c2) = (a.case, b.case);
        Progress {
            phase: std::sync::Arc::new(move |p| {
                p1(p);
                p2(p);
            }),
            planned: std::sync::Arc::new(move |n| {
                n1(n);
                n2(n);
            }),
            started: std::sync::Arc::new(move |s, i| {
                s1(s, i);
                s2(s, i);
            }),
            case: std::sync::Arc::new(move |c, f: &Judged| {
                c1(c, f);
                c2(c, f);
            }),
        }
    }
}

/// Told of each case as it starts: its scenario and input.
pub type StartHook = std::sync::Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Told of each case as it ends, and how it stands.
pub type CaseHook = std::sync::Arc<dyn Fn(&CaseResult, &Judged) + Send + Sync>;

/// A case judged as it ends, on its own answer: how it stands, and the checks behind that.
/// These are the run's final checks unless what is known only at the end (chaos
/// coverage, embeddings) changes them; the store keeps them as the case's verdict and
/// rewrites only the cases whose final verdict differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub so_far: SoFar,
    pub checks: CaseChecks,
}

/// A case's checks, as its report lists them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum CaseChecks {
    /// Each of the run's invariants in order (chaos and mutation cases).
    Invariants(Vec<crate::checks::Verdict>),
    /// Each check by name (a replay session's).
    Named(Vec<CaseCheck>),
    /// A contract case's cells as it ends (`live_cells`), for the run's followers only.
    Cells(Vec<CellSoFar>),
}

impl Judged {
    /// A case of a run that scores cells, not cases.
    pub fn unscored() -> Judged {
        Judged {
            so_far: SoFar::Unscored,
            checks: CaseChecks::Invariants(vec![]),
        }
    }
}

/// How a case stands when it ends, judged on its own answer: a pass rate so far for the
/// progress display. The run's verdicts, made at the end with the chaos coverage and the
/// embeddings, can still mark a case not judged. Its name is a `case` event's `so_far`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoFar {
    Passed,
    Failed,
    /// An environment error, a lost trace id, an attack not delivered.
    NotJudged,
    /// The run scores cells, not cases (a contract).
    Unscored,
}

/// Judges a case as it ends (`Judged`).
pub(crate) type Provisional = std::sync::Arc<dyn Fn(&CaseResult) -> Judged + Send + Sync>;

/// What a run needs from the daemon and the agent, and what it judges with (`scoring`).
#[derive(Clone)]
pub struct RunContext {
    pub engine: Engine,
    pub journal: Journal,
    pub agent: Agent,
    /// Cases of one scenario in flight at once (`advanced.concurrency`).
    pub concurrency: usize,
    /// The agent's instances when flakestorm started a pool of them: each case runs on one,
    /// and owns what arrives on its lane (design.md §6).
    pub pool: Option<std::sync::Arc<crate::agent::Pool>>,
    /// The agent process this run started without a pool (`agent.command` without
    /// `{port}`): a case during which it exited is not judged.
    pub process: Option<crate::agent::Process>,
    /// `advanced.settle_ms`: how long a case waits, after its answer and with none of its
    /// exchanges in flight, for calls the agent makes after answering.
    pub settle: std::time::Duration,
    /// `advanced.settle_max_ms`: the longest a case is followed after its answer while its
    /// calls go on.
    pub settle_max: std::time::Duration,
    pub progress: Option<Progress>,
    /// `--shard K/N`: run only this shard's cases (docs/scale.md).
    pub shard: Option<Shard>,
    pub scoring: Scoring,
}

/// What `RunContext::of` cannot take from the config.
pub struct Parts {
    pub engine: Engine,
    pub seed: u64,
    pub journal: Journal,
    pub agent: Agent,
    pub config_digest: Option<String>,
    pub min_score: f64,
    pub embedder: Option<Embedder>,
}

/// One cell of the invariants × scenarios matrix: shared by the contract run that scores
/// it and the judge that fills it (kept here so neither imports the other).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub invariant: String,
    pub scenario: String,
    pub severity: Severity,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Cases the cell judged.
    pub cases: usize,
    /// With `advanced.trials` above 1: how consistently its cases' trials passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// How many of its cases (every trial) ended in each outcome class, when they have one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outcomes: std::collections::BTreeMap<crate::checks::spec::OutcomeClass, usize>,
}

/// Why a run could not start; shared by the contract, chaos and matrix runners.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("contract.invariants: {0}")]
    Invariant(String),
    #[error("contract `{0}` has invariants but no prompts: add golden_prompts or probes")]
    NoPrompts(String),
    #[error("mutation runs need golden_prompts to make variants of")]
    NothingToMutate,
    #[error("model: {0}")]
    Model(String),
    /// The config cannot make this kind of run (`execute::prepare` says so first).
    #[error("{0}")]
    NotRunnable(String),
}
