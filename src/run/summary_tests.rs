use super::*;

#[test]
fn each_scenario_with_chaos_counts_its_classes_and_names_its_worst_case() {
    let json = include_str!("../../tests/fixtures/reports/outcomes.json");
    let super::super::Report::Contract(r) = super::super::Report::from_json(json).unwrap() else {
        panic!("a contract report")
    };
    let text = summary(&r, false);
    let at = text
        .find("what the agent did with faults:")
        .expect("the block");
    let lines: Vec<&str> = text[at..].lines().take(9).collect();
    assert_eq!(
        lines[1],
        "  weather-503-x2: 2 fabricated, 2 failed, 4 degraded honest, 2 recovered"
    );
    assert!(lines[2].starts_with(
        "    fabricated \"What is the weather in Oslo?\": the answer states `25°C`, found"
    ));
    assert_eq!(
        lines[3],
        "  weather-corrupt: 2 propagated, 2 fabricated, 2 failed, 4 degraded honest"
    );
    assert!(lines[4].starts_with(
        "    propagated \"What is the weather in Rome?\": the planted value `Upid` (for \
         `Rome` at $.city, exchange"
    ));
    assert_eq!(
        lines[5],
        "  weather-flaky: 2 fabricated, 1 failed, 3 degraded honest, 1 recovered, 3 not \
         exercised"
    );
    // No line for the scenario without chaos.
    assert!(!lines.iter().any(|l| l.starts_with("  no-chaos")));
}

#[test]
fn agent_text_cannot_drive_the_terminal() {
    assert_eq!(shown("a\u{1b}[31mred\u{7}", 20), "a [31mred ");
    assert_eq!(shown("abcdef", 3), "abc…");
}
