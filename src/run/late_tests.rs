use super::*;
use crate::exchange::{Target, tests_support};

/// A case on `instance` that started at `start` and answered at `answered` (ms), with
/// after-answer calls at those delays (ids from `first`).
fn case(instance: usize, start: u64, answered: u64, delays: &[u64], first: u64) -> CaseResult {
    let mut c = CaseResult::for_test(&format!("p{start}"), Some("ok"));
    c.instance = Some(instance);
    c.times = (start, answered);
    c.trace_id = Some(Arc::from(format!("t{start}")));
    let traffic = delays
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let e = tests_support::exchange(Target::Other, "http://mail.example/send")
                .id(first + i as u64)
                .timed(answered + d, 10.0)
                .build();
            Arc::new(e)
        })
        .collect();
    c.traffic = Some(traffic);
    c.after_answer = (first..first + delays.len() as u64).collect();
    c.after_answer_ms = delays.to_vec();
    c
}

const SETTLE: Duration = Duration::from_millis(500);

#[test]
fn nothing_is_said_without_late_calls() {
    let a = case(1, 0, 100, &[], 1);
    let b = case(1, 700, 800, &[], 1);
    assert!(say(&[&a, &b], SETTLE, true).is_empty());
}

#[test]
fn the_latest_late_call_is_said_per_instance_and_overall() {
    let a = case(1, 0, 100, &[300], 1);
    let b = case(2, 0, 100, &[800], 2);
    let said = say(&[&a, &b], SETTLE, true);
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].contains("the latest began 800 ms after")
            && said[0].contains("instance 1: 300 ms, instance 2: 800 ms"),
        "{}",
        said[0]
    );
}

#[test]
fn a_late_call_close_to_its_instances_reuse_is_warned_of() {
    // Answered at 100, the instance used again at 1100 (a 1000 ms gap): a call at 850 ms
    // is within 20 % of it; one at 700 ms is not.
    let a = case(1, 0, 100, &[850], 7);
    let b = case(1, 1100, 1200, &[], 9);
    let said = say(&[&a, &b], SETTLE, true);
    let warned = said
        .iter()
        .find(|s| s.contains("within 20 %"))
        .expect("warned");
    assert!(warned.contains("exchange 7"), "{warned}");
    assert!(warned.contains("case `s` / `p0`"), "{warned}");
    assert!(warned.contains("(1000 ms)"), "{warned}");
    assert!(warned.contains("settle_ms: 900 would catch it"), "{warned}");
    let a = case(1, 0, 100, &[700], 7);
    assert!(
        !say(&[&a, &b], SETTLE, true)
            .iter()
            .any(|s| s.contains("within 20 %"))
    );
}

#[test]
fn a_call_later_than_settle_ms_without_spares_is_warned_of_with_the_cases_at_risk() {
    // Instance 1 ran two cases back to back (reused 600 ms after the first answer); the
    // last case on instance 2 caught an email 800 ms after its answer.
    let a = case(1, 0, 100, &[], 1);
    let b = case(1, 700, 800, &[], 2);
    let c = case(2, 0, 100, &[800], 3);
    let said = say(&[&a, &b, &c], SETTLE, false);
    let warned = said
        .iter()
        .find(|s| s.contains("no idle spare instance"))
        .unwrap_or_else(|| panic!("{said:#?}"));
    assert!(warned.contains("exchange 3"), "{warned}");
    assert!(warned.contains("1 cases ran on an instance"), "{warned}");
    assert!(warned.contains("settle_ms: 900 would catch it"), "{warned}");
    // With spares the idle gap followed it: no warning.
    assert!(
        !say(&[&a, &b, &c], SETTLE, true)
            .iter()
            .any(|s| s.contains("no idle spare instance"))
    );
}

#[test]
fn without_spares_a_reused_instance_is_warned_of_even_when_no_late_call_was_seen() {
    // A late call counted in the next case looks like that case's own: the run cannot see
    // it, so the warning must not wait for one it saw (issue #50: never a silent verdict
    // on the wrong case).
    let a = case(1, 0, 100, &[], 1);
    let b = case(1, 600, 700, &[], 2);
    let said = say(&[&a, &b], SETTLE, false);
    let warned = said
        .iter()
        .find(|s| s.contains("no idle spare instance"))
        .unwrap_or_else(|| panic!("{said:#?}"));
    assert!(
        warned.contains("saw no call made after an answer"),
        "{warned}"
    );
    // One within the window is named as the latest seen.
    let a = case(1, 0, 100, &[200], 5);
    let said = say(&[&a, &b], SETTLE, false);
    let warned = said
        .iter()
        .find(|s| s.contains("no idle spare instance"))
        .unwrap_or_else(|| panic!("{said:#?}"));
    assert!(
        warned.contains("exchange 5") && warned.contains("200 ms"),
        "{warned}"
    );
    // Nothing to say when no instance was used twice, or nothing settles.
    let c = case(2, 0, 100, &[], 3);
    assert!(
        say(&[&a, &c], SETTLE, false)
            .iter()
            .all(|s| !s.contains("spare"))
    );
    assert!(
        say(&[&a, &b], Duration::ZERO, false)
            .iter()
            .all(|s| !s.contains("spare"))
    );
}

#[test]
fn a_late_llm_call_is_counted_in_its_cases_usage() {
    // The case spent 100 + 10 tokens before its answer; a late LLM call spent 900 + 90 more.
    // `max_tokens` and `max_cost` judge the case's usage: it must hold both calls.
    let llm = |id, at, input, output| {
        let target = Target::Llm {
            provider: crate::exchange::Provider::Openai,
        };
        let e = tests_support::exchange(target, "https://api.openai.com/v1/chat/completions")
            .id(id)
            .timed(at, 10.0)
            .usage(Some(input), Some(output), "gpt-4o-mini")
            .build();
        Arc::new(e)
    };
    let pricing = Pricing::default();
    let mut c = case(1, 0, 100, &[], 1);
    let before = vec![llm(1, 50, 100, 10)];
    c.usage = Some(CaseUsage::of(&before, &pricing));
    c.traffic = Some(before);
    c.window = (1, 1);
    // The one recorded as the case ended is not counted twice.
    assert!(add_late(
        &mut c,
        vec![llm(1, 50, 100, 10), llm(2, 400, 900, 90)],
        &pricing
    ));
    let spent = &c.usage.as_ref().expect("usage").spent;
    assert_eq!(spent.llm_calls, 2, "{spent:?}");
    assert_eq!(
        (spent.input_tokens, spent.output_tokens),
        (Some(1000), Some(100))
    );
    assert_eq!(c.after_answer, vec![2]);
    // Nothing new: nothing changes.
    assert!(!add_late(&mut c, vec![llm(2, 400, 900, 90)], &pricing));
    assert_eq!(c.usage.as_ref().unwrap().spent.llm_calls, 2);
}
