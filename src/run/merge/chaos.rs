//! A chaos-only run's shards, merged: their cases judged again by the code a whole chaos
//! run ends with (`Sent::judged`, `chaos_report`).

use super::pieces::{Piece, all_of, check, part_of};
use crate::config::Config;
use crate::run::chaos::{ChaosReport, Sent, chaos_report, scenario};
use crate::run::{Report, RunContext};

/// Merges `shards` (chaos reports) of a chaos-only run of `config`.
pub(super) async fn merge(
    ctx: &RunContext,
    config: &Config,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<ChaosReport, String> {
    let mut pieces = vec![];
    for (file, r) in all_of(shards, "chaos", super::pick::chaos)? {
        pieces.push(piece(file, r)?);
    }
    merge_pieces(ctx, config, pieces, allow_partial).await
}

/// Merges the chaos `pieces` (of chaos runs, or of `ci`'s chaos phase).
pub(super) async fn merge_pieces(
    ctx: &RunContext,
    config: &Config,
    pieces: Vec<Piece>,
    allow_partial: bool,
) -> Result<ChaosReport, String> {
    let name = pieces
        .first()
        .map(|p| p.label.1.clone())
        .unwrap_or_default();
    let profile = (name != "chaos").then_some(name.as_str());
    let (name, rules) = crate::run::execute::chaos_to_inject(config, profile)?;
    let golden = &config.golden_prompts;
    let checked = check(ctx, golden, pieces, allow_partial)?;
    let run = scenario(&name, &rules, &config.invariants);
    let outcome = checked
        .outcomes(ctx, &[run], golden, None)?
        .pop()
        .unwrap_or_default();
    let sent = Sent::merged(outcome, checked.seen());
    let judged = sent.judged(ctx, &name, &config.invariants).await;
    let mut report = chaos_report(ctx, &name, judged);
    report.warnings = checked.warnings(&report.warnings);
    report.run = checked.run_info();
    if let Some(j) = checked.incomplete(golden.len()) {
        report.judgement = j;
    }
    Ok(report)
}

pub(super) fn piece(file: String, r: ChaosReport) -> Result<Piece, String> {
    let part = part_of(&file, r.shard)?;
    Ok(Piece {
        config_digest: r.config_digest,
        seed: r.seed,
        label: ("chaos", r.chaos),
        run: r.run,
        part,
        cases: r.cases,
        coverage: r.coverage,
        warnings: r.warnings,
        file,
    })
}
