//! Class words, fault families, shares that add up to 100 and evidence lines.

use std::collections::BTreeMap;

use strum::IntoEnumIterator;

use super::*;
use crate::exchange::Provider;

fn counts(pairs: &[(OutcomeClass, usize)]) -> BTreeMap<OutcomeClass, usize> {
    pairs.iter().copied().collect()
}

#[test]
fn shares_are_whole_percents_of_the_five_classes_that_add_up_to_100() {
    use OutcomeClass::*;
    let thirds = counts(&[(Fabricated, 1), (DegradedHonest, 1), (Recovered, 1)]);
    assert_eq!(shares(&thirds), [0, 34, 0, 33, 33]);
    // The classes counted apart take no share.
    let apart = counts(&[
        (Recovered, 3),
        (Propagated, 1),
        (NotExercised, 6),
        (Undecided, 2),
    ]);
    assert_eq!(shares(&apart), [25, 0, 0, 0, 75]);
    assert_eq!(shares(&counts(&[(NotExercised, 4)])), [0; 5]);
    for n in 1..=40_usize {
        for k in 0..=n {
            let c = counts(&[(Failed, k), (Recovered, n - k), (Fabricated, n % 3)]);
            assert_eq!(shares(&c).iter().sum::<u32>(), 100, "{c:?}");
        }
    }
}

#[test]
fn counts_read_worst_first_in_words() {
    use OutcomeClass::*;
    let c = counts(&[
        (Recovered, 3),
        (Fabricated, 1),
        (NotExercised, 2),
        (Failed, 0),
    ]);
    assert_eq!(counted(&c), "1 fabricated, 3 recovered, 2 not exercised");
    assert_eq!(word(DegradedHonest), "degraded honest");
}

#[test]
fn every_fault_has_a_family_and_timeouts_and_empties_go_by_their_target() {
    let tool = Target::Tool {
        name: "get_weather".into(),
    };
    let llm = Target::Llm {
        provider: Provider::Openai,
    };
    for k in FaultKind::iter() {
        // Exhaustive in `Family::of`; this only shows each lands somewhere sensible.
        let f = Family::of(k, Some(&tool));
        assert!(!f.label().is_empty(), "{k}");
    }
    assert_eq!(
        Family::of(FaultKind::Timeout, Some(&tool)),
        Family::ToolErrors
    );
    assert_eq!(
        Family::of(FaultKind::Timeout, Some(&llm)),
        Family::LlmErrors
    );
    assert_eq!(Family::of(FaultKind::Empty, Some(&tool)), Family::ToolData);
    assert_eq!(Family::of(FaultKind::Empty, Some(&llm)), Family::LlmOutput);
    assert_eq!(Family::of(FaultKind::Empty, None), Family::LlmOutput);
    assert_eq!(Family::of(FaultKind::RateLimit, None), Family::LlmErrors);
    assert_eq!(Family::of(FaultKind::Slow, None), Family::Latency);
    assert_eq!(
        Family::of(FaultKind::McpRugPull, None),
        Family::ContextAttacks
    );
    assert_eq!(Family::of(FaultKind::Unknown, None), Family::Other);
}

#[test]
fn each_piece_of_evidence_reads_as_one_line_with_its_exchanges() {
    let planted = Evidence::Planted {
        exchange: 3,
        path: "$.temp_c".into(),
        original: Some("21.4".into()),
        planted: "37.9".into(),
        reached: vec![
            Reach {
                place: Place::Model,
                exchange: Some(4),
            },
            Reach {
                place: Place::Answer,
                exchange: None,
            },
        ],
    };
    let lines = [
        planted,
        Evidence::Fault {
            rule: "weather-503".into(),
            mode: FaultKind::Error,
            exchange: 2,
        },
        Evidence::Unsupported {
            fact: "25°C".into(),
            why: "in no response of the case".into(),
        },
        Evidence::Carried {
            fact: "21.4°C".into(),
            exchange: 7,
            tool: "get_weather".into(),
        },
        Evidence::Lacks {
            facts: vec!["21.4°C".into(), "Sunny".into()],
        },
        Evidence::Bypassed {
            tool: "get_weather".into(),
            exchange: 1,
        },
        Evidence::NoAnswer {
            why: "agent answered HTTP 500".into(),
        },
    ]
    .map(|e| plain(&evidence(&e)));
    assert_eq!(
        lines,
        [
            "planted `37.9` for `21.4` at `$.temp_c` (exchange 3) → reached: the model \
             (exchange 4), the answer",
            "fault `weather-503` (error) on exchange 2",
            "unsupported fact `25°C`: in no response of the case",
            "carried `21.4°C` from `get_weather` (exchange 7)",
            "lacks what the no-chaos answer took from its tools: `21.4°C`, `Sunny`",
            "the model asked for `get_weather` (exchange 1) and no call to it crossed the proxy",
            "no answer: agent answered HTTP 500",
        ]
    );
}

#[test]
fn values_from_the_agent_are_inert_and_cut() {
    let e = Evidence::Unsupported {
        fact: format!("\u{1b}[31m{}", "9".repeat(200)),
        why: "x\u{7}".into(),
    };
    let pieces = evidence(&e);
    assert!(pieces[1].code);
    assert_eq!(pieces[1].text.chars().count(), 80);
    assert!(!plain(&pieces).contains('\u{1b}'));
    assert!(plain(&pieces).ends_with("x\u{2407}"));
}
