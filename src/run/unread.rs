//! Answers read at the wrong place: when `agent.response_path` is in none of the agent's
//! answers (the config's error, `verdict::Seen::response_path`), a case whose only fault is
//! that its answer was not found there judged nothing of the agent. Its checks are not
//! tested (`?`) with that reason, never failed (`✗`), and so are the cells whose every
//! failure came from such cases: the JSON, every report format and the terminal then say
//! the same. Touches no verdict of a case the agent itself failed (a timeout, a 500).
//! Chaos and mutation runs' prompts likewise (`prompts_not_judged`).

use super::CellResult;
use super::cases::CaseResult;
use super::coverage::Coverage;
use super::sent::PromptRun;
use crate::agent::InvokeError;
use crate::checks::Verdict;

/// Marks the cases `why` (the config error) left without an answer as not judged, and
/// their checks and the cells they alone failed as not tested.
pub(super) fn not_judged(
    why: &str,
    cases: &mut [CaseResult],
    cells: &mut [CellResult],
    coverage: &mut [Coverage],
) {
    let because = format!("not judged: {why}");
    for case in cases.iter_mut().filter(|c| unread(c)) {
        let judged = case.not_judged.is_none();
        case.not_judged = Some(why.to_string());
        for check in &mut case.checks {
            if matches!(check.verdict, Verdict::Fail(_) | Verdict::Pass(_)) {
                check.verdict = Verdict::NotTested(because.clone());
            }
        }
        if let Some(c) = coverage.iter_mut().find(|c| c.scenario == case.scenario)
            && judged
        {
            c.judged = c.judged.saturating_sub(1);
        }
    }
    for cell in cells.iter_mut() {
        let left = |fail: bool| {
            cases.iter().any(|c| {
                c.scenario == cell.scenario
                    && c.checks.iter().any(|k| {
                        k.invariant == cell.invariant
                            && match fail {
                                true => matches!(k.verdict, Verdict::Fail(_)),
                                false => k.verdict.judged(),
                            }
                    })
            })
        };
        // A pass needs a case still judged; a failure, a case the agent failed.
        let stands = match cell.verdict {
            Verdict::Fail(_) => left(true),
            Verdict::Pass(_) => left(false),
            Verdict::NotApplicable(_) | Verdict::NotTested(_) => true,
        };
        if !stands {
            cell.verdict = Verdict::NotTested(because.clone());
        }
    }
}

/// Chaos and mutation runs: the prompts (one per case, in order) whose case `why` (the
/// config error) left without an answer are not judged, their checks not tested with
/// that reason, as a prompt not judged for any other reason is (`Sent::judged`).
pub(super) fn prompts_not_judged(why: &str, run: &mut PromptRun) {
    let PromptRun {
        cases,
        prompts,
        coverage,
        ..
    } = run;
    for (case, p) in cases.iter_mut().zip(prompts.iter_mut()) {
        if !unread(case) {
            continue;
        }
        if let Some(c) = coverage.iter_mut().find(|c| c.scenario == case.scenario)
            && case.not_judged.is_none()
        {
            c.judged = c.judged.saturating_sub(1);
        }
        case.not_judged = Some(why.to_string());
        (p.judged, p.passed) = (false, false);
        for check in &mut p.checks {
            if matches!(check, Verdict::Fail(_) | Verdict::Pass(_)) {
                *check = Verdict::NotTested(why.to_string());
            }
        }
    }
}

/// A case with no answer because its answer was not at `agent.response_path`.
fn unread(c: &CaseResult) -> bool {
    // The wording `InvokeError::PathNotFound` gives, whatever the path.
    let probe = InvokeError::PathNotFound {
        path: String::new(),
        head: String::new(),
        keys: vec![],
    }
    .to_string();
    let (before, after) = probe.split_once("``").unwrap_or((&probe, ""));
    let after = after.trim_end_matches(": ").trim_end();
    c.answer.is_none()
        && c.error
            .as_deref()
            .is_some_and(|e| e.starts_with(before) && e.contains(after))
}

#[cfg(test)]
#[path = "unread_tests.rs"]
mod tests;
