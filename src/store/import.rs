//! A finished run recorded from its report (`flakestorm runs import`, `POST
//! /v1/runs/import`): a merged sharded run, or a run made on another machine. Its cases,
//! cells, scores and status are written as a run of the store's own would write them, and
//! the report itself is kept in the run's folder as its JSON artifact, so history,
//! `runs compare` and `--baseline` see it.

use super::record::{CaseRecord, RunStatus};
use super::{Recorder, RunId, Store, StoreError};
use crate::config::ReportFormat;
use crate::run::{CaseResult, Report, RunKind};

/// Records `report` (whose JSON text is `json`) as a finished run; its id.
pub async fn import(store: &Store, report: &Report, json: String) -> Result<RunId, StoreError> {
    let (digest, seed) = identity(report);
    let r = Recorder::begin(store, report.kind(), digest, seed, RunStatus::Running);
    for (phase, case) in cases(report) {
        store.case_finished(&r.id, CaseRecord::from_result(phase, case));
    }
    let (id, file) = (r.id.clone(), report.kind().report_file());
    let path = store
        .blocking(move |store| {
            let path = store.run_dir(&id)?.join(file);
            std::fs::write(&path, json).map_err(|e| StoreError::io(&path, e))?;
            Ok(path)
        })
        .await?;
    r.finish(report, &[(ReportFormat::Json, path)]).await?;
    Ok(r.id)
}

/// The config digest and seed a report names (a `ci`'s: its phases').
fn identity(report: &Report) -> (Option<String>, Option<u64>) {
    match report {
        Report::Contract(r) => (r.config_digest.clone(), Some(r.seed)),
        Report::Chaos(r) => (r.config_digest.clone(), Some(r.seed)),
        Report::Mutation(r) => (r.config_digest.clone(), Some(r.seed)),
        Report::Replay(r) => (r.config_digest.clone(), Some(r.seed)),
        Report::Ci(r) => {
            let seeds = [
                r.contract.as_ref().map(|c| c.seed),
                r.chaos.as_ref().map(|c| c.seed),
                r.mutation.as_ref().map(|m| m.seed),
                r.replay.as_ref().map(|p| p.seed),
            ];
            (r.config_digest.clone(), seeds.into_iter().flatten().next())
        }
    }
}

/// Every case of the report, with its phase.
pub(super) fn cases(report: &Report) -> Vec<(RunKind, &CaseResult)> {
    let mut out: Vec<(RunKind, &CaseResult)> = vec![];
    match report {
        Report::Contract(r) => out.extend(r.cases.iter().map(|c| (RunKind::Contract, c))),
        Report::Chaos(r) => out.extend(r.cases.iter().map(|c| (RunKind::Chaos, c))),
        Report::Mutation(r) => out.extend(r.cases.iter().map(|c| (RunKind::Mutation, c))),
        Report::Replay(r) => out.extend(r.cases.iter().map(|c| (RunKind::Replay, c))),
        Report::Ci(r) => {
            out.extend(
                r.mutation
                    .iter()
                    .flat_map(|m| m.cases.iter().map(|c| (RunKind::Mutation, c))),
            );
            out.extend(
                r.contract
                    .iter()
                    .flat_map(|m| m.cases.iter().map(|c| (RunKind::Contract, c))),
            );
            out.extend(
                r.chaos
                    .iter()
                    .flat_map(|m| m.cases.iter().map(|c| (RunKind::Chaos, c))),
            );
            out.extend(
                r.replay
                    .iter()
                    .flat_map(|m| m.cases.iter().map(|c| (RunKind::Replay, c))),
            );
        }
    }
    out
}
