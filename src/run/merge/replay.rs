//! A replay run's shards, merged: each session was judged alone in its shard, as in a whole
//! run; their sessions, cases and coverage are put back in the run's order and the score
//! and verdict made by `replay_report`, the code a whole replay run ends with.

use std::collections::HashMap;

use super::pieces::{Piece, all_of, check, part_of};
use crate::config::Config;
use crate::run::replay::{Parts, ReplayReport, replay_report};
use crate::run::replay_setup;
use crate::run::{Report, Scoring};

/// Merges `shards` (replay reports) of a replay run of `config`'s `replays.sessions`.
pub(super) async fn merge(
    ctx: &Scoring,
    config: &Config,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<ReplayReport, String> {
    let mut pieces = vec![];
    let mut sessions = HashMap::new();
    for (file, r) in all_of(shards, "replay", super::pick::replay)? {
        sessions.insert(file.clone(), r.sessions);
        let part = part_of(&file, r.shard)?;
        pieces.push(Piece {
            config_digest: r.config_digest,
            seed: r.seed,
            label: ("on_miss", format!("{:?}", r.on_miss)),
            run: r.run,
            part,
            cases: r.cases,
            coverage: r.coverage,
            warnings: r.warnings,
            file,
        });
    }
    let units: Vec<String> = replay_setup::sessions(&config.replays.sessions)
        .into_iter()
        .map(|r| r.id)
        .collect();
    let checked = check(ctx, &units, pieces, allow_partial)?;
    let mut parts = Parts {
        cases: vec![],
        sessions: vec![],
        coverage: vec![],
        warnings: vec![],
    };
    // In the run's order: each session with its cases (one per trial) and their coverage.
    for unit in dedup(&units) {
        for p in &checked.pieces {
            let mine = sessions.get(&p.file).into_iter().flatten();
            for s in mine.filter(|s| s.id == *unit) {
                let mut s = s.clone();
                let first = parts.cases.len();
                let of = |id: &str| id == unit.as_str();
                parts
                    .cases
                    .extend(p.cases.iter().filter(|c| of(&c.scenario)).cloned());
                parts
                    .coverage
                    .extend(p.coverage.iter().filter(|c| of(&c.scenario)).cloned());
                // Its case (the trial it stands for) keeps its place among its own.
                let theirs = p.cases.iter().position(|c| of(&c.scenario));
                s.case = match (s.case, theirs) {
                    (Some(old), Some(start)) => Some(first + old.saturating_sub(start)),
                    _ => None,
                };
                parts.sessions.push(s);
            }
        }
    }
    let mut report = replay_report(ctx, config.replays.on_miss, parts, &checked.seen());
    report.warnings = checked.warnings(&report.warnings);
    report.run = checked.run_info();
    if let Some(j) = checked.incomplete(units.len()) {
        report.judgement = j;
    }
    Ok(report)
}

fn dedup(units: &[String]) -> Vec<&String> {
    let mut out: Vec<&String> = vec![];
    for u in units {
        if !out.contains(&u) {
            out.push(u);
        }
    }
    out
}
