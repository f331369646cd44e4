//! A contract case judged as it ends, for the run's followers (the web view's matrix
//! filling in cell by cell, docs/web.md): each invariant whose cell holds the case,
//! checked on that case alone, with the cell's number of cases. Provisional: a cell's
//! verdict is made at the end (`judge`) with what only the end knows (the chaos coverage,
//! the embeddings, the outcome classes against the baseline), and a contract case is
//! stored `Unscored` whatever these say. Pure.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::cases::CaseResult;
use super::{CaseChecks, Judged, Provisional, RunContext, SoFar};
use crate::chaos::spec::CompiledChaos;
use crate::checks::{Invariant, Similarity, Verdict};
use crate::config::{ContractSpec, Scenario, When};

/// One cell's check on one case as it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSoFar {
    pub invariant: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The cases the cell holds in this run (its prompts the run or shard runs, times the
    /// trials): its progress is the cases of it that have ended, out of these.
    pub of: usize,
}

/// An invariant's cells, as a case is judged on them.
struct Column {
    id: String,
    when: When,
    invariant: Invariant,
    prompts: HashSet<String>,
    of: usize,
}

/// What of a contract run's plan (`contract::Plan`) the cells are judged with.
pub(super) struct Matrix<'a> {
    pub contract: &'a ContractSpec,
    /// Each invariant's prompts, by index.
    pub prompts_of: &'a [Vec<String>],
    /// Every prompt of the run, in order (a shard runs some of them).
    pub prompts: &'a [String],
    pub scenarios: &'a [Scenario],
}

/// The contract's provisional judge: `Unscored` cases that carry their cells' checks.
pub(super) fn judge(ctx: &RunContext, plan: Matrix<'_>) -> Provisional {
    let trials = ctx.scoring.trials.indices().len();
    let columns: Vec<Column> = plan
        .contract
        .invariants
        .iter()
        .zip(plan.prompts_of)
        .filter_map(|(spec, prompts)| {
            // `Plan::of` compiled each one already: none fails here.
            let invariant = Invariant::compile(&spec.invariant).ok()?;
            let prompts: HashSet<String> = prompts.iter().cloned().collect();
            let ran = plan
                .prompts
                .iter()
                .filter(|p| prompts.contains(*p) && ctx.shard.is_none_or(|s| s.holds(p)))
                .count();
            Some(Column {
                id: spec.id.clone(),
                when: spec.when,
                invariant,
                prompts,
                of: ran * trials,
            })
        })
        .collect();
    let chaos: HashMap<String, CompiledChaos> = plan
        .scenarios
        .iter()
        .map(|s| (s.name.clone(), s.chaos.clone()))
        .collect();
    // The embeddings are measured when the run ends: until then a similarity check says so.
    let similarity = match ctx.scoring.embedder {
        None => Similarity::Lexical,
        Some(_) => Similarity::Unavailable("the embeddings are measured when the run ends".into()),
    };
    let baselines: Mutex<HashMap<String, String>> = Mutex::default();
    Arc::new(move |c: &CaseResult| {
        let mut known = baselines.lock().unwrap_or_else(|p| p.into_inner());
        let Some(chaos) = chaos.get(&c.scenario) else {
            // The `(baseline)` pass: judged by no cell, its answers the baselines.
            record(&mut known, c);
            return Judged::unscored();
        };
        let baseline = known.get(&c.prompt).map(String::as_str);
        let cells = columns
            .iter()
            .filter(|col| col.prompts.contains(&c.prompt))
            .map(|col| CellSoFar {
                invariant: col.id.clone(),
                verdict: check(col, chaos, c, baseline, &similarity),
                of: col.of,
            })
            .collect();
        if chaos.is_empty() {
            record(&mut known, c);
        }
        Judged {
            so_far: SoFar::Unscored,
            checks: CaseChecks::Cells(cells),
        }
    })
}

/// How `c` stands in `col`'s cell of a scenario under `chaos`, on its own.
fn check(
    col: &Column,
    chaos: &CompiledChaos,
    c: &CaseResult,
    baseline: Option<&str>,
    similarity: &Similarity,
) -> Verdict {
    if !col.when.holds_under(chaos) {
        return Verdict::NotApplicable(format!("when: {} does not hold here", col.when));
    }
    if let Some(why) = &c.not_judged {
        return Verdict::NotTested(why.clone());
    }
    super::when::gate(col.when, c).unwrap_or_else(|| {
        let view = super::judge::view(c, baseline, similarity, None);
        col.invariant.check(&view)
    })
}

/// A no-chaos answer becomes its prompt's baseline (the first one, as `judge` keeps).
fn record(known: &mut HashMap<String, String>, c: &CaseResult) {
    super::judge::record_baselines(std::slice::from_ref(c), known);
}
