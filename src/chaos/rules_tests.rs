//! `times`: a rule fires at most N times per installed rule set, then lets calls through;
//! the draws of the calls before the limit are the ones the rule has without it.

use serde_json::json;

use super::*;
use crate::chaos::Engine;

fn rules(v: serde_json::Value) -> RuleSet {
    let spec: ChaosSpec = serde_json::from_value(v).unwrap();
    RuleSet::new(&CompiledChaos::try_from(&spec).unwrap())
}

fn fires(r: &RuleSet, n: usize, seed: u64) -> Vec<bool> {
    (0..n)
        .map(|_| {
            r.decide("http://t/", &Target::Other, None, seed)
                .fault
                .is_some()
        })
        .collect()
}

#[test]
fn times_fails_the_first_calls_then_lets_them_through() {
    let r = rules(json!({"tool_faults": [{"tool": "*", "mode": "error", "times": 2}]}));
    assert_eq!(fires(&r, 5, 1), [true, true, false, false, false]);
    let stats = &r.stats()[0];
    assert_eq!((stats.matched, stats.fired, stats.times), (5, 2, Some(2)));
    let second = rules(
        json!({"tool_faults": [{"tool": "*", "mode": "error", "after_calls": 1, "times": 1}]}),
    );
    assert_eq!(
        fires(&second, 4, 1),
        [false, true, false, false],
        "only the second call"
    );
}

#[test]
fn times_changes_no_draw_before_its_limit() {
    let plain = rules(json!({"tool_faults": [{"tool": "*", "mode": "error", "probability": 0.5}]}));
    let limited = rules(
        json!({"tool_faults": [{"tool": "*", "mode": "error", "probability": 0.5, "times": 3}]}),
    );
    let all = fires(&plain, 40, 9);
    let capped = fires(&limited, 40, 9);
    let third = all
        .iter()
        .enumerate()
        .filter(|(_, f)| **f)
        .nth(2)
        .unwrap()
        .0;
    assert_eq!(
        capped[..=third],
        all[..=third],
        "the same calls fire up to the limit"
    );
    assert!(capped[third + 1..].iter().all(|f| !f), "and none after it");
    assert_eq!(capped.iter().filter(|f| **f).count(), 3);
}

#[test]
fn a_rule_past_its_times_offers_the_call_to_the_next() {
    let r = rules(json!({"tool_faults": [
        {"tool": "*", "match_url": "http://t/*", "mode": "error", "error_code": 503, "times": 1},
        {"tool": "*", "mode": "error", "error_code": 500}
    ]}));
    let code = |r: &RuleSet| match r.decide("http://t/", &Target::Other, None, 0).fault {
        Some(Fired {
            what: Fault::Tool(crate::chaos::spec::ToolMode::Error { error_code, .. }),
            ..
        }) => error_code,
        Some(_) | None => 0,
    };
    assert_eq!([code(&r), code(&r)], [503, 500]);
}

/// Concurrent calls of one case claim the limit atomically: never more than `times`.
#[test]
fn concurrent_calls_never_fire_more_than_times() {
    for times in [1u64, 5, 37] {
        let r = rules(json!({"tool_faults": [{"tool": "*", "mode": "error", "times": times}]}));
        let fired = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let n = fires(&r, 200, 3).into_iter().filter(|f| *f).count();
                    fired.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                });
            }
        });
        assert_eq!(fired.into_inner(), times);
        assert_eq!(r.stats()[0].fired, times);
        assert_eq!(r.stats()[0].matched, 1600);
    }
}

#[test]
fn each_trace_id_has_its_own_times() {
    let e = Engine::new(4);
    let spec: ChaosSpec = serde_json::from_value(
        json!({"tool_faults": [{"tool": "*", "mode": "error", "error_code": 503, "times": 2}]}),
    )
    .unwrap();
    let compiled = CompiledChaos::try_from(&spec).unwrap();
    let a = e.install_for_trace("aaaa", &compiled, None);
    let b = e.install_for_trace("bbbb", &compiled, None);
    let fire = |t| {
        e.decide("http://t/", &Target::Other, Some(t))
            .fault
            .is_some()
    };
    let got: Vec<bool> = ["aaaa", "bbbb", "aaaa", "aaaa", "bbbb", "bbbb", "aaaa"]
        .into_iter()
        .map(fire)
        .collect();
    assert_eq!(got, [true, true, true, false, true, false, false]);
    let all = crate::chaos::sum_stats(&[a.rules().stats(), b.rules().stats()]);
    assert_eq!(
        (all[0].matched, all[0].fired, all[0].times),
        (7, 4, Some(2))
    );
}

/// A rug pull with `times`: at most that many listings changed per rule set, then the
/// server's own list again.
#[test]
fn a_rug_pull_changes_at_most_times_listings() {
    let r = rules(json!({"context_attacks": [{"type": "mcp_rug_pull", "times": 2}]}));
    let call = crate::exchange::McpCall {
        transport: None,
        method: crate::exchange::TOOLS_LIST.into(),
        tool: None,
        id: None,
        session: Some("s1".into()),
        detected: false,
        note: None,
    };
    let changed: Vec<bool> = (0..5)
        .map(|_| {
            let d = r.decide("http://t/", &Target::Other, Some(&call), 0);
            !d.attacks.is_empty()
        })
        .collect();
    assert_eq!(changed, [false, true, true, false, false]);
}
