//! The writer's work is linear in a run's cases, however many share a key (issue #51): an
//! import of one case copied 20,000 times, and a live run whose cases all share one prompt
//! and whose final verdicts differ from those they were stored with, each take no more
//! than a linear share of the time 2,000 copies take. Measured as a ratio in the same
//! test (10 is linear; the quadratic judging took about 100).

use serde_json::{Value, json};

use super::*;
use crate::run::{CaseChecks, CaseResult, Judged, Report, SoFar};

const FIXTURE: &str = include_str!("../../tests/fixtures/reports/ci.json");
/// What 10× the cases may cost, at most, against 1× (10 when linear, ~100 quadratic).
const MAX_RATIO: f64 = 30.0;

/// A chaos report of `n` copies of one case, each passing or failing as `passed(i)` says.
fn copies(n: usize, passed: impl Fn(usize) -> bool) -> Value {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut report = fixture["chaos"].clone();
    let mut case = report["cases"][0].clone();
    case["exchanges"] = Value::Null;
    let prompt = report["prompts"][0].clone();
    report["cases"] = Value::Array(vec![case; n]);
    report["prompts"] = (0..n)
        .map(|i| {
            let mut p = prompt.clone();
            p["passed"] = json!(passed(i));
            p
        })
        .collect();
    report
}

// A ratio of two durations in the same test (house rules: no absolute wall-time bound).
#[allow(clippy::disallowed_methods)]
async fn timed<F: std::future::Future<Output = ()>>(work: F) -> f64 {
    let start = std::time::Instant::now();
    work.await;
    start.elapsed().as_secs_f64()
}

async fn import_copies(n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let text = copies(n, |_| true).to_string();
    let report = Report::from_json(&text).unwrap();
    timed(async {
        let id = import(&store, &report, text.clone()).await.unwrap();
        assert_eq!(store.cases(id.as_str()).unwrap().len(), n);
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_of_one_case_copied_is_linear_in_its_copies() {
    let small = import_copies(2_000).await;
    // Twice the bound: past it the answer is known, and a quadratic store would take
    // minutes more.
    let large = tokio::time::timeout(
        std::time::Duration::from_secs_f64(small * MAX_RATIO * 2.0),
        import_copies(20_000),
    )
    .await
    .unwrap_or_else(|_| panic!("20,000 copies took over {}× 2,000's time", MAX_RATIO * 2.0));
    let ratio = large / small;
    eprintln!("import: 2,000 copies {small:.3} s, 20,000 copies {large:.3} s ({ratio:.1}x)");
    assert!(
        ratio < MAX_RATIO,
        "ratio {ratio:.1} (2,000 copies: {small:.3} s)"
    );
}

/// A live run of `n` cases of one prompt, stored passing as they end; the report then
/// fails every other one, so the end rewrites half of them, each by its own row.
async fn live_copies(n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let report = Report::from_json(&copies(n, |i| i.is_multiple_of(2)).to_string()).unwrap();
    let Report::Chaos(chaos) = &report else {
        panic!("a chaos report")
    };
    let r = Recorder::begin(&store, RunKind::Chaos, None, None, RunStatus::Running);
    let hooks = r.hooks();
    let judged = Judged {
        so_far: SoFar::Passed,
        checks: CaseChecks::Invariants(vec![]),
    };
    for (i, case) in chaos.cases.iter().enumerate() {
        // Each its own answer, as a real run's cases have.
        let case = CaseResult {
            answer: Some(format!("answer {i}")),
            ..case.clone()
        };
        (hooks.case)(&case, &judged);
    }
    let mut chaos = chaos.clone();
    for (i, case) in chaos.cases.iter_mut().enumerate() {
        case.answer = Some(format!("answer {i}"));
    }
    let report = Report::Chaos(chaos);
    let took = timed(async { r.finish(&report, &[]).await.unwrap() }).await;
    let cases = store.cases(r.id.as_str()).unwrap();
    for c in &cases {
        let i: usize = c.case.answer.as_deref().unwrap()[7..].parse().unwrap();
        let want = if i.is_multiple_of(2) {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        assert_eq!(c.case.verdict, Some(want), "case {i}: its own verdict");
    }
    took
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_run_of_one_prompt_is_judged_case_by_case_in_linear_time() {
    // The quickest of two tries of each size: a burst of load on a shared machine slows
    // one try, while a quadratic cost slows every try of the larger size.
    let small = live_copies(2_000).await.min(live_copies(2_000).await);
    let mut large = f64::INFINITY;
    for _ in 0..2 {
        let took = tokio::time::timeout(
            std::time::Duration::from_secs_f64(small * MAX_RATIO * 2.0),
            live_copies(20_000),
        )
        .await
        .unwrap_or_else(|_| panic!("20,000 cases took over {}× 2,000's time", MAX_RATIO * 2.0));
        large = large.min(took);
        if large / small < MAX_RATIO {
            break;
        }
    }
    let ratio = large / small;
    eprintln!("a live run's end: 2,000 cases {small:.3} s, 20,000 {large:.3} s ({ratio:.1}x)");
    assert!(
        ratio < MAX_RATIO,
        "ratio {ratio:.1} (2,000 cases: {small:.3} s)"
    );
}
