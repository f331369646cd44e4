//! `when` decided per case, never per scenario (design.md §6): a check whose `when` names
//! faults (`tool_faults_active`, `llm_faults_active`, `any_chaos_active`) applies only to
//! the cases those faults reached, by the journal's record of each case's exchanges; a
//! case whose call the model asked for went around the proxy is not tested. The scenario
//! decides first (`judge::applies`: a `when` that cannot hold under its chaos), the case
//! then. A case whose traffic was not attributed is left to the scenario. Pure.

use super::cases::CaseResult;
use crate::checks::Verdict;
use crate::config::When;
use crate::exchange::Target;

/// Why `when` does not hold for `case` (not applicable: the faults it names missed the
/// case; not tested: a call went around the proxy), or `None` when it holds.
pub(super) fn gate(when: When, case: &CaseResult) -> Option<Verdict> {
    let what = match when {
        When::Always | When::NoChaos => return None,
        When::ToolFaultsActive => "tool fault",
        When::LlmFaultsActive => "LLM fault",
        When::AnyChaosActive => "fault or attack",
    };
    let traffic = case.traffic.as_deref()?;
    if let Some(o) = case.outcome.as_ref().filter(|o| o.bypassed) {
        return Some(Verdict::NotTested(o.reason.clone()));
    }
    let met = traffic.iter().any(|e| {
        let llm = matches!(e.target, Target::Llm { .. });
        let fault = e.fault.as_ref().is_some_and(|f| f.applied);
        match when {
            When::ToolFaultsActive => fault && !llm,
            When::LlmFaultsActive => fault && llm,
            When::AnyChaosActive => fault || e.attacks.iter().any(|a| a.applied),
            When::Always | When::NoChaos => true,
        }
    });
    if met {
        return None;
    }
    let why = case
        .outcome
        .as_ref()
        .map_or("none of its calls met one", |o| o.reason.as_str());
    Some(Verdict::NotApplicable(format!(
        "when: {when}: no {what} reached this case ({why})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests_support::exchange;
    use crate::exchange::{FaultKind, FaultRecord, Provider};
    use std::sync::Arc;

    fn case(tool_fault: bool, llm_fault: bool) -> CaseResult {
        let record = |on: bool| {
            on.then(|| FaultRecord {
                rule: "r".into(),
                mode: FaultKind::Error,
                applied: true,
                note: None,
            })
        };
        let mut tool = exchange(Target::Tool { name: "t".into() }, "http://t/").build();
        tool.fault = record(tool_fault);
        let url = "http://l/v1/chat/completions";
        let mut llm = exchange(
            Target::Llm {
                provider: Provider::Openai,
            },
            url,
        )
        .build();
        llm.fault = record(llm_fault);
        CaseResult {
            traffic: Some(vec![Arc::new(tool), Arc::new(llm)]),
            ..CaseResult::for_test("q", Some("a"))
        }
    }

    /// A tool-fault check applies to the cases a tool fault reached, not to the others of
    /// the same scenario; an unattributed case is left to the scenario.
    #[test]
    fn when_holds_for_the_cases_the_faults_reached() {
        let hit = case(true, false);
        let missed = case(false, false);
        assert_eq!(gate(When::ToolFaultsActive, &hit), None);
        let v = gate(When::ToolFaultsActive, &missed).unwrap();
        assert!(
            matches!(&v, Verdict::NotApplicable(why) if why.contains("no tool fault reached this case")),
            "{v:?}"
        );
        assert!(gate(When::LlmFaultsActive, &hit).is_some());
        assert_eq!(gate(When::LlmFaultsActive, &case(false, true)), None);
        assert_eq!(gate(When::AnyChaosActive, &hit), None);
        assert_eq!(gate(When::Always, &missed), None);
        let unattributed = CaseResult::for_test("q", Some("a"));
        assert_eq!(gate(When::ToolFaultsActive, &unattributed), None);
    }
}
