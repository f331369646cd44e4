//! Golden files: each format rendered from the fixed reports `tests/fixtures/reports/ci.json`
//! and `outcomes.json` (a contract run with every outcome class) must equal its file beside
//! it byte for byte (`UPDATE_GOLDEN=1` rewrites them after an intended change; review the
//! diff).

use std::path::PathBuf;

use crate::config::ReportFormat;
use crate::run::Report;

pub(crate) fn fixture(json: &str) -> Report {
    let text = std::fs::read_to_string(dir().join(json)).expect("the report fixture");
    Report::from_json(&text).expect("the fixture reads")
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports")
}

/// Renders the `ci.json` fixture as `format` and compares it with `file`.
pub(crate) fn check(format: ReportFormat, file: &str) -> String {
    check_of("ci.json", format, file)
}

/// Renders the fixture `json` as `format` and compares it with `file`.
pub(crate) fn check_of(json: &str, format: ReportFormat, file: &str) -> String {
    let got = super::render(&fixture(json), format).expect("the fixture renders");
    let path = dir().join(file);
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, &got).expect("write the golden file");
        return got;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} (create it with UPDATE_GOLDEN=1)", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(g, w)| g != w)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{file} differs from the rendering at line {}:\n  got:  {:?}\n  want: {:?}\n\
             (UPDATE_GOLDEN=1 rewrites it after an intended change)",
            line + 1,
            got.lines().nth(line).unwrap_or("(end)"),
            want.lines().nth(line).unwrap_or("(end)")
        );
    }
    got
}

#[test]
fn junit_matches_its_golden_file_and_escapes_the_agent() {
    let xml = check(ReportFormat::Junit, "ci.junit.xml");
    assert!(!xml.contains("<script"));
    assert!(xml.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!xml.contains('\u{1b}'), "no terminal escapes in XML");
    // One suite per phase that ran, and the skipped replay phase.
    for suite in ["mutation", "contract", "chaos", "replay"] {
        assert!(
            xml.contains(&format!("<testsuite name=\"{suite}\"")),
            "{suite}"
        );
    }
}

#[test]
fn markdown_matches_its_golden_file_and_lists_failed_cells() {
    let md = check(ReportFormat::Markdown, "ci.md");
    assert!(md.contains("| llm-rate-limited | searches | medium | ❌ fail |"));
    assert!(md.contains("| llm-truncated | admits-outage | high | ❌ fail |"));
    assert!(!md.contains("<script"));
    assert!(md.len() < 1 << 20);
}

#[test]
fn outcome_classes_in_junit_match_their_golden_file() {
    let xml = check_of("outcomes.json", ReportFormat::Junit, "outcomes.junit.xml");
    // A failing cell's message names the first failing case's class; its body every
    // failing case's, with the reason and the evidence.
    assert!(xml.contains(
        "<failure message=\"[fabricated] 4 of 10 trials failed; &quot;What is the weather in Oslo?&quot;"
    ));
    assert!(xml.contains("[propagated] &quot;What is the weather in Rome?&quot;"));
    assert!(xml.contains("  outcome propagated: the planted value `Upid` (for `Rome` at $.city"));
    assert!(xml.contains("    - planted `Upid` for `Rome` at `$.city` (exchange "));
    assert!(xml.contains("<property name=\"outcome.degraded_honest\" value=\"4\"/>"));
    assert!(xml.contains("<property name=\"outcome.not_exercised\" value=\"3\"/>"));
}

#[test]
fn outcome_classes_in_markdown_match_their_golden_file() {
    let md = check_of("outcomes.json", ReportFormat::Markdown, "outcomes.md");
    assert!(md.contains("**What the agent did with faults**"));
    assert!(md.contains("| weather-corrupt | 2 (20%) | 2 (20%) | 2 (20%) | 4 (40%) | – | 0 | 0 |"));
    assert!(md.contains("| weather-flaky | – | 2 (29%) | 1 (14%) | 3 (43%) | 1 (14%) | 3 | 0 |"));
    assert!(md.contains("(first failed case: `fabricated`)"));
}

/// The `ci.json` fixture with its first chaos case failed, its class `fabricated`.
fn failed_chaos_case_with_a_class() -> Report {
    use crate::checks::Verdict;
    use crate::checks::spec::OutcomeClass;
    use crate::run::{CaseOutcome, OutcomeEvidence};
    let mut report = fixture("ci.json");
    let Report::Ci(ci) = &mut report else {
        panic!("the fixture is a ci report")
    };
    let chaos = ci.chaos.as_mut().unwrap();
    chaos.prompts[0].passed = false;
    chaos.prompts[0].checks[0] = Verdict::Fail("the answer quotes 25°C".into());
    chaos.cases[0].outcome = Some(CaseOutcome {
        class: OutcomeClass::Fabricated,
        reason: "the answer states `25°C`, found in no response | of the case".into(),
        bypassed: false,
        evidence: vec![OutcomeEvidence::Unsupported {
            fact: "<b>25°C</b>".into(),
            why: "found in no response".into(),
        }],
    });
    chaos.cases[1].outcome = Some(CaseOutcome {
        class: OutcomeClass::Recovered,
        reason: "the answer carries `21.4°C`".into(),
        bypassed: false,
        evidence: vec![],
    });
    report
}

#[test]
fn a_failed_case_names_its_class_in_junit_and_markdown() {
    let report = failed_chaos_case_with_a_class();
    let xml = super::render(&report, ReportFormat::Junit).unwrap();
    let suite = &xml[xml.find("<testsuite name=\"chaos\"").unwrap()..];
    assert!(suite.contains("<property name=\"outcome\" value=\"fabricated\"/>"));
    assert!(suite.contains("<property name=\"outcome\" value=\"recovered\"/>"));
    assert!(suite.contains("<failure message=\"[fabricated] check 1: the answer quotes 25°C\""));
    assert!(suite.contains("outcome fabricated: the answer states `25°C`"));
    assert!(suite.contains("  - unsupported fact `&lt;b&gt;25°C&lt;/b&gt;`: found in no response"));
    let md = super::render(&report, ReportFormat::Markdown).unwrap();
    assert!(md.contains(
        "| `fabricated` the answer states `25°C`, found in no response \\| of the case; \
         check 1: the answer quotes 25°C |"
    ));
}
