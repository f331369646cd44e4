//! Record → export → replay: a contract run writes its failed case's traffic as a tape
//! (`output.tapes: failed`), `replay export` turns the failed case into a session file plus
//! its tape, and replaying that session reproduces the failure from the tape — the tool's
//! recorded 503 reaches the agent again — while the tool's origin receives nothing.

mod common;

use common::agents::research;
use common::{H1, client_via, origin, run_context, start_proxy, within};
use flakestorm::config::Tapes;
use flakestorm::run::{Report, RunContext, RunVerdict, run_contract, run_replay, session_files};

const CONTRACT: &str = r#"
golden_prompts: ["Q3 revenue?"]
contract:
  name: Research agent
  invariants:
    - {id: cites-source, type: contains, value: "According to", severity: critical}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{id: search-down, tool: web_search, mode: error, error_code: 503}]
"#;

#[tokio::test]
async fn a_failed_case_exported_from_its_report_replays_the_same_failure() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    let yaml = format!(
        "{CONTRACT}tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\nreplays:\n  on_miss: strict\n",
        tool.addr
    );
    let p = start_proxy(&yaml).await;
    p.daemon.journal.set_keep_bodies(true);
    let a = research(client_via(&p, H1), tool.http_url("/search")).await;
    let (cfg, ctx) = run_context(&p, &a.http_url("/invoke"));
    let ctx = RunContext {
        concurrency: 1,
        ..ctx
    };
    let contract = run_contract(&ctx, cfg.contract.as_ref().unwrap(), &cfg.golden_prompts).await;
    let report = Report::Contract(contract.unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("contract.json");
    let written = flakestorm::report::write_all(&report, &[], &path);
    assert!(written.failed.is_empty(), "{:?}", written.failed);
    let (tapes, untaped) =
        flakestorm::run::tapes::write(&report, &p.daemon.journal, Tapes::Failed, &path);
    assert!(untaped.is_empty(), "{untaped:?}");
    assert_eq!(
        tapes,
        [dir.path().join("contract.tapes/contract-1.har")],
        "the failed case only"
    );
    let elsewhere = dir.path().join("other/contract.json");
    let (all, _) =
        flakestorm::run::tapes::write(&report, &p.daemon.journal, Tapes::All, &elsewhere);
    assert_eq!(all.len(), 2, "every case: {all:?}");
    let none = dir.path().join("none/contract.json");
    let (written, _) =
        flakestorm::run::tapes::write(&report, &p.daemon.journal, Tapes::None, &none);
    assert!(written.is_empty() && !dir.path().join("none").exists());
    // Exported into the tapes folder itself: the tape stays whole (a copy onto itself
    // would empty it).
    let tape = dir.path().join("contract.tapes/contract-1.har");
    let before = std::fs::read(&tape).unwrap();
    let inside = flakestorm::run::export::export(&path, &dir.path().join("contract.tapes"));
    assert_eq!(inside.unwrap().sessions.len(), 1);
    assert_eq!(std::fs::read(&tape).unwrap(), before);
    let out = dir.path().join("exported");
    let done = flakestorm::run::export::export(&path, &out).unwrap();
    assert!(done.skipped.is_empty(), "{:?}", done.skipped);
    assert_eq!(done.sessions, [out.join("contract-1.json")]);
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&done.sessions[0]).unwrap()).unwrap();
    assert_eq!(session["input"], "Q3 revenue?");
    assert_eq!(session["tape"], "contract-1.har");
    assert_eq!(session["contract"], "Research agent");
    assert!(
        session["expected_failure"]
            .as_str()
            .unwrap()
            .starts_with("`cites-source`: "),
        "{session}"
    );
    let before = tool.log.len();
    let entries = session_files(&out).unwrap();
    let r = within("the replay", run_replay(&ctx, &cfg, &entries)).await;
    let s = &r.sessions[0];
    assert_eq!(s.verdict, RunVerdict::Fail, "{s:?}");
    assert!(
        s.reasons[0].starts_with("`cites-source`: "),
        "{:?}",
        s.reasons
    );
    assert!(s.misses.is_empty(), "{:?}", s.misses);
    let answer = r.cases[0].answer.as_deref().unwrap();
    assert_eq!(
        answer,
        "Sorry, search is unavailable right now (status 503)."
    );
    assert_eq!(
        tool.log.len(),
        before,
        "the tape answered; the origin heard nothing"
    );
    p.stop().await;
}
