//! Outcome classes on the page, from the fixed contract report
//! tests/fixtures/reports/outcomes.json (a weather agent of five behaviours under a tool
//! error, corrupted tool data, a flaky timeout and LLM 429s, two trials each): the golden
//! page, each case's badge, reason and evidence, the timeline marks, the resilience
//! profile's numbers, the heatmap's distributions, and evidence text made inert.

use super::super::profile;
use crate::report::golden;
use crate::report::view::overview;
use crate::run::{OutcomeEvidence, Report};

fn fixture() -> Report {
    golden::fixture("outcomes.json")
}

fn page(report: &Report) -> String {
    super::super::render(&overview(report)).expect("the page renders")
}

/// The part of `html` from the case whose summary holds `prompt` under `scenario`'s group.
fn case<'a>(html: &'a str, scenario: &str, prompt: &str) -> &'a str {
    let group = html
        .find(&format!("<summary><b>{scenario}</b>"))
        .unwrap_or_else(|| panic!("no group {scenario}"));
    let at = group + html[group..].find(prompt).expect("the case");
    let end = at + html[at..].find("</div></details>").expect("the case's end");
    &html[at..end]
}

#[test]
fn the_outcomes_fixture_renders_as_its_golden_page() {
    golden::check_of(
        "outcomes.json",
        crate::config::ReportFormat::Html,
        "outcomes.html",
    );
}

#[test]
fn each_case_shows_its_class_with_the_reason_and_the_evidence() {
    let html = page(&fixture());
    let rome = case(&html, "weather-corrupt", "What is the weather in Rome?");
    assert!(rome.contains("<span class=\"oc oc-propagated\">propagated</span>"));
    assert!(rome.contains("the planted value `Upid` (for `Rome` at $.city, exchange "));
    assert!(rome.contains(
        "<li>planted <code>Upid</code> for <code>Rome</code> at <code>$.city</code> (exchange "
    ));
    assert!(rome.contains("→ reached: the model (exchange "));
    assert!(rome.contains("), the answer</li>"));
    let paris = case(&html, "weather-503-x2", "What is the weather in Paris?");
    assert!(paris.contains("<span class=\"oc oc-recovered\">recovered</span>"));
    assert!(
        paris.contains("<li>carried <code>21.4°C</code> from <code>get_weather</code> (exchange ")
    );
    assert!(paris.contains("<li>fault <code>tool_faults[0]</code> (error) on exchange "));
    let oslo = case(&html, "weather-503-x2", "What is the weather in Oslo?");
    assert!(oslo.contains("<span class=\"oc oc-fabricated\">fabricated</span>"));
    assert!(oslo.contains("<li>unsupported fact <code>25°C</code>: found in none of the 0 good"));
    let bern = case(&html, "weather-503-x2", "What is the weather in Bern?");
    assert!(bern.contains("<span class=\"oc oc-failed\">failed</span>"));
    assert!(bern.contains("<li>no answer: agent answered HTTP 500"));
    let lima = case(&html, "weather-503-x2", "What is the weather in Lima?");
    assert!(lima.contains("<span class=\"oc oc-degraded_honest\">degraded honest</span>"));
    assert!(lima.contains("<li>lacks what the no-chaos answer took from its tools: <code>"));
    let skipped = case(&html, "weather-flaky", "What is the weather in Rome?");
    assert!(skipped.contains("<span class=\"oc oc-not_exercised\">not exercised</span>"));
    // No-chaos cases have no class.
    let calm = case(&html, "no-chaos", "What is the weather in Paris?");
    assert!(!calm.contains("class=\"oc "));
}

#[test]
fn the_calls_the_evidence_names_are_marked_on_the_timeline() {
    let html = page(&fixture());
    let rome = case(&html, "weather-corrupt", "What is the weather in Rome?");
    // The corrupted tool response, and the LLM request that carried its values back.
    assert!(rome.contains("<rect class=\"fault mk\""));
    assert!(rome.contains("<g class=\"mk\"><title>◆ planted Upid for Rome at $.city"));
    assert!(rome.contains("<g class=\"mk\"><title>▲ carries Upid (planted in exchange "));
    assert!(
        rome.contains("<text x=\"459\""),
        "details moved past one glyph"
    );
    assert!(rome.contains("◆ a fault planted a value in this response · ▲ a planted value"));
    let paris = case(&html, "weather-503-x2", "What is the weather in Paris?");
    assert!(paris.contains("<title>✓ gave 21.4°C, which the answer carries\n✓ gave 70.5°F"));
    let calm = case(&html, "no-chaos", "What is the weather in Paris?");
    assert!(!calm.contains("class=\"mk\""));
}

#[test]
fn the_profile_gives_each_scenario_and_fault_family_shares_that_add_up() {
    let report = fixture();
    let o = overview(&report);
    let p = profile::of(&o.sections[0]).expect("a profile");
    let row = |rows: &[profile::Row], name: &str| {
        let r = rows.iter().find(|r| r.name == name).expect(name);
        let counts: Vec<usize> = r.shares.iter().map(|s| s.count).collect();
        let pct: Vec<u32> = r.shares.iter().map(|s| s.pct).collect();
        (counts, pct, r.not_exercised, r.undecided)
    };
    let names: Vec<&str> = p.scenarios.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "weather-503-x2",
            "weather-corrupt",
            "weather-flaky",
            "llm-429-x2"
        ]
    );
    assert_eq!(
        row(&p.scenarios, "weather-corrupt"),
        (vec![2, 2, 2, 4, 0], vec![20, 20, 20, 40, 0], 0, 0)
    );
    // Three of its ten cases met no fault: they take no share.
    assert_eq!(
        row(&p.scenarios, "weather-flaky"),
        (vec![0, 2, 1, 3, 1], vec![0, 29, 14, 43, 14], 3, 0)
    );
    // Tool errors: the 503s and the flaky timeouts together (17 cases a fault reached).
    assert_eq!(
        row(&p.families, "tool errors"),
        (vec![0, 4, 3, 7, 3], vec![0, 23, 18, 41, 18], 0, 0)
    );
    assert_eq!(
        row(&p.families, "LLM errors"),
        (vec![0, 2, 2, 4, 2], vec![0, 20, 20, 40, 20], 0, 0)
    );
    let tools = p.families.iter().find(|r| r.name == "tool errors").unwrap();
    assert_eq!(tools.scenarios, ["weather-503-x2", "weather-flaky"]);
    // The corrupted data is one family of its own, whatever this build names its mode.
    assert!(
        p.families
            .iter()
            .any(|r| r.scenarios == ["weather-corrupt"] && r.shares[0].count == 2)
    );
    for r in p.scenarios.iter().chain(&p.families) {
        let sum: u32 = r.shares.iter().map(|s| s.pct).sum();
        assert_eq!(sum, 100, "{}", r.name);
        assert_eq!(r.judged, r.shares.iter().map(|s| s.count).sum::<usize>());
    }
    let html = page(&report);
    assert!(html.contains("<h3 id=\"contract-profile\">Resilience profile"));
    assert!(html.contains(
        "<tr><td>weather-flaky</td><td class=\"n\">7</td><td><div class=\"ocbar\" role=\"img\" \
         aria-label=\"fabricated 29%, failed 14%, degraded honest 43%, recovered 14%\">"
    ));
    assert!(html.contains(
        "<i class=\"oc-fabricated\" style=\"width:29%\" title=\"fabricated: 2 (29%)\"></i>"
    ));
}

#[test]
fn heatmap_cells_show_their_cases_classes() {
    let html = page(&fixture());
    let map = &html[html.find("<table class=\"heatmap\">").unwrap()..];
    let map = &map[..map.find("</table>").unwrap()];
    assert!(map.contains(
        "outcomes: 2 fabricated, 1 failed, 3 degraded honest, 1 recovered, 3 not exercised\""
    ));
    assert!(
        map.contains("<span class=\"ocb\"><i class=\"oc-propagated\" style=\"width:20%\"></i>")
    );
    // With trials, each cell's passed/trials beside its distribution.
    assert!(map.contains("<small class=\"trials\">6&#x2f;10</small></a><span class=\"ocb\">"));
}

#[test]
fn evidence_from_the_agent_and_its_tools_is_inert() {
    let mut report = fixture();
    let Report::Contract(r) = &mut report else {
        panic!("the fixture is a contract report")
    };
    let case = r
        .cases
        .iter_mut()
        .find(|c| c.scenario == "weather-corrupt" && c.prompt.contains("Rome"))
        .unwrap();
    let o = case.outcome.as_mut().unwrap();
    o.reason = "the planted value `<script>alert(1)</script>` reached the answer".into();
    for e in &mut o.evidence {
        if let OutcomeEvidence::Planted { planted, path, .. } = e {
            *planted = "<script>alert(2)</script>".into();
            *path = "$[\"<img src=x onerror=alert(3)>\"]".into();
        }
    }
    o.evidence.push(OutcomeEvidence::Unsupported {
        fact: "</code><script>alert(4)</script>".into(),
        why: "\u{1b}]0;title\u{7}<b>bold</b>".into(),
    });
    let html = page(&report);
    for raw in ["<script", "<img", "<b>bold", "\u{1b}"] {
        if let Some(at) = html.find(raw) {
            panic!(
                "unescaped {raw:?}: {}",
                &html[at.saturating_sub(200)..at + 40]
            );
        }
    }
    assert!(html.contains("<code>&lt;script&gt;alert(2)&lt;&#x2f;script&gt;</code>"));
    assert!(html.contains("◆ planted &lt;script&gt;alert(2)&lt;&#x2f;script&gt; for Rome at"));
    assert!(html.contains("<code>&lt;&#x2f;code&gt;&lt;script&gt;alert(4)"));
    assert!(html.contains(": &lt;b&gt;bold&lt;&#x2f;b&gt;</li>"));
}
