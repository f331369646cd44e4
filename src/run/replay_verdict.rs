//! A replayed session's verdict: its record (`SessionVerdict`), `when` in a session (its
//! error answers, and its tape's faults, errors and context attacks, are the chaos it
//! replays), the calls no recorded answer was found for, and how the sessions' verdicts
//! weigh on the run's. Pure.

use serde::{Deserialize, Serialize};

use super::cases::{CaseCheck, CaseResult};
use std::sync::Arc;

use super::replay_setup::{self, Judged, Ready};
use super::verdict::{Judgement, RunVerdict};
use crate::chaos::replay::RULE;
use crate::config::Config;
use crate::config::When;
use crate::config::replays::{Session, SessionEntry};
use crate::exchange::FaultKind;

/// One session's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionVerdict {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The session file, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The input replayed (empty when the session could not be read).
    pub input: String,
    /// What the incident was, in the session's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_failure: Option<String>,
    /// The contract it was judged with, or `invariants` (the top-level ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// `pass`, `fail`, `not_tested` or `error` (the session could not run).
    pub verdict: RunVerdict,
    /// The checks that failed, why it was not tested, or the error.
    pub reasons: Vec<String>,
    /// Each invariant's verdict on the replayed case.
    pub checks: Vec<CaseCheck>,
    /// Recorded answers in the session, and how many the agent's calls used.
    pub recorded: usize,
    pub served: u64,
    /// Calls that found no recorded answer (forwarded live, or answered 599).
    pub missed: u64,
    /// The calls answered 599 for want of a recorded answer (`on_miss: error | strict`),
    /// as `METHOD URL`.
    pub misses: Vec<String>,
    /// The index of its case in `cases`, when it ran (its first trial's; with trials, the
    /// trial this verdict is: the first that failed, else the first).
    pub case: Option<usize>,
    /// With `advanced.trials` above 1: how consistently its trials passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<super::Consistency>,
}

/// A session's verdict over its trials: the first failing trial's, else the first passing
/// one's (a session that passed a judged trial is judged), else the first's; with how many
/// of the judged trials passed.
pub(super) fn over_trials(trials: Vec<SessionVerdict>) -> Option<SessionVerdict> {
    let judged: Vec<&SessionVerdict> = trials.iter().filter(|t| t.verdict.judged()).collect();
    let passed = judged
        .iter()
        .filter(|t| t.verdict == RunVerdict::Pass)
        .count() as u32;
    let consistency = super::Consistency::of(judged.len() as u32, passed);
    let first = |v: RunVerdict| trials.iter().position(|t| t.verdict == v);
    let pick = first(RunVerdict::Fail)
        .or_else(|| first(RunVerdict::Pass))
        .unwrap_or(0);
    let mut v = trials.into_iter().nth(pick)?;
    v.consistency = Some(consistency);
    Some(v)
}

/// A session's verdict before it runs.
pub(super) fn shell(r: &Ready) -> SessionVerdict {
    let s = r.session.as_ref().ok();
    SessionVerdict {
        id: r.id.clone(),
        name: s.and_then(|s| s.name.clone()),
        source: s.and_then(|s| s.source.clone()),
        file: r.file.as_ref().map(|f| f.display().to_string()),
        input: s.map(|s| s.input.clone()).unwrap_or_default(),
        expected_failure: s.and_then(|s| s.expected_failure.clone()),
        consistency: None,
        contract: None,
        verdict: RunVerdict::NotTested,
        reasons: vec![],
        checks: vec![],
        recorded: s.map_or(0, |s| s.tool_responses.len()),
        served: 0,
        missed: 0,
        misses: vec![],
        case: None,
    }
}

/// A session's verdict from its checks: the failures, else the first check not tested,
/// else a pass if one check passed (none applied is not tested either).
pub(super) fn verdict(
    failed: Vec<String>,
    untested: Option<String>,
    any_pass: bool,
) -> (RunVerdict, Vec<String>) {
    match (failed.is_empty(), untested, any_pass) {
        (false, _, _) => (RunVerdict::Fail, failed),
        (true, Some(why), _) => (RunVerdict::NotTested, vec![why]),
        (true, None, true) => (RunVerdict::Pass, vec![]),
        (true, None, false) => (
            RunVerdict::NotTested,
            vec!["no invariant applied to this session".into()],
        ),
    }
}

/// The case's calls answered 599 for want of a recorded answer, as `METHOD URL`.
pub(super) fn misses(case: &CaseResult) -> Vec<String> {
    case.traffic
        .iter()
        .flatten()
        .filter(|e| {
            e.fault
                .as_ref()
                .is_some_and(|f| f.rule == RULE && f.mode == FaultKind::ReplayMiss)
        })
        .map(|e| format!("{} {}", e.request.method, e.request.url))
        .collect()
}

/// `when` in a session: its error answers (and its tape's faulted or error entries, by
/// their target) are the tool and LLM faults; its tape's context attacks are chaos too, as
/// a contract scenario's `context_attacks` are.
pub(super) fn applies(when: When, faults: crate::tape::Faults) -> bool {
    match when {
        When::Always => true,
        When::ToolFaultsActive => faults.tool,
        When::LlmFaultsActive => faults.llm,
        When::AnyChaosActive => faults.any(),
        When::NoChaos => !faults.any(),
    }
}

/// Sessions that could not run fail the run, each named; sessions not tested keep a pass
/// from being one.
pub(super) fn session_reasons(sessions: &[SessionVerdict], j: &mut Judgement) {
    let errors: Vec<String> = sessions
        .iter()
        .filter(|s| s.verdict == RunVerdict::Error)
        .map(|s| {
            format!(
                "session `{}` could not be replayed: {}",
                s.id,
                s.reasons.join("; ")
            )
        })
        .collect();
    let failed: Vec<String> = sessions
        .iter()
        .filter(|s| s.verdict == RunVerdict::Fail)
        .map(|s| format!("session `{}` failed: {}", s.id, s.reasons.join("; ")))
        .collect();
    let untested: Vec<String> = sessions
        .iter()
        .filter(|s| s.verdict == RunVerdict::NotTested)
        .map(|s| {
            format!(
                "session `{}` was not tested: {}",
                s.id,
                s.reasons.join("; ")
            )
        })
        .collect();
    if !errors.is_empty() && matches!(j.verdict, RunVerdict::Pass | RunVerdict::NotTested) {
        j.verdict = RunVerdict::Fail;
    }
    if !untested.is_empty() && j.verdict == RunVerdict::Pass {
        j.verdict = RunVerdict::NotTested;
    }
    if j.verdict != RunVerdict::Pass {
        j.reasons.extend(errors);
        j.reasons.extend(failed);
        j.reasons.extend(untested);
    }
}

/// A session read, its contract's checks and its tape, or why it cannot run.
pub(super) type SetUp = Result<
    (
        Session,
        (String, Vec<Judged>),
        Option<Arc<crate::tape::TapeTable>>,
    ),
    String,
>;

/// Each session's verdict shell and its set-up, in the config's order.
pub(super) fn set_up(entries: &[SessionEntry], config: &Config) -> Vec<(SessionVerdict, SetUp)> {
    let each = |r: Ready| {
        let v = shell(&r);
        let setup = r.session.and_then(|s| {
            let judged = replay_setup::invariants(&s, r.file.as_deref(), config)?;
            let tape = replay_setup::tape(&s, r.file.as_deref(), config)?;
            Ok((s, judged, tape))
        });
        (v, setup)
    };
    replay_setup::sessions(entries)
        .into_iter()
        .map(each)
        .collect()
}
