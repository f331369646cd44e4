//! Writing one run into the store as it goes, for the CLI's run commands and the daemon's
//! runs alike: each case as it ends (so a run whose process dies keeps what it finished),
//! then the cells, each case's verdict, the scores, the status and the report files.
//! Every write is a send to the store's writer: the run never waits on SQLite.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::record::{CaseRecord, CellRecord, NewRun, RunStatus, Verdict};
use super::{RunId, Store, StoreError};
use crate::checks;
use crate::config::ReportFormat;
use crate::run::{CaseResult, Progress, Report, RunKind, RunVerdict, SoFar};

/// One run being written.
#[derive(Clone)]
pub struct Recorder {
    store: Store,
    pub id: RunId,
    /// The phase cases belong to (`ci` has several).
    phase: Arc<Mutex<&'static str>>,
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
            phase: Arc::new(Mutex::new(kind.as_str())),
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
            case: Arc::new(move |c: &CaseResult, _: SoFar| {
                let phase = *r3.phase.lock().unwrap_or_else(|e| e.into_inner());
                r3.store
                    .case_finished(&r3.id, CaseRecord::from_result(phase, c));
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
                .cell(&self.id, CellRecord::from_cell("contract", cell));
        }
        for (phase, case, verdict, checks) in verdicts(report) {
            let key = (phase, case.scenario.as_str(), case.prompt.as_str());
            self.store.judge_case(&self.id, key, verdict, checks);
        }
        for (format, p) in files {
            self.store.set_artifact(&self.id, format.as_str(), p);
        }
        let scores: BTreeMap<String, f64> = report.scores().into_iter().collect();
        let (status, reason) = super::ended(report.judgement());
        self.store.finish_run(&self.id, status, scores, reason);
        self.store.flush().await
    }

    /// The run ended without a report (`error`, `cancelled`, `interrupted`), and why.
    pub async fn fail(&self, status: RunStatus, reason: Option<String>) -> Result<(), StoreError> {
        self.store
            .finish_run(&self.id, status, BTreeMap::new(), reason);
        self.store.flush().await
    }
}

type Judged<'a> = (&'static str, &'a CaseResult, Verdict, serde_json::Value);

/// Each chaos, mutation and replay case with its verdict (contract cases are judged by
/// cells).
fn verdicts(report: &Report) -> Vec<Judged<'_>> {
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
            let judged = matches!(s.verdict, RunVerdict::Pass | RunVerdict::Fail);
            let checks = serde_json::to_value(&s.checks).unwrap_or(serde_json::Value::Null);
            out.push(("replay", c, verdict(judged, s.verdict.passed()), checks));
        }
    }
    if let Some(r) = chaos {
        for (c, p) in r.cases.iter().zip(&r.prompts) {
            out.push((
                "chaos",
                c,
                verdict(p.judged, p.passed),
                checks_json(&p.checks),
            ));
        }
    }
    if let Some(r) = mutation {
        // Cases are the text variants in order, then the wire-level ones in order.
        let (wire, text): (Vec<_>, Vec<_>) = r
            .mutants
            .iter()
            .partition(|m| m.variant.kind.family() == crate::config::Family::Wire);
        for (c, m) in r.cases.iter().zip(text.into_iter().chain(wire)) {
            out.push((
                "mutation",
                c,
                verdict(m.judged, m.passed),
                checks_json(&m.checks),
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

fn checks_json(checks: &[checks::Verdict]) -> serde_json::Value {
    serde_json::to_value(checks).unwrap_or(serde_json::Value::Null)
}
