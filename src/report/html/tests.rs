//! The page on the fixed `ci` report (tests/fixtures/reports/ci.json): byte for byte
//! against tests/fixtures/reports/ci.html (`UPDATE_GOLDEN=1` rewrites it), escaped, and
//! small at 1,000 cases.

use crate::report::view::overview;
use crate::run::Report;

const FIXTURE: &str = include_str!("../../../tests/fixtures/reports/ci.json");

fn fixture() -> Report {
    Report::from_json(FIXTURE).expect("the fixture reads")
}

fn page(report: &Report) -> String {
    super::render(&overview(report)).expect("the page renders")
}

#[test]
fn the_fixture_renders_as_the_golden_page() {
    crate::report::golden::check(crate::config::ReportFormat::Html, "ci.html");
}

#[test]
fn answers_are_escaped_and_terminal_escapes_inert() {
    let html = page(&fixture());
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;"),
        "the answer is shown, escaped"
    );
    assert!(!html.contains("<script"), "no script element at all");
    assert!(!html.contains('\u{1b}'), "no ESC byte reaches the page");
    assert!(html.contains("Q3 &amp; &quot;revenue&quot;"));
}

#[test]
fn the_page_has_every_part_a_reader_needs() {
    let html = page(&fixture());
    for part in [
        "<div class=\"v\">PASS</div>",
        "score <b>94.9</b> / 100 (pass mark 70.0)",
        "sha256:6172e656d4a60b87b98c7b1f2752963024fda2938e5ba707c8f4a82cbbad08a5",
        "<dt>flakestorm</dt><dd>0.1.0</dd>",
        "<dt>duration</dt><dd>1.8 s</dd>",
        "skipped: replay runs are not available in this build",
        "<section id=\"mutation\">",
        "<section id=\"contract\">",
        "<section id=\"chaos\">",
        "<table class=\"heatmap\">",
        "<svg class=\"tl\"",
        "mutated input (<b>noise</b>)",
        // The failed `searches` cell under the 429s links to its detail, whose next step
        // reads the retries off the wire.
        "href=\"#contract-cell-",
        "the LLM answered 429 2 times and the agent gave up after 1 retry, the last 103.9 ms \
         after the one before (Retry-After: 0.1)",
        "the agent never called `web_search` under this fault",
        "the LLM&#x27;s answer was cut off and the agent passed the fragment on",
        "retry 1",
    ] {
        assert!(html.contains(part), "the page lacks {part:?}");
    }
    // No network: nothing is fetched (the one URL-like attribute is the SVG namespace).
    for fetch in ["src=", "<link", "@import", "url("] {
        assert!(
            !html.contains(fetch),
            "the page fetches something: {fetch:?}"
        );
    }
}

/// The fixture with its contract cases repeated to `n` cases in all.
fn with_cases(n: usize) -> Report {
    let mut report = fixture();
    let Report::Ci(ci) = &mut report else {
        panic!("the fixture is a ci report")
    };
    let others = ci.mutation.as_ref().map_or(0, |m| m.cases.len())
        + ci.chaos.as_ref().map_or(0, |c| c.cases.len());
    let contract = ci.contract.as_mut().expect("the fixture ran contracts");
    let cases: Vec<_> = contract
        .cases
        .iter()
        .cycle()
        .take(n - others)
        .cloned()
        .collect();
    contract.cases = cases;
    report
}

#[test]
fn a_thousand_cases_stay_under_five_megabytes() {
    let report = with_cases(1000);
    let html = page(&report);
    let cases = html.matches("<details class=\"case").count();
    assert_eq!(cases, 1000);
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
}

#[test]
fn very_long_answers_are_cut_and_say_so() {
    let mut report = fixture();
    let Report::Ci(ci) = &mut report else {
        panic!("the fixture is a ci report")
    };
    let case = &mut ci.contract.as_mut().unwrap().cases[0];
    case.answer = Some("x".repeat(100_000));
    let html = page(&report);
    assert!(html.contains(" … (98000 more characters in the JSON report)"));
    assert!(!html.contains(&"x".repeat(2001)));
}

#[test]
fn each_phase_alone_renders_its_section_without_a_phases_table() {
    let Report::Ci(ci) = fixture() else {
        panic!("the fixture is a ci report")
    };
    let ci = *ci;
    for (report, section) in [
        (Report::Contract(ci.contract.unwrap()), "contract"),
        (Report::Chaos(ci.chaos.unwrap()), "chaos"),
        (Report::Mutation(ci.mutation.unwrap()), "mutation"),
    ] {
        let html = page(&report);
        assert!(
            html.contains(&format!("<section id=\"{section}\">")),
            "{section}"
        );
        assert_eq!(html.matches("<section ").count(), 1, "{section}");
        assert!(!html.contains("<table class=\"phases\">"), "{section}");
        assert_eq!(
            html.contains("<table class=\"heatmap\">"),
            section == "contract"
        );
    }
}

#[test]
fn cases_without_calls_say_why_and_wire_texts_are_escaped_in_the_svg() {
    let mut report = fixture();
    let Report::Ci(ci) = &mut report else {
        panic!("the fixture is a ci report")
    };
    let cases = &mut ci.contract.as_mut().unwrap().cases;
    cases[0].traffic = None;
    cases[1].traffic = Some(vec![]);
    cases[2].not_judged = Some("the agent dropped the case's <traceparent>".into());
    let mut call = (*cases[3].traffic.as_ref().unwrap()[1]).clone();
    call.target = crate::exchange::Target::Tool {
        name: "<i>search</i>".into(),
    };
    call.request.url = "https://x/\"><script>alert(2)</script>".into();
    cases[3].traffic = Some(vec![std::sync::Arc::new(call)]);
    let html = page(&report);
    assert!(html.contains("no timeline: its calls could not be attributed to it"));
    assert!(html.contains("no timeline: no call of the agent&#x27;s reached the proxy"));
    assert!(html.contains("not judged: the agent dropped the case&#x27;s &lt;traceparent&gt;"));
    assert!(html.contains("<text x=\"0\" y=\"13\">tool &lt;i&gt;search&lt;&#x2f;i&gt;</text>"));
    assert!(html.contains("&quot;&gt;&lt;script&gt;alert(2)"));
    for raw in ["<i>search", "<script"] {
        if let Some(at) = html.find(raw) {
            panic!(
                "unescaped {raw:?}: {}",
                &html[at.saturating_sub(300)..at + 60]
            );
        }
    }
}

#[test]
fn a_failed_chaos_case_gets_a_next_step_from_its_calls() {
    let mut report = fixture();
    let Report::Ci(ci) = &mut report else {
        panic!("the fixture is a ci report")
    };
    let chaos = ci.chaos.as_mut().unwrap();
    // The fixture's first chaos case met a truncated LLM answer; fail its first check.
    chaos.prompts[0].passed = false;
    chaos.prompts[0].checks[0] = crate::checks::Verdict::Fail("the answer is cut off".into());
    let html = page(&report);
    let section = &html[html.find("<section id=\"chaos\">").unwrap()..];
    assert!(section.contains("<details class=\"case k-fail\" id=\"chaos-0\">"));
    assert!(section.contains(
        "<b>next step:</b> the LLM&#x27;s answer was cut off and the agent passed the fragment on"
    ));
    assert_eq!(section.matches("<b>next step:</b>").count(), 1);
}

#[path = "outcome_tests.rs"]
mod outcome_tests;
