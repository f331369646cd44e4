//! Writing one run into the store as it goes, for the CLI's run commands and the daemon's
//! runs alike: each case as it ends with the verdict it has then (so a run whose process
//! dies keeps what it finished), then the cells, the final verdict of each case whose
//! verdict changed at the end, the scores, the status and the report files. Every write
//! is a send to the store's writer: the run never waits on SQLite.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::record::{CaseRecord, CellRecord, NewRun, RunStatus, Verdict};
use super::{RunId, Store, StoreError};
use crate::config::ReportFormat;
use crate::run::{CaseChecks, CaseResult, Judged, Progress, Report, RunKind, SoFar};

/// One run being written.
#[derive(Clone)]
pub struct Recorder {
    store: Store,
    pub id: RunId,
    /// The phase cases belong to (`ci` has several).
    phase: Arc<Mutex<RunKind>>,
    /// The verdict each case was stored with when it ended, by `key_hash`; `None` when
    /// two cases share a key (or a hash), whose final verdicts are then always written.
    stored: Arc<Mutex<StoredVerdicts>>,
}

type StoredVerdicts = HashMap<u64, Option<(Verdict, CaseChecks)>>;

/// A case's key in the store (phase, scenario, input, trial), hashed with fixed keys.
fn key_hash(key: super::CaseKey<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// The verdict a case is stored with when it ends; a case of a run scored by cells has
/// none.
fn stored_verdict(j: &Judged) -> Option<Verdict> {
    match j.so_far {
        SoFar::Passed => Some(Verdict::Pass),
        SoFar::Failed => Some(Verdict::Fail),
        SoFar::NotJudged => Some(Verdict::NotTested),
        SoFar::Unscored => None,
    }
}

impl Recorder {
    /// Starts recording a run of `kind`, `queued` or `running`.
    pub fn begin(
        store: &Store,
        kind: RunKind,
        digest: Option<String>,
        seed: Option<u64>,
        status: RunStatus,
    ) -> Recorder {
        let id = store.begin_run(NewRun {
            kind,
            config_digest: digest,
            seed,
            status,
        });
        Recorder {
            store: store.clone(),
            id,
            phase: Arc::new(Mutex::new(kind)),
            stored: Default::default(),
        }
    }

    pub fn set_status(&self, status: RunStatus) {
        self.store.set_status(&self.id, status);
    }

    /// The hooks that write cases as they end.
    pub fn hooks(&self) -> Progress {
        let (r1, r2, r3) = (self.clone(), self.clone(), self.clone());
        Progress {
            phase: Arc::new(move |p| *r1.phase.lock().unwrap_or_else(|e| e.into_inner()) = p),
            planned: Arc::new(move |n| r2.store.planned(&r2.id, n as u64)),
            started: Arc::new(|_: &str, _: &str| {}),
            case: Arc::new(move |c: &CaseResult, j: &Judged| {
                let phase = *r3.phase.lock().unwrap_or_else(|e| e.into_inner());
                let mut record = CaseRecord::from_result(phase, c);
                if let Some(v) = stored_verdict(j) {
                    record.verdict = Some(v);
                    record.checks = serde_json::to_value(&j.checks).unwrap_or_default();
                    let key = key_hash((phase, &c.scenario, &c.prompt, c.trial));
                    let mut stored = r3.stored.lock().unwrap_or_else(|e| e.into_inner());
                    stored
                        .entry(key)
                        .and_modify(|e| *e = None)
                        .or_insert(Some((v, j.checks.clone())));
                }
                r3.store.case_finished(&r3.id, record);
            }),
        }
    }

    /// The run ended with `report`, written as `files`: its cells, case verdicts, scores
    /// and status. Then waits until the store has it all; a store that could not write
    /// it says why.
    pub async fn finish(
        &self,
        report: &Report,
        files: &[(ReportFormat, PathBuf)],
    ) -> Result<(), StoreError> {
        for cell in report.cells() {
            self.store
                .cell(&self.id, CellRecord::from_cell(RunKind::Contract, cell));
        }
        let stored = std::mem::take(&mut *self.stored.lock().unwrap_or_else(|e| e.into_inner()));
        for (phase, case, verdict, checks) in verdicts(report) {
            let key = (
                phase,
                case.scenario.as_str(),
                case.prompt.as_str(),
                case.trial,
            );
            // Most cases end as they stood: rewriting 10,000 unchanged rows was the
            // larger part of the store's cost at the end of a run.
            let hash = key_hash(key);
            if let Some(Some((v, c))) = stored.get(&hash)
                && *v == verdict
                && *c == checks
            {
                continue;
            }
            let checks = serde_json::to_value(&checks).unwrap_or_default();
            self.store.judge_case(&self.id, key, verdict, checks);
        }
        self.outcomes(report);
        for (format, p) in files {
            self.store.set_artifact(&self.id, format.as_str(), p);
        }
        if let Report::Contract(r) = report {
            self.store.set_contract(&self.id, &r.contract);
        }
        if let Some(t) = report.info().and_then(|i| i.trials.as_ref()) {
            self.store.set_trials(&self.id, t);
        }
        let scores: BTreeMap<String, f64> = report.scores().into_iter().collect();
        let (status, reason) = super::ended(report.judgement());
        self.store.finish_run(&self.id, status, scores, reason);
        self.store.flush().await
    }

    /// Each case's outcome class, decided when the run ends (docs/outcomes.md): one update
    /// per key, so cases sharing one (the same prompt twice) cost one write, not one each
    /// over all of them (the store cannot tell them apart: they keep the worst class).
    fn outcomes(&self, report: &Report) {
        // Each key's update is independent of the others': their order does not matter.
        let mut classes: HashMap<_, crate::checks::spec::OutcomeClass> = HashMap::new();
        for (phase, case) in super::import::cases(report) {
            if let Some(o) = &case.outcome {
                let key = (
                    phase,
                    case.scenario.as_str(),
                    case.prompt.as_str(),
                    case.trial,
                );
                let worst = classes.entry(key).or_insert(o.class);
                *worst = (*worst).min(o.class);
            }
        }
        for (key, class) in classes {
            self.store.set_outcome(&self.id, key, class);
        }
    }

    /// The run's tapes (`output.tapes`) are in `dir`: an artifact of the run like its
    /// report files.
    pub fn set_tapes(&self, dir: &std::path::Path) {
        self.store.set_artifact(&self.id, "tapes", dir);
    }

    /// The run ended without a report (`error`, `cancelled`, `interrupted`), and why.
    pub async fn fail(&self, status: RunStatus, reason: Option<String>) -> Result<(), StoreError> {
        self.store
            .finish_run(&self.id, status, BTreeMap::new(), reason);
        self.store.flush().await
    }
}

type Final<'a> = (RunKind, &'a CaseResult, Verdict, CaseChecks);

/// Each chaos, mutation and replay case with its verdict (contract cases are judged by
/// cells).
fn verdicts(report: &Report) -> Vec<Final<'_>> {
    let (chaos, mutation, replay) = match report {
        Report::Chaos(r) => (Some(r), None, None),
        Report::Mutation(r) => (None, Some(r), None),
        Report::Replay(r) => (None, None, Some(r)),
        Report::Ci(r) => (r.chaos.as_ref(), r.mutation.as_ref(), r.replay.as_ref()),
        Report::Contract(_) => (None, None, None),
    };
    let mut out = vec![];
    // A session that could not run has no case.
    if let Some(r) = replay {
        for s in &r.sessions {
            let Some(c) = s.case.and_then(|i| r.cases.get(i)) else {
                continue;
            };
            let judged = s.verdict.judged();
            let checks = CaseChecks::Named(s.checks.clone());
            out.push((
                RunKind::Replay,
                c,
                verdict(judged, s.verdict.passed()),
                checks,
            ));
        }
    }
    if let Some(r) = chaos {
        for (c, p) in r.cases.iter().zip(&r.prompts) {
            out.push((
                RunKind::Chaos,
                c,
                verdict(p.judged, p.passed),
                CaseChecks::Invariants(p.checks.clone()),
            ));
        }
    }
    if let Some(r) = mutation {
        for (c, m) in r.cases_with_mutants() {
            out.push((
                RunKind::Mutation,
                c,
                verdict(m.judged, m.passed),
                CaseChecks::Invariants(m.checks.clone()),
            ));
        }
    }
    out
}

/// The final verdicts of a run: each chaos and mutation case's, each contract cell's.
pub fn final_verdicts(report: &Report) -> Vec<Verdict> {
    let cases = verdicts(report).into_iter().map(|(_, _, v, _)| v);
    let cells = report
        .cells()
        .iter()
        .map(|c| Verdict::from_check(&c.verdict));
    cases.chain(cells).collect()
}

fn verdict(judged: bool, passed: bool) -> Verdict {
    match (judged, passed) {
        (false, _) => Verdict::NotTested,
        (true, true) => Verdict::Pass,
        (true, false) => Verdict::Fail,
    }
}
