//! A run written to the store as it goes (`store::Recorder`): each case is stored with the
//! verdict it has when it ends, and the end of the run rewrites the cases whose final
//! verdict differs, so the store always ends agreeing with the report.

mod common;

use common::agents::research;
use common::*;
use flakestorm::run::{Report, RunKind, RunRequest, execute, prepare};
use flakestorm::store::{Recorder, RunStatus, StoredCase, Verdict};

/// Runs `p`'s chaos config against `agent` while recording it: the stored cases once every
/// case has ended (before the run's end is written), then after, with the report.
async fn recorded(p: &TestProxy, agent: &str) -> (Vec<StoredCase>, Vec<StoredCase>, Report) {
    let (cfg, ctx) = run_context(p, agent);
    let store = &p.daemon.store;
    let r = Recorder::begin(store, RunKind::Chaos, None, Some(1), RunStatus::Running);
    let ctx = flakestorm::run::RunContext {
        progress: Some(r.hooks()),
        ..ctx
    };
    let req = RunRequest {
        kind: RunKind::Chaos,
        under_chaos: false,
        profile: None,
    };
    let prepared = prepare(&cfg, &req).unwrap();
    let report = within("the chaos run", execute(&ctx, &cfg, &prepared))
        .await
        .unwrap();
    store.flush().await.unwrap();
    let ended = store.cases(r.id.as_str()).unwrap();
    r.finish(&report, &[]).await.unwrap();
    (ended, store.cases(r.id.as_str()).unwrap(), report)
}

fn verdicts(cases: &[StoredCase]) -> Vec<Option<Verdict>> {
    cases.iter().map(|c| c.case.verdict).collect()
}

const PROMPTS: &str = "golden_prompts: [\"q1\", \"q2\", \"q3\"]\n\
    invariants: [{type: contains, value: unavailable}]\n\
    advanced: {concurrency: 1}\n";

#[tokio::test]
async fn cases_are_stored_judged_as_they_end_and_the_report_has_the_last_word() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    // The fault fires on every case: each ends judged, and the end changes nothing.
    let p = start_proxy(&format!(
        "{PROMPTS}tools:\n  - {{name: search, match_url: 'http://{}/*'}}\n\
         chaos: {{tool_faults: [{{tool: search, mode: error, error_code: 503}}]}}\n",
        tool.addr
    ))
    .await;
    let agent = research(client_via(&p, H1), tool.http_url("/search")).await;
    let (ended, after, report) = recorded(&p, &agent.http_url("/invoke")).await;
    assert_eq!(verdicts(&ended), vec![Some(Verdict::Pass); 3]);
    assert_eq!(ended, after, "nothing rewritten at the end");
    let Report::Chaos(r) = &report else {
        panic!("{report:?}")
    };
    let checks = serde_json::to_value(&r.prompts[0].checks).unwrap();
    assert!(after.iter().all(|c| c.case.checks == checks), "{after:#?}");
    assert_eq!(checks[0]["verdict"], "pass", "{checks}");
    p.stop().await;
}

#[tokio::test]
async fn a_verdict_that_changes_at_the_end_is_rewritten() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    // The agent's answers fail the check as each case ends, but the fault matches a tool it
    // never calls: at the end the run knows nothing was tested, and the store must say so.
    let p = start_proxy(&format!(
        "{PROMPTS}tools:\n  - {{name: search, match_url: 'http://{}/*'}}\n  \
         - {{name: email, match_url: 'http://127.0.0.1:9/*'}}\n\
         chaos: {{tool_faults: [{{tool: email, mode: error, error_code: 503}}]}}\n",
        tool.addr
    ))
    .await;
    let agent = research(client_via(&p, H1), tool.http_url("/search")).await;
    let (ended, after, report) = recorded(&p, &agent.http_url("/invoke")).await;
    assert_eq!(verdicts(&ended), vec![Some(Verdict::Fail); 3]);
    assert_eq!(verdicts(&after), vec![Some(Verdict::NotTested); 3]);
    let Report::Chaos(r) = &report else {
        panic!("{report:?}")
    };
    let checks = serde_json::to_value(&r.prompts[0].checks).unwrap();
    assert_eq!(checks[0]["verdict"], "not_tested", "{checks}");
    assert!(after.iter().all(|c| c.case.checks == checks), "{after:#?}");
    p.stop().await;
}
