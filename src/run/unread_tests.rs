use super::*;
use crate::run::CaseCheck;

fn case(scenario: &str, error: &str, verdict: Verdict) -> CaseResult {
    CaseResult {
        error: Some(error.into()),
        checks: vec![CaseCheck {
            invariant: "answers".into(),
            verdict,
        }],
        ..CaseResult::blank(scenario, "hi")
    }
}

fn cell(scenario: &str, verdict: Verdict) -> CellResult {
    CellResult {
        invariant: "answers".into(),
        scenario: scenario.into(),
        severity: crate::config::Severity::Medium,
        verdict,
        cases: 1,
        consistency: None,
        outcomes: Default::default(),
    }
}

const WHY: &str = "config error: agent.response_path `$.output` is in none of the agent's 2 \
                   answer(s); their top-level keys are `result`: set agent.response_path to \
                   where the answer is";

#[test]
fn cells_failed_only_by_unread_answers_are_not_tested() {
    let unread = r#"path `$.output` not found in response: {"result": "x"}"#;
    let fail = || Verdict::Fail("no answer".into());
    let mut cases = vec![
        case("calm", unread, fail()),
        case("slow", "timed out after 30 s", fail()),
    ];
    let mut cells = vec![cell("calm", fail()), cell("slow", fail())];
    not_judged(WHY, &mut cases, &mut cells, &mut []);
    let want = format!("not judged: {WHY}");
    assert_eq!(
        cells[0].verdict,
        Verdict::NotTested(want.clone()),
        "?, not ✗"
    );
    assert_eq!(cases[0].checks[0].verdict, Verdict::NotTested(want));
    assert_eq!(cases[0].not_judged.as_deref(), Some(WHY));
    // A case the agent failed itself (no answer in time) stays the agent's failure.
    assert_eq!((&cells[1].verdict, &cases[1].not_judged), (&fail(), &None));
}
