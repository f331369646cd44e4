//! `output.tapes`: each case's exchanges (from the journal, with the bodies it kept) written
//! as a HAR tape in `<report stem>.tapes/` beside the report — the failed cases (default),
//! all, or none. A case failed when one of its checks failed: a contract case's own checks,
//! a chaos prompt's or a mutant's verdict, a replay session's. `failed_cases` is what
//! `replay export` reads back from a saved report, and `tape_file` where it finds the tape.

use std::path::{Path, PathBuf};

use super::{CaseResult, Report, RunVerdict};
use crate::checks::Verdict;
use crate::config::Tapes;
use crate::journal::Journal;

/// A case of a report, with what it is called in tape and session names.
pub struct NamedCase<'a> {
    /// `contract-3`, `chaos-0`, `replay-1`… (the phase's kind and the case's index).
    pub id: String,
    pub case: &'a CaseResult,
    /// Why it failed (empty for a case that passed or was not judged).
    pub failed: Vec<String>,
    /// The contract it was judged with, when it was a contract run.
    pub contract: Option<String>,
}

/// The folder a report's tapes go to: `reports/contract.json` → `reports/contract.tapes/`.
pub fn tapes_dir(report: &Path) -> PathBuf {
    let stem = report
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    report.with_file_name(format!("{stem}.tapes"))
}

/// The tape of case `id` of the report at `report`.
pub fn tape_file(report: &Path, id: &str) -> PathBuf {
    tapes_dir(report).join(format!("{id}.har"))
}

/// Every case in the report (a ci report's phases' too), failed or not.
pub fn cases(report: &Report) -> Vec<NamedCase<'_>> {
    let mut out = vec![];
    collect(report, &mut out);
    out
}

fn named<'a>(kind: &str, i: usize, case: &'a CaseResult, failed: Vec<String>) -> NamedCase<'a> {
    NamedCase {
        id: format!("{kind}-{i}"),
        case,
        failed,
        contract: None,
    }
}

fn collect<'a>(report: &'a Report, out: &mut Vec<NamedCase<'a>>) {
    match report {
        Report::Contract(r) => contract(r, out),
        Report::Chaos(r) => chaos(r, out),
        Report::Mutation(r) => mutation(r, out),
        Report::Replay(r) => replay(r, out),
        Report::Ci(ci) => {
            if let Some(r) = &ci.mutation {
                mutation(r, out);
            }
            if let Some(r) = &ci.contract {
                contract(r, out);
            }
            if let Some(r) = &ci.chaos {
                chaos(r, out);
            }
            if let Some(r) = &ci.replay {
                replay(r, out);
            }
        }
    }
}

fn contract<'a>(r: &'a super::ContractReport, out: &mut Vec<NamedCase<'a>>) {
    out.extend(r.cases.iter().enumerate().map(|(i, c)| {
        let failed = c
            .checks
            .iter()
            .filter_map(|k| match &k.verdict {
                Verdict::Fail(why) => Some(format!("`{}`: {why}", k.invariant)),
                Verdict::Pass(_) | Verdict::NotApplicable(_) | Verdict::NotTested(_) => None,
            })
            .collect();
        NamedCase {
            contract: Some(r.contract.clone()),
            ..named("contract", i, c, failed)
        }
    }));
}

/// Each case with its own verdict, by position: two prompts of the same text are two
/// cases, each failed or not on its own.
fn chaos<'a>(r: &'a super::ChaosReport, out: &mut Vec<NamedCase<'a>>) {
    out.extend(
        r.cases
            .iter()
            .zip(&r.prompts)
            .enumerate()
            .map(|(i, (c, p))| {
                let failed = match p.judged && !p.passed {
                    true => fails(&p.checks),
                    false => vec![],
                };
                named("chaos", i, c, failed)
            }),
    );
}

fn mutation<'a>(r: &'a super::MutationReport, out: &mut Vec<NamedCase<'a>>) {
    out.extend(r.cases_with_mutants().enumerate().map(|(i, (c, m))| {
        let failed = match m.judged && !m.passed {
            true => fails(&m.checks),
            false => vec![],
        };
        named("mutation", i, c, failed)
    }));
}

fn replay<'a>(r: &'a super::ReplayReport, out: &mut Vec<NamedCase<'a>>) {
    out.extend(r.cases.iter().enumerate().map(|(i, c)| {
        let session = r.sessions.iter().find(|s| s.case == Some(i));
        let failed = session
            .filter(|s| s.verdict == RunVerdict::Fail)
            .map(|s| s.reasons.clone())
            .unwrap_or_default();
        // The session's contract, unless it was judged with the top-level invariants.
        let contract = session
            .and_then(|s| s.contract.clone())
            .filter(|c| c != "invariants");
        NamedCase {
            contract,
            ..named("replay", i, c, failed)
        }
    }));
}

fn fails(checks: &[Verdict]) -> Vec<String> {
    checks
        .iter()
        .filter_map(|v| match v {
            Verdict::Fail(why) => Some(why.clone()),
            Verdict::Pass(_) | Verdict::NotApplicable(_) | Verdict::NotTested(_) => None,
        })
        .collect()
}

/// Writes the tapes `policy` asks for; the files written, and what could not be (a case
/// whose traffic is empty gets none: said once, with their count).
pub fn write(
    report: &Report,
    journal: &Journal,
    policy: Tapes,
    report_path: &Path,
) -> (Vec<PathBuf>, Vec<String>) {
    let (mut written, mut failed) = (vec![], vec![]);
    if policy == Tapes::None {
        return (written, failed);
    }
    // Cases no exchange of which crossed the proxy: an empty tape would replay nothing.
    let mut bare = 0;
    for c in cases(report) {
        if policy == Tapes::Failed && c.failed.is_empty() {
            continue;
        }
        let Some(traffic) = &c.case.traffic else {
            failed.push(format!(
                "case {}: no tape: its exchanges could not be told from other cases'",
                c.id
            ));
            continue;
        };
        if traffic.is_empty() {
            bare += 1;
            continue;
        }
        let case = format!("{} ({})", c.id, c.case.scenario);
        let har = crate::recording::tape_of(journal, traffic, Some(&case));
        let path = tape_file(report_path, &c.id);
        match crate::tape::write::save(&har, &path) {
            Ok(()) => written.push(path),
            Err(e) => failed.push(format!("could not write {}: {e}", path.display())),
        }
    }
    if bare > 0 {
        failed.push(format!(
            "tapes: none for {bare} case(s) that made no request through the proxy (an empty \
             tape would replay nothing)"
        ));
    }
    (written, failed)
}
