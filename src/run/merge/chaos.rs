//! A chaos-only run's shards, merged: their cases judged again by the code a whole chaos
//! run ends with (`Sent::judged`, `chaos_report`).

use super::pieces::{Piece, all_of, check, part_of};
use crate::config::Config;
use crate::run::chaos::{ChaosReport, add_baseline, chaos_report};
use crate::run::classes::BASELINE;
use crate::run::sent::{Sent, scenario};
use crate::run::{Report, Scoring};

/// Merges `shards` (chaos reports) of a chaos-only run of `config`.
pub(super) async fn merge(
    ctx: &Scoring,
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
    ctx: &Scoring,
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
    // The `(baseline)` pass shards ran for outcome classes (docs/outcomes.md), if any did.
    let base = checked.has_scenario(BASELINE);
    let mut runs = vec![run];
    runs.extend(base.then(|| crate::run::classes::baseline_run(true)));
    let optional = base.then_some(BASELINE);
    let mut outcomes = checked.outcomes(&runs, golden, optional)?.into_iter();
    let seen = checked.seen();
    let sent = Sent::merged(outcomes.next().unwrap_or_default(), seen.clone());
    let judged = sent.judged(ctx, &name, &config.invariants).await;
    let mut report = chaos_report(ctx, &name, judged, &seen);
    if let Some(o) = outcomes.next() {
        add_baseline(ctx, &mut report, o);
    }
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
        // The `(baseline)` pass's cases go with the rest: a merge sorts them by scenario.
        cases: r.cases.into_iter().chain(r.baseline).collect(),
        coverage: r.coverage,
        warnings: r.warnings,
        file,
    })
}
