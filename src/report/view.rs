//! The report as every format reads it: the run's sections (one per phase that ran, in
//! run order), each with its cells and its cases, and each case with the checks that
//! judged it. Formats render this, never the terminal summary. Built from `run::Report`
//! alone, so a saved report renders exactly as a fresh one.

use crate::checks::Verdict;
use crate::run::{
    CaseResult, CellResult, Coverage, Judgement, Report, RunInfo, RunKind, RunVerdict,
};

/// A whole report, ready to render.
pub struct Overview<'a> {
    /// `contract`, `chaos`, `mutation` or `ci`.
    pub kind: &'static str,
    pub verdict: RunVerdict,
    /// The run's score (`ci`: the overall), 0–100.
    pub score: f64,
    pub min_score: f64,
    /// Why it is not a pass.
    pub reasons: &'a [String],
    pub config_digest: Option<&'a str>,
    pub info: Option<&'a RunInfo>,
    pub sections: Vec<Section<'a>>,
    /// `ci`: every phase, its weight, and why it was skipped.
    pub phases: Vec<PhaseLine<'a>>,
}

pub struct PhaseLine<'a> {
    pub name: &'static str,
    pub score: Option<f64>,
    pub weight: f64,
    pub verdict: Option<RunVerdict>,
    pub skipped: Option<&'a str>,
}

/// One phase's results.
pub struct Section<'a> {
    /// `contract`, `chaos` or `mutation`.
    pub phase: RunKind,
    /// The contract's name, the chaos spec's, or the chaos a mutation run ran under.
    pub name: Option<&'a str>,
    pub seed: u64,
    pub score: f64,
    pub judgement: &'a Judgement,
    pub min_score: f64,
    /// Contract runs: the matrix, scenarios in run order and invariants in config order.
    pub cells: &'a [CellResult],
    pub scenarios: Vec<&'a str>,
    pub invariants: Vec<&'a str>,
    pub cases: Vec<CaseView<'a>>,
    pub coverage: &'a [Coverage],
    pub warnings: &'a [String],
    /// The tokens and cost of the agent's LLM calls (contract, chaos and mutation runs).
    pub usage: Option<&'a crate::cost::RunUsage>,
    /// Replay runs: sessions that could not run (a bad file, a contract that resolves to
    /// nothing), by id, with why. They have no case; every format still lists them.
    pub unrun: Vec<(&'a str, String)>,
    /// How the run measured its trials (the top-level report's; `ci` shares its own with
    /// every phase), for which pass^k its figures show.
    pub trials: Option<&'a crate::run::TrialsInfo>,
    /// Chaos and mutation runs with trials: each prompt's or variant's (the report's
    /// `trials`), which their formats list as a contract's cells.
    pub units: &'a [crate::run::CaseTrials],
}

/// One case and the checks that judged it.
pub struct CaseView<'a> {
    pub case: &'a CaseResult,
    /// Mutation runs: the variant's type, and the golden prompt it was made from.
    pub mutation: Option<(String, &'a str)>,
    /// Label (the invariant's id, or `check N` for top-level invariants) and verdict.
    pub checks: Vec<(String, &'a Verdict)>,
    /// None when it was not judged.
    pub passed: Option<bool>,
}

impl CaseView<'_> {
    /// A short id, unique within its section, for links (`contract-3`).
    pub fn anchor(phase: RunKind, index: usize) -> String {
        format!("{phase}-{index}")
    }
}

impl Section<'_> {
    /// The cell of `invariant` under `scenario`.
    pub fn cell(&self, invariant: &str, scenario: &str) -> Option<&CellResult> {
        self.cells
            .iter()
            .find(|c| c.invariant == invariant && c.scenario == scenario)
    }
}

fn numbered(checks: &[Verdict]) -> Vec<(String, &Verdict)> {
    checks
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("check {}", i + 1), v))
        .collect()
}

fn contract(r: &crate::run::ContractReport) -> Section<'_> {
    let mut invariants: Vec<&str> = vec![];
    for c in &r.cells {
        if !invariants.contains(&c.invariant.as_str()) {
            invariants.push(&c.invariant);
        }
    }
    let cases = r
        .cases
        .iter()
        .map(|case| {
            let checks: Vec<(String, &Verdict)> = case
                .checks
                .iter()
                .map(|c| (c.invariant.clone(), &c.verdict))
                .collect();
            let judged = checks.iter().any(|(_, v)| v.judged());
            let failed = checks.iter().any(|(_, v)| matches!(v, Verdict::Fail(_)));
            CaseView {
                case,
                mutation: None,
                checks,
                passed: judged.then_some(!failed),
            }
        })
        .collect();
    Section {
        phase: RunKind::Contract,
        name: Some(&r.contract),
        seed: r.seed,
        score: r.score.value,
        judgement: &r.judgement,
        min_score: r.min_score,
        cells: &r.cells,
        scenarios: r.scenarios.iter().map(String::as_str).collect(),
        invariants,
        cases,
        coverage: &r.coverage,
        warnings: &r.warnings,
        unrun: vec![],
        usage: r.usage.as_deref(),
        trials: None,
        units: &[],
    }
}

fn chaos(r: &crate::run::ChaosReport) -> Section<'_> {
    // One verdict per case, in case order (run::chaos judges each case into one).
    let cases = r
        .cases
        .iter()
        .zip(&r.prompts)
        .map(|(case, p)| CaseView {
            case,
            mutation: None,
            checks: numbered(&p.checks),
            passed: p.judged.then_some(p.passed),
        })
        .collect();
    Section {
        phase: RunKind::Chaos,
        name: Some(&r.chaos),
        seed: r.seed,
        score: r.score,
        judgement: &r.judgement,
        min_score: r.min_score,
        cells: &[],
        scenarios: vec![],
        invariants: vec![],
        cases,
        coverage: &r.coverage,
        warnings: &r.warnings,
        unrun: vec![],
        usage: r.usage.as_deref(),
        trials: None,
        units: &r.trials,
    }
}

fn mutation(r: &crate::run::MutationReport) -> Section<'_> {
    let cases = r
        .cases_with_mutants()
        .map(|(case, m)| CaseView {
            case,
            mutation: Some((m.variant.kind.to_string(), m.original.as_str())),
            checks: numbered(&m.checks),
            passed: m.judged.then_some(m.passed),
        })
        .collect();
    Section {
        phase: RunKind::Mutation,
        name: r.chaos.as_deref(),
        seed: r.seed,
        score: r.score,
        judgement: &r.judgement,
        min_score: r.min_score,
        cells: &[],
        scenarios: vec![],
        invariants: vec![],
        cases,
        coverage: &r.coverage,
        warnings: &r.warnings,
        unrun: vec![],
        usage: r.usage.as_deref(),
        trials: None,
        units: &r.trials,
    }
}

/// A replay run: each session's case with its checks (no cells), and the sessions that
/// could not run.
fn replay(r: &crate::run::ReplayReport) -> Section<'_> {
    let cases = r
        .sessions
        .iter()
        .filter_map(|s| {
            let case = r.cases.get(s.case?)?;
            let judged = s.verdict.judged();
            Some(CaseView {
                case,
                mutation: None,
                checks: s
                    .checks
                    .iter()
                    .map(|c| (c.invariant.clone(), &c.verdict))
                    .collect(),
                passed: judged.then_some(s.verdict.passed()),
            })
        })
        .collect();
    let unrun = r
        .sessions
        .iter()
        .filter(|s| s.case.is_none())
        .map(|s| (s.id.as_str(), s.reasons.join("; ")))
        .collect();
    Section {
        phase: RunKind::Replay,
        name: None,
        seed: r.seed,
        score: r.score,
        judgement: &r.judgement,
        min_score: r.min_score,
        cells: &[],
        scenarios: vec![],
        invariants: vec![],
        cases,
        coverage: &r.coverage,
        warnings: &r.warnings,
        unrun,
        usage: None,
        trials: None,
        units: &[],
    }
}

/// The report's overview and sections.
pub fn overview(report: &Report) -> Overview<'_> {
    let (kind, config_digest, sections, phases) = match report {
        Report::Contract(r) => ("contract", &r.config_digest, vec![contract(r)], vec![]),
        Report::Chaos(r) => ("chaos", &r.config_digest, vec![chaos(r)], vec![]),
        Report::Mutation(r) => ("mutation", &r.config_digest, vec![mutation(r)], vec![]),
        Report::Replay(r) => ("replay", &r.config_digest, vec![replay(r)], vec![]),
        Report::Ci(r) => {
            // The order `ci` runs them in.
            let mut sections = vec![];
            sections.extend(r.mutation.as_ref().map(mutation));
            sections.extend(r.contract.as_ref().map(contract));
            sections.extend(r.chaos.as_ref().map(chaos));
            sections.extend(r.replay.as_ref().map(replay));
            let phases = r
                .phases
                .iter()
                .map(|p| PhaseLine {
                    name: p.name.as_str(),
                    score: p.score,
                    weight: p.weight,
                    verdict: p.verdict,
                    skipped: p.skipped.as_deref(),
                })
                .collect();
            ("ci", &r.config_digest, sections, phases)
        }
    };
    let judgement = report.judgement();
    let mut sections = sections;
    for s in &mut sections {
        s.trials = report.info().and_then(|i| i.trials.as_ref());
    }
    Overview {
        kind,
        verdict: judgement.verdict,
        score: report.score(),
        min_score: min_score(report),
        reasons: &judgement.reasons,
        config_digest: config_digest.as_deref(),
        info: report.info(),
        sections,
        phases,
    }
}

fn min_score(report: &Report) -> f64 {
    match report {
        Report::Contract(r) => r.min_score,
        Report::Chaos(r) => r.min_score,
        Report::Mutation(r) => r.min_score,
        Report::Replay(r) => r.min_score,
        Report::Ci(r) => r.min_score,
    }
}
