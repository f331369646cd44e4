//! Each kind's message is the one the daemon sent when events were built with `json!`
//! (the reference values below are those literals), and reads back as it was sent.

use serde_json::json;
use strum::IntoEnumIterator;

use super::*;
use crate::checks::Verdict;
use crate::config::Severity;
use crate::store::{RunRecord, RunStatus};

fn record() -> RunRecord {
    RunRecord {
        config_digest: Some("sha256:ab".into()),
        seed: Some(7),
        reason: Some("score 40".into()),
        scores: [("overall".to_string(), 40.5), ("chaos".to_string(), 12.0)].into(),
        done: 3,
        total: 4,
        artifacts: [("json".to_string(), "runs/r1/report.json".to_string())].into(),
        ..RunRecord::for_test("r1", RunKind::Ci, RunStatus::Failed)
    }
}

fn cell() -> CellResult {
    CellResult {
        invariant: "safe".into(),
        scenario: "llm-429".into(),
        severity: Severity::Critical,
        verdict: Verdict::Fail("a trial failed".into()),
        cases: 8,
        consistency: Some(crate::run::Consistency::of(8, 6)),
        outcomes: [(crate::checks::spec::OutcomeClass::Recovered, 2)].into(),
    }
}

/// Every kind with the data the daemon sent for it before (`json!`), as text.
fn every_kind() -> Vec<(RunEvent, String)> {
    let mut c = CaseResult::for_test(&"é".repeat(250), None);
    c.not_judged = Some("trace lost".into());
    let judged = crate::run::Judged {
        so_far: SoFar::NotJudged,
        checks: crate::run::CaseChecks::Invariants(vec![]),
    };
    let case = RunEvent::case(&c, &judged, (2, 9));
    let case_json = json!({
        "done": 2,
        "total": 9,
        "scenario": c.scenario,
        "input": crate::text::cut(&c.prompt, 200),
        "answered": c.answer.is_some(),
        "error": c.error,
        "not_judged": c.not_judged,
        "latency_ms": c.latency_ms,
        "faults": c.faults.len(),
        "so_far": "not_judged",
    });
    let input = "x".repeat(300);
    vec![
        (RunEvent::Queued { id: "r1".into() }, json!({"id": "r1"})),
        (RunEvent::Started { id: "r1".into() }, json!({"id": "r1"})),
        (
            RunEvent::Warning {
                message: "m".into(),
            },
            json!({"message": "m"}),
        ),
        (
            RunEvent::case_started("s", &input),
            json!({"scenario": "s", "input": crate::text::cut(&input, 200)}),
        ),
        (case, case_json),
        (
            RunEvent::Phase {
                phase: RunKind::Contract,
                score: 87.5,
            },
            json!({"phase": RunKind::Contract, "score": 87.5}),
        ),
        (RunEvent::Cell(Box::new(cell())), json!(cell())),
        (RunEvent::Done(Box::new(record())), json!(record())),
    ]
    .into_iter()
    .map(|(e, v)| (e, v.to_string()))
    .collect()
}

#[test]
fn every_kinds_data_is_what_the_daemon_sent_and_reads_back() {
    let all = every_kind();
    let kinds: Vec<EventKind> = all.iter().map(|(e, _)| e.kind()).collect();
    assert_eq!(kinds, EventKind::iter().collect::<Vec<_>>(), "one of each");
    for (event, sent) in all {
        assert_eq!(event.data(), sent, "{:?}", event.kind());
        let read = RunEvent::parse(event.kind().as_str(), serde_json::from_str(&sent).unwrap());
        assert_eq!(read.unwrap(), event);
    }
}

#[test]
fn a_kinds_name_is_serdes_tag_and_the_docs() {
    let names: Vec<&str> = EventKind::iter().map(EventKind::as_str).collect();
    assert_eq!(
        names,
        [
            "queued",
            "started",
            "warning",
            "case_started",
            "case",
            "phase",
            "cell",
            "done"
        ]
    );
    for (event, _) in every_kind() {
        let tagged = serde_json::to_value(&event).unwrap();
        assert_eq!(tagged["event"], event.kind().as_str());
        assert_eq!(event.kind().to_string(), event.kind().as_str());
    }
}

#[test]
fn an_unknown_kind_or_data_that_does_not_fit_is_an_error_saying_which() {
    let e = RunEvent::parse("paused", json!({})).unwrap_err();
    assert_eq!(e.kind(), None);
    assert_eq!(
        e.to_string(),
        "an event of a kind this build does not know: `paused`"
    );
    let e = RunEvent::parse("done", json!({"id": "r1"})).unwrap_err();
    assert_eq!(e.kind(), Some(EventKind::Done));
    assert!(
        e.to_string()
            .starts_with("the data of a `done` event: missing field"),
        "{e}"
    );
}

/// docs/api.md's table of events has a row per kind, in order.
#[test]
fn the_api_docs_list_every_kind() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let events = text.split("### Events").nth(1).unwrap();
    let rows: Vec<&str> = events
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let kinds: Vec<&str> = EventKind::iter().map(EventKind::as_str).collect();
    assert_eq!(rows, kinds);
}

/// A contract case tells its cells as it ends: each invariant's check on it and how many
/// cases the cell holds (the web view's matrix fills in from these).
#[test]
fn a_contract_case_carries_its_cells_so_far() {
    let c = CaseResult::for_test("hi", Some("fine"));
    let judged = crate::run::Judged {
        so_far: SoFar::Unscored,
        checks: crate::run::CaseChecks::Cells(vec![crate::run::CellSoFar {
            invariant: "cites".into(),
            verdict: Verdict::Fail("no citation".into()),
            of: 3,
        }]),
    };
    let e = RunEvent::case(&c, &judged, (1, 6));
    let data: serde_json::Value = serde_json::from_str(&e.data()).unwrap();
    assert_eq!(
        data["cells"],
        json!([{"invariant": "cites", "verdict": "fail", "reason": "no citation", "of": 3}])
    );
    assert_eq!(data["so_far"], "unscored");
    assert_eq!(RunEvent::parse("case", data).unwrap(), e);
}
