//! A mutation run's shards, merged: the plan made again from the config and the seed
//! (rule-based variants only: shards refuse model-written ones, which differ from shard to
//! shard), the text variants' cases judged again (`Sent::judged`), the wire cases taken as
//! their shards judged them (each is judged alone), and all paired and scored by
//! `assemble`, the code a whole mutation run ends with.

use super::pieces::{Piece, all_of, check, part_of};
use crate::chaos::spec::CompiledChaos;
use crate::checks::Verdict;
use crate::config::Config;
use crate::mutate::model;
use crate::run::mutation::plan_mutations;
use crate::run::mutation_report::{Made, MutationReport, Wired, assemble, is_wire, key, texts_of};
use crate::run::sent::{Sent, scenario};
use crate::run::wire_cases::WireCase;
use crate::run::{Report, Scoring};

/// Merges `shards` (mutation reports) of a mutation run of `config`.
pub(super) async fn merge(
    ctx: &Scoring,
    config: &Config,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<MutationReport, String> {
    let (pieces, wire, chaos) = pieces_of(shards)?;
    let (golden, spec, invariants) = (
        &config.golden_prompts,
        &config.mutations,
        &config.invariants,
    );
    let fixed = config.advanced.seed.is_some();
    let written = model::generate(None, spec, golden, ctx.seed, fixed, 1).await;
    let plan = plan_mutations(spec, golden, ctx.seed, &written);
    let checked = check(ctx, golden, pieces, allow_partial)?;
    let rules = match &chaos {
        Some(name) => {
            let profile = (name != "chaos").then_some(name.as_str());
            crate::run::execute::chaos_to_inject(config, profile)?.1
        }
        None => CompiledChaos::default(),
    };
    let name = chaos.as_deref().unwrap_or("mutations");
    let (texts, _) = texts_of(&plan, golden);
    let seen = checked.seen();
    let run = match texts.is_empty() {
        true => None,
        false => {
            let run = scenario(name, &rules, invariants);
            let outcome = checked
                .outcomes(&[run], &texts, None)?
                .pop()
                .unwrap_or_default();
            let sent = Sent::merged(outcome, seen.clone());
            Some(sent.judged(ctx, name, invariants).await)
        }
    };
    let made = Made {
        spec,
        plan: &plan,
        written: &written,
        golden,
    };
    // The variants of the golden prompts the given shards ran: with a shard missing
    // (`--allow-partial`), the others pair with their own verdicts, not the next ones'.
    let ran: std::collections::HashSet<&String> =
        checked.pieces.iter().flat_map(|p| &p.part.units).collect();
    let held = |v: &crate::mutate::Variant| ran.contains(&golden[v.prompt_index]);
    let mut report = assemble(ctx, &seen, chaos.as_deref(), &made, run, wire, &held);
    report.warnings = checked.warnings(&report.warnings);
    report.run = checked.run_info();
    if let Some(j) = checked.incomplete(golden.len()) {
        report.judgement = j;
    }
    Ok(report)
}

/// Each shard's piece, the wire cases as their shards judged them, and the chaos the run
/// ran under.
fn pieces_of(shards: Vec<(String, Report)>) -> Result<(Vec<Piece>, Wired, Option<String>), String> {
    let mut pieces = vec![];
    let mut wire = Wired::new();
    let mut chaos: Option<String> = None;
    for (file, r) in all_of(shards, "mutation", super::pick::mutation)? {
        for (case, m) in r.cases_with_mutants().filter(|(_, m)| is_wire(&m.variant)) {
            let verdict = m.checks.first().cloned();
            let verdict = verdict.unwrap_or_else(|| Verdict::NotTested("no verdict".into()));
            let case = WireCase {
                sent: m.variant.text.clone(),
                verdict,
                case: case.clone(),
            };
            wire.entry(key(&m.variant)).or_default().push(case);
        }
        chaos = r.chaos.clone();
        let part = part_of(&file, r.shard)?;
        pieces.push(Piece {
            config_digest: r.config_digest,
            seed: r.seed,
            label: ("chaos", r.chaos.unwrap_or_else(|| "none".into())),
            run: r.run,
            part,
            cases: r.cases,
            coverage: r.coverage,
            warnings: r.warnings,
            file,
        });
    }
    Ok((pieces, wire, chaos))
}
