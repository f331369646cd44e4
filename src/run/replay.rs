//! Replay runs (design.md §5, §7): each recorded incident (a session) is played back once:
//! its tools' recorded answers and its tape are installed on the chaos engine (the proxy
//! answers the agent's calls from them), the agent gets the session's `input`, and the case
//! is judged with the session's contract (or the top-level invariants). `when` treats the
//! session's error answers (status ≥ 400, or 0), and its tape's faulted or error entries, as
//! tool or LLM faults active, and its tape's context attacks as chaos active. Sessions run
//! one at a time.
//! The score is passed sessions / judged sessions × 100. A session that cannot run (a bad
//! file, a contract that resolves to nothing) is an `error` and fails the run; the others
//! still run.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::cases::{CaseCheck, CaseResult, run_case};
use super::coverage::{self, Coverage};
use super::judge::view;
use super::replay_setup::Judged;
use super::replay_verdict::{applies, misses, session_reasons, verdict};
use super::tie::{Tie, trace_id};
use super::verdict::{Evidence, JournalMark, Judgement, RunVerdict, Seen, decide};
use super::{RunContext, SoFar};
use crate::chaos::ReplayTable;
use crate::chaos::spec::CompiledChaos;
use crate::checks::Verdict;
use crate::config::replays::{LlmSource, OnMiss, Session, SessionEntry};
use crate::config::{Attribution, Config};

pub use super::replay_verdict::SessionVerdict;

pub const SCHEMA: &str = "flakestorm.replay/1";

/// Reads `schema` back only as this kind's and version's (`Report::from_json`).
fn schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    super::saved::one_of(d, &[SCHEMA])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    #[serde(deserialize_with = "schema")]
    pub schema: super::saved::Fixed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::RunInfo>,
    pub config_digest: Option<String>,
    pub seed: u64,
    pub on_miss: OnMiss,
    pub cases: Vec<CaseResult>,
    pub sessions: Vec<SessionVerdict>,
    /// Passed sessions / judged sessions × 100 (0 when none was judged).
    pub score: f64,
    #[serde(flatten)]
    pub judgement: Judgement,
    pub min_score: f64,
    /// Per session: whether its recorded answers reached the agent's traffic.
    pub coverage: Vec<Coverage>,
    pub agent_calls: usize,
    pub warnings: Vec<String>,
    /// Under `--shard`: which part of the run this is (its sessions), and its counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::ShardPart>,
}

/// Replays `entries` (the config's `replays.sessions`, or the files given on the command
/// line) against the agent in `ctx`.
pub async fn run_replay(
    ctx: &RunContext,
    config: &Config,
    entries: &[SessionEntry],
) -> ReplayReport {
    // One session at a time: each installs its own answers, and its exchanges are its own.
    let ctx = &RunContext {
        concurrency: 1,
        ..ctx.clone()
    };
    // Every session is read and its contract resolved first, so progress plans only the
    // sessions that will run.
    let setups = super::replay_verdict::set_up(entries, config);
    // Under `--shard`, the shard's sessions only, each at its place in the whole run.
    let units: Vec<String> = setups.iter().map(|(v, _)| v.id.clone()).collect();
    let held = |id: &str| ctx.shard.is_none_or(|s| s.holds(id));
    if let Some(p) = &ctx.progress {
        let runnable = setups.iter().filter(|(v, s)| s.is_ok() && held(&v.id));
        (p.planned)(runnable.count() * ctx.scoring.trials.indices().len());
    }
    let (mark, answers) = (JournalMark::now(&ctx.journal), ctx.agent.answers_read());
    let on_miss = config.replays.on_miss;
    let (mut cases, mut sessions, mut coverage, mut warnings) = (vec![], vec![], vec![], vec![]);
    for (i, (mut v, setup)) in setups.into_iter().enumerate() {
        if !held(&v.id) {
            continue;
        }
        let (session, (contract, judged), tape) = match setup {
            Ok(x) => x,
            Err(why) => {
                v.verdict = RunVerdict::Error;
                v.reasons = vec![why];
                sessions.push(v);
                continue;
            }
        };
        v.contract = Some(contract);
        v.recorded += tape.as_ref().map_or(0, |t| t.entries());
        let live = config.replays.llm == LlmSource::Live;
        let mut trials = vec![];
        for t in ctx.scoring.trials.indices() {
            let mut vt = v.clone();
            let before = coverage::Before::after(&coverage, ctx.scoring.resets);
            let how = (on_miss, live);
            let played = replay_one(ctx, &session, tape.clone(), how, (i, t, before)).await;
            judge(ctx, &session, &judged, &played, &mut vt, &mut warnings).await;
            let Played {
                mut case, covered, ..
            } = played;
            case.trial = (ctx.scoring.trials.n > 1).then_some(t + 1);
            tell_progress(ctx, &case, &vt);
            vt.case = Some(cases.len());
            cases.push(case);
            coverage.push(covered);
            trials.push(vt);
        }
        match ctx.scoring.trials.n > 1 {
            true => sessions.extend(super::replay_verdict::over_trials(trials)),
            false => sessions.extend(trials),
        }
    }
    let seen = Seen::since(ctx, mark, answers);
    let shard = ctx.shard.map(|s| {
        let mine = units.iter().filter(|u| s.holds(u)).cloned().collect();
        let raw = super::shard::Raw::of(&seen);
        super::shard::ShardPart::new(s, &ctx.scoring.trials, &units, mine, raw)
    });
    let parts = Parts {
        cases,
        sessions,
        coverage,
        warnings,
    };
    let mut report = replay_report(&ctx.scoring, on_miss, parts, &seen);
    report.shard = shard;
    report
}

/// A session's case, told to the progress hooks with the session's verdict so far.
fn tell_progress(ctx: &RunContext, case: &CaseResult, vt: &SessionVerdict) {
    let Some(p) = &ctx.progress else { return };
    let so_far = match vt.verdict {
        RunVerdict::Pass => SoFar::Passed,
        RunVerdict::Fail => SoFar::Failed,
        RunVerdict::NotTested | RunVerdict::Error => SoFar::NotJudged,
    };
    let judged = super::Judged {
        so_far,
        checks: super::CaseChecks::Named(vt.checks.clone()),
    };
    (p.case)(case, &judged);
}

/// A replay run's sessions, their cases and coverage (in run order), and its warnings.
pub(super) struct Parts {
    pub cases: Vec<CaseResult>,
    pub sessions: Vec<SessionVerdict>,
    pub coverage: Vec<Coverage>,
    pub warnings: Vec<String>,
}

/// The report of judged sessions: the score is passed / judged sessions; the verdict is
/// decided from the cases, their coverage and what the journal `seen`. A whole replay run
/// and the merge of its shards both end here.
pub(super) fn replay_report(
    ctx: &crate::run::Scoring,
    on_miss: OnMiss,
    parts: Parts,
    seen: &Seen,
) -> ReplayReport {
    let Parts {
        cases,
        sessions,
        coverage,
        warnings,
    } = parts;
    let judged = sessions.iter().filter(|s| s.verdict.judged()).count();
    let passed = sessions
        .iter()
        .filter(|s| s.verdict == RunVerdict::Pass)
        .count();
    // With trials each session earns its consistency figure (`scoring.consistency`).
    let credits = sessions.iter().filter(|s| s.verdict.judged());
    let credits = credits.filter_map(|s| Some((1.0, s.consistency.clone()?)));
    let score = match (judged, ctx.trials.n > 1) {
        (0, _) => 0.0,
        (n, false) => passed as f64 * 100.0 / n as f64,
        (_, true) => super::consistency::credited_score(credits, ctx.trials.scoring, ctx.trials.k),
    };
    let mut judgement = decide(&Evidence {
        score,
        judged_anything: judged > 0,
        ..Evidence::of(ctx, seen, &cases, &coverage)
    });
    session_reasons(&sessions, &mut judgement);
    ReplayReport {
        schema: SCHEMA,
        run: None,
        config_digest: ctx.config_digest.clone(),
        seed: ctx.seed,
        on_miss,
        agent_calls: super::cases::agent_calls(&cases),
        cases,
        sessions,
        score,
        judgement,
        min_score: ctx.min_score,
        coverage,
        warnings,
        shard: None,
    }
}

/// A session's case, what its answers reached, and its table's counters.
struct Played {
    case: CaseResult,
    covered: Coverage,
    table: Arc<ReplayTable>,
}

/// Runs one session's case with its answers installed: the `index`-th session, after
/// what the run saw `before` it.
async fn replay_one(
    ctx: &RunContext,
    session: &Session,
    tape: Option<Arc<crate::tape::TapeTable>>,
    (on_miss, llm_live): (OnMiss, bool),
    (index, trial, before): (usize, u32, coverage::Before),
) -> Played {
    let table = Arc::new(
        ReplayTable::new(&session.tool_responses, on_miss)
            .with_tape(tape)
            .with_live_llm(llm_live),
    );
    let header = ctx.pool.is_none() && ctx.scoring.attribution == Attribution::Header;
    let trace = trace_id(
        ctx,
        &format!("replay:{}", session.id),
        &session.input,
        index,
        trial,
    );
    // Calls that lost their case meet no rules at all.
    let _none = ctx.engine.install_compiled(&CompiledChaos::default(), None);
    let installed = ctx.engine.install_replay(table.clone(), Some(&trace));
    if let Some(p) = &ctx.progress {
        (p.started)(&session.id, &session.input);
    }
    let lease = match &ctx.pool {
        Some(pool) => Some(pool.lease().await),
        None => None,
    };
    let tie = match (&lease, header) {
        (_, true) => Tie::Header(&trace),
        (lease, false) => Tie::Lane {
            trace: &trace,
            lane: lease.as_ref().map_or(ctx.journal.main_lane(), |l| l.lane()),
            instance: lease.as_ref(),
        },
    };
    let start = ctx.journal.peek_next_id();
    let mut case = run_case(ctx, &session.id, &session.input, tie, None, false, None).await;
    drop(lease);
    let end = ctx.journal.peek_next_id().saturating_sub(1);
    let stats = installed
        .rules()
        .replay
        .as_ref()
        .map(|t| t.stats())
        .unwrap_or_default();
    drop(installed);
    let answers = !session.tool_responses.is_empty() || table.tape().is_some();
    if header && answers && case.traffic.is_none() {
        case.not_judged
            .get_or_insert_with(|| super::matrix::UNTRACED.to_string());
    }
    let exchanges = match &case.traffic {
        Some(t) => t.clone(),
        None => ctx.journal.slice(start, end),
    };
    let covered = coverage::of(
        &session.id,
        std::slice::from_ref(&case),
        &exchanges,
        stats,
        &ctx.scoring.declared,
        before,
    );
    Played {
        case,
        covered,
        table,
    }
}

/// Judges a replayed case into `v`.
async fn judge(
    ctx: &RunContext,
    session: &Session,
    judged: &[Judged],
    played: &Played,
    v: &mut SessionVerdict,
    warnings: &mut Vec<String>,
) {
    let Played {
        case,
        covered,
        table,
    } = played;
    v.served = table.served();
    v.missed = table.missed();
    v.misses = misses(case);
    // Misses are recorded under the same rule, so coverage alone cannot tell that no
    // recorded answer was used: the incident was then not replayed.
    let unused = (v.recorded > 0 && v.served == 0).then(|| {
        format!(
            "none of the session's {} recorded answer(s) was used: the agent made no call to \
             those tools through the proxy",
            v.recorded
        )
    });
    // A strict miss fails the session even when no recorded answer was used.
    let strict_misses = table.on_miss() == OnMiss::Strict && !v.misses.is_empty();
    let untested = (!strict_misses)
        .then(|| covered.not_tested.clone().or(unused))
        .flatten();
    if let Some(why) = case.not_judged.clone().or(untested) {
        v.verdict = RunVerdict::NotTested;
        v.reasons = vec![why];
        return;
    }
    let mut faults = table.tape().map(|t| t.faults()).unwrap_or_default();
    // The model was live: the tape's LLM faults and attacks never reached the agent.
    faults.llm &= !table.llm_live();
    faults.llm_attack &= !table.llm_live();
    faults.tool |= session
        .tool_responses
        .iter()
        .any(|r| r.status == 0 || r.status >= 400);
    let checks = judged.iter().map(|j| &j.check);
    let sim = super::embed::measure(
        &ctx.scoring,
        checks,
        std::slice::from_ref(case),
        &HashMap::new(),
        warnings,
    )
    .await;
    let (mut failed, mut any_pass, mut untested) = (vec![], false, None);
    for j in judged {
        let verdict = match applies(j.when, faults) {
            false => {
                Verdict::NotApplicable(format!("when: {} does not hold in this session", j.when))
            }
            true => j
                .invariant
                .check(&view(case, None, &sim, covered.silent.as_deref())),
        };
        match &verdict {
            Verdict::Fail(why) => failed.push(format!("`{}`: {why}", j.id)),
            Verdict::Pass(_) => any_pass = true,
            Verdict::NotTested(why) => untested = untested.or(Some(format!("`{}`: {why}", j.id))),
            Verdict::NotApplicable(_) => {}
        }
        v.checks.push(CaseCheck {
            invariant: j.id.clone(),
            verdict,
        });
    }
    if table.on_miss() == OnMiss::Strict {
        for m in &v.misses {
            failed.push(format!("on_miss: strict: no recorded answer for {m}"));
        }
    }
    (v.verdict, v.reasons) = verdict(failed, untested, any_pass);
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
