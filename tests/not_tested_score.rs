//! A run that tested nothing shows no score: `contract score` prints NOT TESTED (and exits
//! 2) rather than a number a gate would read as 100, and `--quiet` says the verdict alone.

mod common;

use common::cli::{flakestorm, write_config};

/// A script agent that answers without any traffic, under a tool fault it never meets.
const UNTOUCHED: &str = r#"tools: [{name: search, match_url: 'http://127.0.0.1:9/*'}]
agent: {command: 'echo hello {prompt}'}
golden_prompts: [hi]
invariants: [{type: completes}]
chaos:
  tool_faults: [{tool: search, mode: error, error_code: 503}]
contract:
  name: untouched
  invariants: [{id: answers, type: completes}]
  chaos_matrix:
    - name: search-down
      tool_faults: [{tool: search, mode: error, error_code: 503}]
"#;

#[test]
fn contract_score_of_a_not_tested_run_prints_no_score() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), UNTOUCHED);
    let (code, out, err) = flakestorm(&["contract", "score"], dir.path());
    assert_eq!((code, out.as_str()), (2, "NOT TESTED\n"), "{err}");
    let (code, out, err) = flakestorm(&["contract", "run", "--quiet"], dir.path());
    assert_eq!((code, out.as_str()), (2, "contract NOT TESTED\n"), "{err}");
    let (code, out, err) = flakestorm(&["run", "--chaos-only", "--quiet"], dir.path());
    assert_eq!((code, out.as_str()), (2, "chaos NOT TESTED\n"), "{err}");
}
