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
    /// The cases stored so far, by `key_hash`, in the order the writer stores them: each
    /// one's `fingerprint` and the verdict it was stored with (`None`: unscored).
    stored: Arc<Mutex<StoredVerdicts>>,
    /// The calls its cases' timelines have kept so far (bounded per run).
    kept: super::timeline::Budget,
}

type StoredVerdicts = HashMap<u64, Vec<(u64, Option<(Verdict, CaseChecks)>)>>;

/// What tells apart cases sharing a key (the same prompt twice in one scenario and trial):
/// what the agent did in each.
fn fingerprint(c: &CaseResult) -> u64 {
    let mut h = DefaultHasher::new();
    (&c.answer, &c.error, c.latency_ms.to_bits(), c.instance).hash(&mut h);
    h.finish()
}

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
            kept: Default::default(),
        }
    }

    /// The store it writes to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn set_status(&self, status: RunStatus) {
        self.store.set_status(&self.id, status);
    }

    /// Case `c` of `phase` as the store keeps it, with its calls for its timeline while
    /// the run's bound allows (`store::timeline`).
    pub(super) fn case_record(&self, phase: RunKind, c: &CaseResult) -> CaseRecord {
        let mut record = CaseRecord::from_result(phase, c);
        record.timeline = c.traffic.as_deref().and_then(|t| self.kept.keep(t));
        record
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
                let mut record = r3.case_record(phase, c);
                let verdict = stored_verdict(j).map(|v| (v, j.checks.clone()));
                if let Some((v, checks)) = &verdict {
                    record.verdict = Some(*v);
                    record.checks = serde_json::to_value(checks).unwrap_or_default();
                }
                let key = key_hash((phase, &c.scenario, &c.prompt, c.trial));
                // Sent under the lock: the writer stores a key's cases in this list's order.
                let mut stored = r3.stored.lock().unwrap_or_else(|e| e.into_inner());
                stored
                    .entry(key)
                    .or_default()
                    .push((fingerprint(c), verdict));
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
        for (key, finals) in by_key(verdicts(report)) {
            let before = stored.get(&key_hash(key)).map_or(&[][..], Vec::as_slice);
            let finals = in_stored_order(before, finals);
            // Most cases end as they stood: rewriting 10,000 unchanged rows was the
            // larger part of the store's cost at the end of a run.
            let unchanged = before.len() == finals.len()
                && before.iter().zip(&finals).all(|((_, was), (v, c))| {
                    was.as_ref().is_some_and(|(wv, wc)| wv == v && wc == c)
                });
            if unchanged {
                continue;
            }
            let mut finals = finals;
            if finals.iter().all(|f| *f == finals[0]) {
                // One verdict the writer gives every case of the key, in one statement.
                finals.truncate(1);
            }
            let finals = finals
                .into_iter()
                .map(|(v, c)| (v, serde_json::to_value(&c).unwrap_or_default()))
                .collect();
            self.store.judge_cases(&self.id, key, finals);
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
        if let Some(n) = report.info().and_then(|i| i.merged_shards) {
            self.store.set_shards(&self.id, n);
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

/// A key's cases as the report has them: each case's fingerprint and final verdict.
type KeyFinals = Vec<(u64, Verdict, CaseChecks)>;

/// The final verdicts grouped by case key, keys in the report's order of first case.
fn by_key<'a>(finals: Vec<Final<'a>>) -> Vec<(super::CaseKey<'a>, KeyFinals)> {
    let mut index: HashMap<super::CaseKey<'a>, usize> = HashMap::new();
    let mut out: Vec<(super::CaseKey<'a>, KeyFinals)> = vec![];
    for (phase, case, verdict, checks) in finals {
        let key = (
            phase,
            case.scenario.as_str(),
            case.prompt.as_str(),
            case.trial,
        );
        let i = *index.entry(key).or_insert_with(|| {
            out.push((key, vec![]));
            out.len() - 1
        });
        out[i].1.push((fingerprint(case), verdict, checks));
    }
    out
}

/// A key's final verdicts lined up with its stored cases: each goes to the first stored
/// case not yet taken with its fingerprint (the same answer), else to the first not yet
/// taken. Without stored cases to line up with (an import stores them in the report's
/// order), the report's order. Linear in the key's cases.
fn in_stored_order(
    stored: &[(u64, Option<(Verdict, CaseChecks)>)],
    finals: KeyFinals,
) -> Vec<(Verdict, CaseChecks)> {
    if stored.len() != finals.len() {
        return finals.into_iter().map(|(_, v, c)| (v, c)).collect();
    }
    let mut by_print: HashMap<u64, std::collections::VecDeque<usize>> = HashMap::new();
    for (i, (print, _)) in stored.iter().enumerate() {
        by_print.entry(*print).or_default().push_back(i);
    }
    let mut slots: Vec<Option<(Verdict, CaseChecks)>> = vec![None; stored.len()];
    let mut unmatched = vec![];
    for (print, v, c) in finals {
        match by_print.get_mut(&print).and_then(|q| q.pop_front()) {
            Some(i) => slots[i] = Some((v, c)),
            None => unmatched.push((v, c)),
        }
    }
    let mut unmatched = unmatched.into_iter();
    slots
        .into_iter()
        .filter_map(|s| s.or_else(|| unmatched.next()))
        .collect()
}

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

/// Each chaos, mutation and replay case with its final verdict (contract cases are judged
/// by cells), as the store keeps them: the run's spans say the same.
pub fn case_verdicts(report: &Report) -> Vec<(RunKind, &CaseResult, Verdict)> {
    verdicts(report)
        .into_iter()
        .map(|(kind, case, v, _)| (kind, case, v))
        .collect()
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
