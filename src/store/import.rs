//! A finished run recorded from its report (`flakestorm runs import`, `POST
//! /v1/runs/import`): a merged sharded run, or a run made on another machine. Its cases,
//! cells, scores and status are written as a run of the store's own would write them, and
//! the report itself is kept in the run's folder as its JSON artifact, so history,
//! `runs compare` and `--baseline` see it.

use super::record::RunStatus;
use super::{Recorder, RunId, Store, StoreError};
use crate::config::ReportFormat;
use crate::run::{CaseResult, Report, RunKind};

/// Cases sent to the writer before waiting for them to be stored: what an import holds
/// in memory besides its report stays bounded however many cases it has.
const CHUNK: usize = 1000;

/// Records `report` (whose JSON text is `json`) as a finished run; its id.
pub async fn import(store: &Store, report: &Report, json: String) -> Result<RunId, StoreError> {
    let r = begin_import(store, report);
    record_import(&r, report, json).await?;
    Ok(r.id)
}

/// The run an import of `report` records, `running` until `record_import` ends it: its id
/// is known at once (the API answers with it when the import takes long).
pub fn begin_import(store: &Store, report: &Report) -> Recorder {
    let (digest, seed) = identity(report);
    Recorder::begin(store, report.kind(), digest, seed, RunStatus::Running)
}

/// Writes the report file, the cases and how the run ended. A failure marks the run
/// `error` (with why) rather than leaving it `running`.
pub async fn record_import(r: &Recorder, report: &Report, json: String) -> Result<(), StoreError> {
    let recorded = record_all(r, report, json).await;
    if let Err(e) = &recorded {
        let why = format!("the import failed: {e}");
        r.fail(RunStatus::Error, Some(why)).await?;
    }
    recorded
}

async fn record_all(r: &Recorder, report: &Report, json: String) -> Result<(), StoreError> {
    let store = r.store().clone();
    let (id, file) = (r.id.clone(), report.kind().report_file());
    // The text first, and then dropped: it is as large as the body.
    let path = store
        .blocking(move |store| {
            let path = store.run_dir(&id)?.join(file);
            crate::files::write_private(&path, json.as_bytes())
                .map_err(|e| StoreError::io(&path, e))?;
            Ok(path)
        })
        .await?;
    for chunk in cases(report).chunks(CHUNK) {
        for (phase, case) in chunk {
            store.case_finished(&r.id, r.case_record(*phase, case));
        }
        store.flush().await?;
    }
    r.finish(report, &[(ReportFormat::Json, path)]).await
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
