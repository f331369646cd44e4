//! A contract run's shards, merged: their cases judged again by `judge_matrix`, the code a
//! whole contract run ends with.

use super::pieces::{Piece, all_of, check, part_of};
use crate::config::Config;
use crate::run::contract::{ContractReport, Plan, judge_matrix};
use crate::run::{Report, Scoring};

/// Merges `shards` (contract reports) of a run of `config`'s contract.
pub(super) async fn merge(
    ctx: &Scoring,
    config: &Config,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<ContractReport, String> {
    let mut pieces = vec![];
    for (file, r) in all_of(shards, "contract", super::pick::contract)? {
        pieces.push(piece(file, r)?);
    }
    merge_pieces(ctx, config, pieces, allow_partial).await
}

/// Merges the contract `pieces` (of contract runs, or of `ci`'s contract phase).
pub(super) async fn merge_pieces(
    ctx: &Scoring,
    config: &Config,
    pieces: Vec<Piece>,
    allow_partial: bool,
) -> Result<ContractReport, String> {
    let Some(contract) = &config.contract else {
        return Err("the config has no `contract:` section".into());
    };
    let plan = Plan::of(contract, &config.golden_prompts).map_err(|e| e.to_string())?;
    let checked = check(ctx, &plan.prompts, pieces, allow_partial)?;
    let mut runs = plan.runs();
    // The `(baseline)` pass some shards added for outcome classes (docs/outcomes.md).
    let extra = !plan.baseline && checked.has_scenario(crate::run::classes::BASELINE);
    if extra {
        runs.push(crate::run::classes::baseline_run(true));
    }
    let optional = extra.then_some(crate::run::classes::BASELINE);
    let outcomes = checked.outcomes(&runs, &plan.prompts, optional)?;
    let mut report = judge_matrix(ctx, &plan, outcomes, &checked.seen()).await;
    report.warnings = checked.warnings(&report.warnings);
    report.run = checked.run_info();
    if let Some(j) = checked.incomplete(plan.prompts.len()) {
        report.judgement = j;
        report.score.passed = false;
    }
    Ok(report)
}

pub(super) fn piece(file: String, r: ContractReport) -> Result<Piece, String> {
    let part = part_of(&file, r.shard)?;
    Ok(Piece {
        config_digest: r.config_digest,
        seed: r.seed,
        label: ("contract", r.contract),
        run: r.run,
        part,
        cases: r.cases,
        coverage: r.coverage,
        warnings: r.warnings,
        file,
    })
}
