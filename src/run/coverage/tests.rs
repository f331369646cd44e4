use super::*;

/// A tool fault rule that matched nothing and never fired.
pub(super) fn rule() -> RuleStats {
    RuleStats {
        rule: "search-down".into(),
        kind: RuleKind::ToolFault,
        mode: crate::exchange::FaultKind::Error,
        matched: 0,
        fired: 0,
        scope: "calls to tool `web_search`".into(),
        tool: Some("web_search".into()),
        match_url: None,
        probability: 1.0,
        after_calls: 0,
        times: None,
    }
}

fn silent_scenario(before: Before) -> Coverage {
    let cases = [CaseResult {
        traffic: Some(vec![]),
        ..CaseResult::for_test("q", Some("a"))
    }];
    of("s", &cases, &[], vec![rule()], &Declared::default(), before)
}

/// With no traffic before it either, the agent is not using the proxy; with some, it
/// sent nothing in this scenario alone, and the reason says what that suggests.
#[test]
fn a_silent_scenario_says_whether_the_agent_sent_anything_earlier() {
    let never = silent_scenario(Before::default());
    let why = never.silent.clone().unwrap();
    assert!(
        why.contains("the agent is not using flakestorm's proxy"),
        "{why}"
    );
    assert_eq!(never.rules[0].why_not.as_deref(), Some(why.as_str()));
    let cached = silent_scenario(Before {
        exchanges: 4,
        resets: false,
    });
    let why = cached.silent.clone().unwrap();
    assert!(
        why.starts_with(
            "the agent sent nothing through the proxy in this scenario but did earlier in \
             the run (4 request(s))"
        ) && why.contains("set `agent.reset_endpoint`")
            && !why.contains("not using"),
        "{why}"
    );
    assert_eq!(cached.rules[0].why_not, cached.silent);
    let reset = silent_scenario(Before {
        exchanges: 4,
        resets: true,
    });
    let why = reset.silent.unwrap();
    assert!(why.contains("a cache its reset does not clear"), "{why}");
    // Under header attribution, calls that lost the trace id are no case's, but they
    // crossed the proxy: not silence, though the scenario has no exchange of its own.
    let untraced = CaseResult {
        window: (7, 9),
        ..CaseResult::for_test("q", Some("a"))
    };
    let lost = of(
        "s",
        &[untraced],
        &[],
        vec![],
        &Declared::default(),
        Before::default(),
    );
    assert_eq!(lost.silent, None);
    let heard = of(
        "s",
        &[CaseResult::for_test("q", Some("a"))],
        &[Arc::new(
            crate::exchange::tests_support::exchange(Target::Other, "http://x/").build(),
        )],
        vec![rule()],
        &Declared::default(),
        Before::default(),
    );
    assert_eq!(heard.silent, None);
}
