use super::*;
use crate::otel::testing::{otel, text};

fn case(scenario: &str, trace: &str, verdict: &str) -> CaseSpan {
    CaseSpan {
        trace: Some(trace.into()),
        scenario: scenario.into(),
        phase: "contract".into(),
        trial: Some(2),
        verdict: verdict.into(),
        outcome: Some("recovered".into()),
        not_judged: None,
        started_ms: 1_000,
        ended_ms: 2_000,
    }
}

fn run() -> RunSpan {
    RunSpan {
        kind: "contract".into(),
        name: Some("otel".into()),
        started_ms: 500,
        ended_ms: 3_000,
        verdict: "fail".into(),
        score: Some(50.0),
        seed: 3,
        cases: vec![
            case("no-chaos", "trace-a", "passed"),
            case("llm-429", "trace-b", "failed"),
        ],
    }
}

#[tokio::test]
async fn a_run_is_a_root_span_its_cases_its_children_and_its_end_tells_the_hold() {
    let (otel, mut rx, _) = otel(9);
    otel.begin_run(3).end(run()).await;
    let mut spans = vec![];
    let mut end = None;
    while let Ok(item) = rx.try_recv() {
        match item {
            Item::Span(s) => spans.push(*s),
            Item::EndRun(e) => end = Some(*e),
            Item::Exchange(_) | Item::Flush(_) => panic!("unexpected item"),
        }
    }
    let [a, b, root] = spans.as_slice() else {
        panic!("{spans:?}")
    };
    assert_eq!(root.name, "contract otel");
    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert!(matches!(root.status, Status::Error { .. }), "a failed run");
    for (key, want) in [
        ("flakestorm.run.kind", "contract"),
        ("flakestorm.run.name", "otel"),
        ("flakestorm.run.verdict", "fail"),
        ("flakestorm.run.seed", "3"),
    ] {
        assert_eq!(text(root, key).as_deref(), Some(want), "{key}");
    }
    for c in [a, b] {
        assert_eq!(c.parent_span_id, root.span_context.span_id());
        assert_eq!(c.span_context.trace_id(), root.span_context.trace_id());
        assert_eq!(text(c, "flakestorm.case.seed").as_deref(), Some("3"));
        assert_eq!(
            text(c, "flakestorm.case.outcome").as_deref(),
            Some("recovered")
        );
    }
    assert_eq!(a.name, "case no-chaos");
    assert_eq!(a.status, Status::Unset);
    assert_eq!(
        text(b, "flakestorm.case.verdict").as_deref(),
        Some("failed")
    );
    assert!(matches!(b.status, Status::Error { .. }));
    let end = end.expect("the hold is told");
    assert!(end.last && end.seed == 3);
    assert_eq!(end.run.as_ref(), Some(&root.span_context));
    let told: Vec<(&str, SpanId)> = end
        .cases
        .iter()
        .map(|(t, c)| (t.as_str(), c.span_id()))
        .collect();
    let want = [
        ("trace-a", a.span_context.span_id()),
        ("trace-b", b.span_context.span_id()),
    ];
    assert_eq!(told, want);
}

#[tokio::test]
async fn exchanges_are_held_only_for_a_case_while_a_run_is_under_way() {
    let (otel, mut rx, _) = otel(9);
    let ex = |trace: Option<&str>| {
        let (mut e, _) = crate::otel::testing::chat();
        e.trace_id = trace.map(str::to_string);
        std::sync::Arc::new(e)
    };
    let hold_of = |item: Item| {
        let Item::Exchange(p) = item else {
            panic!("not an exchange")
        };
        (p.hold, p.parent.is_some(), p.seed)
    };
    otel.exchange(ex(Some("t")), None, true);
    assert_eq!(
        hold_of(rx.try_recv().unwrap()),
        (false, false, 9),
        "no run: at once"
    );
    let scope = otel.begin_run(3);
    otel.exchange(ex(Some("t")), None, true);
    assert_eq!(hold_of(rx.try_recv().unwrap()), (true, true, 3));
    otel.exchange(ex(Some("someone-elses")), None, false);
    assert_eq!(
        hold_of(rx.try_recv().unwrap()),
        (false, true, 3),
        "under the run, at once"
    );
    drop(scope);
    let Ok(Item::EndRun(end)) = rx.try_recv() else {
        panic!("a dropped run tells the hold")
    };
    assert!(end.last && end.run.is_none() && end.cases.is_empty());
}
