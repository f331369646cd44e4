//! What a run says when it could not test, and whom it blames, as a user meets it with
//! `flakestorm contract run`: a reset endpoint that fails (its own words in the reason, no
//! agent call counted that never happened), an agent whose calls bypass the proxy (the fix
//! for its stack, a Node `fetch`, in every cell, not a blanket "use agent.command"), an
//! `agent.env` `NO_PROXY` that covers the tool (blamed by name), and the run's header
//! naming the lanes a pool's agent really talks through.

mod common;

use common::cli::{flakestorm, write_config};
use common::origin::{self, Origin};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent");
    f.join(name).display().to_string()
}

/// A contract on the search tool at `search`: one scenario without chaos, one with the
/// tool down; `agent` is the `agent:` section's body.
fn config(search: &Origin, agent: &str) -> String {
    format!(
        r#"output: {{format: [json]}}
tools: [{{name: search, match_url: 'http://{search}/*'}}]
advanced: {{concurrency: 2, seed: 7, settle_ms: 0}}
agent:
{agent}golden_prompts: ["Q3 revenue?", "Headcount?"]
contract:
  name: diagnosis
  invariants:
    - {{id: cites, type: contains, value: "According to search", when: no_chaos}}
    - {{id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}}
    - {{id: searches, type: tool_called, tool: search}}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{{tool: search, mode: error, error_code: 503}}]
"#,
        search = search.addr,
    )
}

/// `flakestorm contract run` on `yaml` in a fresh folder: exit code, stdout, stderr, report.
async fn run(yaml: String) -> (i32, String, String, Value) {
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &yaml);
        let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
        let json = std::fs::read_to_string(dir.path().join("reports/contract.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
        (code, out, err, serde_json::from_str(&json).unwrap())
    })
    .await
    .unwrap()
}

/// The reasons of the cells that were not tested, with the cells' names.
fn untested_cells(report: &Value) -> Vec<(String, String)> {
    let cells = report["cells"].as_array().unwrap();
    cells
        .iter()
        .filter(|c| c["verdict"] == "not_tested")
        .map(|c| {
            let name = format!("{} under {}", c["invariant"], c["scenario"]);
            (name, c["reason"].as_str().unwrap().to_string())
        })
        .collect()
}

fn reasons(report: &Value) -> Vec<String> {
    let list = report["verdict_reasons"].as_array().unwrap();
    list.iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reset_says_what_the_endpoint_answered_and_counts_no_agent_call() {
    let agent = origin::start(None, |req: http::Request<_>| async move {
        match req.uri().path() {
            "/reset" => {
                let mut r = origin::typed(
                    r#"{"error": "state store is down", "api_key": "sk-live-0123456789abcdef"}"#,
                    "application/json",
                );
                *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
                r
            }
            _ => origin::text(r#"{"result": "According to search: fine"}"#),
        }
    })
    .await;
    let search = origin::search_tool().await;
    let section = format!(
        "  endpoint: 'http://{a}/invoke'\n  reset_endpoint: 'http://{a}/reset?token=reset-secret-42'\n",
        a = agent.addr
    );
    let (code, out, err, report) = run(config(&search, &section)).await;
    assert_eq!(code, 2, "{out}\n{err}");
    let invoked = agent
        .log
        .all()
        .iter()
        .filter(|s| s.uri.contains("invoke"))
        .count();
    assert_eq!(invoked, 0, "the agent was never invoked");
    assert_eq!(report["agent_calls"], 0, "{report}");
    assert!(
        out.contains("contract \"diagnosis\": 0 agent calls (4 of 4 cases never reached the agent"),
        "{out}"
    );
    for case in report["cases"].as_array().unwrap() {
        let why = case["not_judged"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}"));
        assert!(
            why.contains("so the agent was not called: agent.reset_endpoint http://")
                && why.contains("answered HTTP 503: ")
                && why.contains("state store is down"),
            "{why}"
        );
        assert!(!why.contains("sk-live-0123456789abcdef"), "{why}");
        assert!(
            !why.contains("reset-secret-42"),
            "the URL's query is not quoted: {why}"
        );
        assert_eq!(case["attempts"], 0, "{case}");
    }
    // The environment failed, not the agent: no score, the reset named.
    assert_eq!(report["verdict"], "error", "{report}");
    assert!(
        reasons(&report)[0].contains("the reset before it failed"),
        "{report}"
    );
    assert!(!out.contains("sk-live"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_agent_whose_fetch_ignores_the_proxy_is_told_the_node_fix_in_every_cell() {
    let search = origin::search_tool().await;
    // NODE_USE_ENV_PROXY other than 1: the fetch of any Node release, 20 to 24, ignores
    // HTTPS_PROXY, as Node 20's does whatever flakestorm sets.
    let section = format!(
        "  command: 'exec node {} {{prompt}}'\n  env: {{TOOL_URL: 'http://{}/q', \
         NODE_USE_ENV_PROXY: '0'}}\n",
        fixture("node_fetch_script.mjs"),
        search.addr
    );
    let (code, out, err, report) = run(config(&search, &section)).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        search.log.len() >= 4,
        "the script called its tool, around the proxy"
    );
    let cells = untested_cells(&report);
    assert!(cells.len() >= 2, "{report}");
    let reasons = reasons(&report);
    let said = cells.iter().map(|(_, why)| why).chain(reasons.first());
    for why in said {
        assert!(
            why.contains("the agent runs Node")
                && why.contains("EnvHttpProxyAgent")
                && why.contains("NODE_USE_ENV_PROXY=1"),
            "{why}\n{cells:#?}"
        );
        assert!(!why.contains("let flakestorm start"), "{why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_env_no_proxy_that_covers_the_tool_is_blamed_by_name() {
    let search = origin::search_tool().await;
    let section = format!(
        "  command: 'exec python3 {} {{prompt}}'\n  env: {{TOOL_URL: 'http://{}/q', \
         no_proxy: 'localhost,127.0.0.1'}}\n",
        fixture("script_agent.py"),
        search.addr
    );
    let (code, out, err, report) = run(config(&search, &section)).await;
    assert_eq!(code, 2, "{out}\n{err}");
    let want = format!(
        "agent.env sets NO_PROXY to `localhost,127.0.0.1`, whose `127.0.0.1` covers tool \
         `search` (http://{}/*), so the agent's calls to it bypass flakestorm's proxy: remove \
         NO_PROXY from agent.env",
        search.addr
    );
    let cells = untested_cells(&report);
    assert!(cells.len() >= 2, "{report}");
    let reasons = reasons(&report);
    for why in cells.iter().map(|(_, why)| why).chain(reasons.first()) {
        assert!(why.contains(&want), "{why}\n{cells:#?}");
        assert!(!why.contains("agent.command"), "{why}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_names_the_lanes_the_agents_calls_crossed() {
    let search = origin::search_tool().await;
    let section = format!(
        "  command: 'exec python3 {} --proxy {{prompt}}'\n  env: {{TOOL_URL: 'http://{}/q'}}\n",
        fixture("script_agent.py"),
        search.addr
    );
    let (code, out, err, report) = run(config(&search, &section)).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("flakestorm: proxy on "))
        .unwrap_or_else(|| panic!("no proxy line: {err}"));
    let (main, lanes) = line
        .strip_prefix("flakestorm: proxy on ")
        .and_then(|l| l.split_once(" (the agent's traffic goes through lanes of its own: "))
        .unwrap_or_else(|| panic!("{line}"));
    let lanes: Vec<&str> = lanes.trim_end_matches(')').split(", ").collect();
    assert!(!lanes.contains(&main), "{line}");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "{report}");
    for c in cases {
        // Its tool call crossed the proxy it was given, and that is a lane the header named.
        assert_eq!(c["exchanges"].as_array().unwrap().len(), 1, "{c}");
        let answer = c["answer"].as_str().unwrap();
        let via = answer
            .rsplit_once("[via http://")
            .and_then(|(_, v)| v.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{answer}"));
        assert!(lanes.contains(&via), "{via} not in {lanes:?}: {line}");
    }
}
