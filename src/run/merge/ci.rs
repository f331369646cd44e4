//! A `ci` run's shards, merged: its contract and chaos phases merged as those runs are,
//! its mutation and replay phases taken from shard 1 (which ran them whole), and the
//! phases combined by `combine`, the code a whole `ci` ends with.

use super::pieces::{all_of, not_a_shard};
use crate::config::Config;
use crate::run::ci::ci_skips;
use crate::run::{CiReport, Report, RunKind, Scoring, combine};

/// The seed `ci`'s phases ran with.
pub(super) fn seed(r: &CiReport) -> u64 {
    let phases = [
        r.contract.as_ref().map(|c| c.seed),
        r.chaos.as_ref().map(|c| c.seed),
        r.mutation.as_ref().map(|m| m.seed),
    ];
    phases.into_iter().flatten().next().unwrap_or(0)
}

/// Merges `shards` (ci reports) of a `ci` run of `config`.
pub(super) async fn merge(
    ctx: &Scoring,
    config: &Config,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<CiReport, String> {
    let mut reports: Vec<(String, CiReport)> = vec![];
    for (file, r) in all_of(shards, "ci", super::pick::ci)? {
        let Some(shard) = r.shard else {
            return Err(not_a_shard(&file));
        };
        if shard.k == 1
            && reports
                .iter()
                .any(|(_, r)| r.shard.is_some_and(|s| s.k == 1))
        {
            return Err(format!("shard {shard} is given twice: {file} and another"));
        }
        reports.push((file, *r));
    }
    let first = reports.first().map(|(_, r)| r.shard);
    let n = first.flatten().map_or(0, |s| s.n);
    // Shard 1 ran the phases that do not split; without it they are missing.
    let one = reports
        .iter()
        .find(|(_, r)| r.shard.is_some_and(|s| s.k == 1));
    let mutation = one.and_then(|(_, r)| r.mutation.clone());
    let replay = one.and_then(|(_, r)| r.replay.clone());
    let mut contract_pieces = vec![];
    let mut chaos_pieces = vec![];
    for (file, r) in reports.iter().cloned() {
        let phase = |p: &str| format!("{file} ({p} phase)");
        if let Some(c) = r.contract {
            contract_pieces.push(super::contract::piece(phase("contract"), c)?);
        }
        if let Some(c) = r.chaos {
            chaos_pieces.push(super::chaos::piece(phase("chaos"), c)?);
        }
    }
    let contract = match contract_pieces.is_empty() {
        true => None,
        false => {
            Some(super::contract::merge_pieces(ctx, config, contract_pieces, allow_partial).await?)
        }
    };
    let chaos = match chaos_pieces.is_empty() {
        true => None,
        false => Some(super::chaos::merge_pieces(ctx, config, chaos_pieces, allow_partial).await?),
    };
    let mut skipped = ci_skips(config);
    if one.is_none() {
        let why = format!("shard 1/{n}, which runs it whole, is missing");
        skipped.extend([(RunKind::Mutation, why.clone()), (RunKind::Replay, why)]);
    }
    let mut report = combine(
        &config.scoring,
        mutation,
        contract,
        chaos,
        replay,
        &skipped,
        ctx.min_score,
    );
    report.run = reports
        .iter()
        .filter_map(|(_, r)| r.run.clone())
        .min_by_key(|i| i.started_at_ms)
        .map(|mut first| {
            let end = reports
                .iter()
                .filter_map(|(_, r)| r.run.as_ref())
                .map(|i| i.started_at_ms as f64 + i.duration_ms)
                .fold(0.0, f64::max);
            first.duration_ms = end - first.started_at_ms as f64;
            first
        });
    Ok(report)
}
