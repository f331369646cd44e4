//! An agent that is a script, as a user runs one: `agent.command` without `agent.endpoint`,
//! the prompt as `{prompt}` in its arguments or on its stdin, one process per case through
//! a proxy lane of its own (so each tool call is its case's, at any concurrency), its
//! stdout the answer (`response_path` read on JSON stdout), a failure's exit status and
//! stderr in the case's error and every run's stderr in the agent log. Faults reach it.

mod common;

use common::cli::{flakestorm, flakestorm_env, write_config};
use common::origin;
use serde_json::Value;

const PROMPTS: [&str; 4] = [
    "Q3 revenue?",
    "Who is the CEO? It's \"urgent\"; really",
    "Headcount?",
    "Office locations?",
];

fn script() -> String {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent/script_agent.py");
    f.display().to_string()
}

fn config(search: &origin::Origin, command: &str, extra: &str, prompts: &[&str]) -> String {
    format!(
        r#"output: {{format: [json]}}
tools: [{{name: search, match_url: 'http://{search}/*'}}]
advanced: {{concurrency: 3, seed: 7, settle_ms: 0}}
agent:
  command: '{command}'
  env: {{TOOL_URL: 'http://{search}/q'}}
{extra}golden_prompts: {prompts}
contract:
  name: script
  invariants:
    - {{id: cites, type: contains, value: "According to search", when: no_chaos}}
    - {{id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{{tool: search, mode: error, error_code: 503}}]
"#,
        search = search.addr,
        prompts = serde_json::to_string(prompts).unwrap(),
    )
}

/// `flakestorm contract run` on `yaml` in a fresh folder: exit code, output, report and
/// the agent log.
async fn run(yaml: String) -> (i32, String, Value, String) {
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &yaml);
        let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
        let json = std::fs::read_to_string(dir.path().join("reports/contract.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
        let mut log = String::new();
        for entry in std::fs::read_dir(dir.path().join("reports")).unwrap() {
            let p = entry.unwrap().path();
            if p.to_string_lossy().contains("agent") {
                log.push_str(&std::fs::read_to_string(p).unwrap());
            }
        }
        let report = serde_json::from_str(&json).unwrap();
        (code, format!("{out}\n{err}"), report, log)
    })
    .await
    .unwrap()
}

fn cases(report: &Value) -> &Vec<Value> {
    report["cases"].as_array().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_agent_runs_once_per_case_and_faults_reach_it() {
    let search = origin::search_tool().await;
    let command = format!("exec python3 {} {{prompt}}", script());
    let (code, out, report, log) = run(config(&search, &command, "", &PROMPTS)).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(report["verdict"], "pass", "{out}");
    assert_eq!(cases(&report).len(), 8, "{report}");
    for c in cases(&report) {
        let answer = c["answer"].as_str().unwrap_or_else(|| panic!("{c}"));
        // Exactly its own tool call, whatever ran beside it: attribution by construction.
        let exchanges = c["exchanges"].as_array().unwrap_or_else(|| panic!("{c}"));
        assert_eq!(exchanges.len(), 1, "{c}");
        match c["scenario"].as_str().unwrap() {
            "no-chaos" => {
                assert_eq!(answer, "According to search: ACME Q3 revenue was $4.1B");
                assert!(c["faults"].as_array().unwrap().is_empty(), "{c}");
            }
            _ => {
                assert!(answer.starts_with("Sorry, search is unavailable"), "{c}");
                let f = &c["faults"][0];
                assert_eq!((&f["mode"], &f["applied"]), (&"error".into(), &true.into()));
            }
        }
    }
    // The prompt reached the script as one argument, quotes and all; its stderr is logged.
    assert!(
        log.contains(&format!("the tool was asked for: {}", PROMPTS[1])),
        "{log}"
    );
    assert!(
        log.contains("--- agent script (exit status: 0) ---"),
        "{log}"
    );
    assert_eq!(
        report["run"]["agent"],
        "agent.command (a script, run once per case)"
    );
    // Each case is its own process on its own lane: nothing to serialize, nothing to warn.
    assert!(!out.contains("one agent process"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_reads_its_prompt_on_stdin_and_a_failure_says_why() {
    let search = origin::search_tool().await;
    let command = format!("exec python3 {} --json", script());
    let extra = "  response_path: answer\n";
    let prompts = ["Q3 revenue?", "please crash"];
    let (_, out, report, log) = run(config(&search, &command, extra, &prompts)).await;
    let by_prompt = |p: &str| {
        cases(&report)
            .iter()
            .find(|c| c["prompt"] == p && c["scenario"] == "no-chaos")
            .unwrap_or_else(|| panic!("{p}: {report}"))
            .clone()
    };
    let ok = by_prompt("Q3 revenue?");
    assert_eq!(
        ok["answer"], "According to search: ACME Q3 revenue was $4.1B",
        "{out}"
    );
    let crashed = by_prompt("please crash");
    assert!(crashed["answer"].is_null(), "{crashed}");
    assert_eq!(
        crashed["error"],
        "agent script exited (exit status: 4): script agent: asked to crash"
    );
    assert!(
        log.contains("--- agent script (exit status: 4) ---"),
        "{log}"
    );
}

/// A script the machine cannot start (no `sh` on the PATH its `agent.env` gives it): its
/// cases are not judged, the agent not blamed, and its command (which may hold a secret
/// expanded at load) is in no report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_cannot_start_leaves_its_cases_not_judged_and_its_command_unsaid() {
    let search = origin::search_tool().await;
    let yaml = config(&search, "echo s3cr3t-token {prompt}", "", &PROMPTS[..2])
        .replace("env: {TOOL_URL:", "env: {PATH: '/nowhere', TOOL_URL:");
    let (code, out, report, _) = run(yaml).await;
    assert_ne!(code, 0, "nothing was tested: {out}");
    for c in cases(&report) {
        let why = c["not_judged"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("`sh -c <agent.command>` did not start: "),
            "{c:#}"
        );
    }
    let said = format!("{out}{report}");
    assert!(!said.contains("s3cr3t"), "{said}");
}

#[test]
fn an_agent_with_neither_endpoint_nor_command_is_a_load_error_naming_both_forms() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "agent: {timeout: 1000}\ngolden_prompts: [hi]\n");
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    let text = format!("{out}{err}");
    assert!(text.contains("agent.endpoint: missing"), "{text}");
    assert!(
        text.contains("only agent.command with the prompt as `{prompt}`"),
        "{text}"
    );
}

#[test]
fn the_starters_script_form_validates_in_place_of_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = flakestorm(&["init"], dir.path());
    assert_eq!(code, 0);
    assert!(out.contains("agent.command with {prompt}"), "{out}");
    let starter = std::fs::read_to_string(dir.path().join("flakestorm.yaml")).unwrap();
    // The commented script section, uncommented; the endpoint section, dropped.
    let script: String = starter
        .lines()
        .skip_while(|l| *l != "# agent:")
        .take_while(|l| l.starts_with("# ") && !l.trim_end().ends_with('#'))
        .map(|l| format!("{}\n", &l[2..]))
        .collect();
    assert!(
        script.contains("command: \"python my_agent.py {prompt}\""),
        "{script}"
    );
    let (head, rest) = starter.split_once("\nagent:\n").unwrap();
    let rest = rest.split_once("\n\n").unwrap().1;
    let yaml = format!("{head}\n{script}\n{rest}");
    std::fs::write(dir.path().join("flakestorm.yaml"), &yaml).unwrap();
    let (code, out, err) = flakestorm_env(&["validate"], dir.path(), &[("OPENAI_API_KEY", "x")]);
    assert_eq!(
        (code, out.trim()),
        (0, "flakestorm.yaml: ok"),
        "{err}\n{yaml}"
    );
}

/// A case that made no request through the proxy gets no tape (an empty HAR replays
/// nothing), and the run says so once instead of listing empty files as tapes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cases_without_traffic_get_no_empty_tapes() {
    let search = origin::search_tool().await;
    let yaml = config(&search, "echo According to nothing", "", &PROMPTS[..2]).replace(
        "output: {format: [json]}",
        "output: {format: [json], tapes: all}",
    );
    let out = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &yaml);
        let (_, out, err) = flakestorm(&["contract", "run"], dir.path());
        let tapes = dir.path().join("reports/contract.tapes");
        let files = std::fs::read_dir(&tapes).map_or(0, |d| d.count());
        assert_eq!(
            files,
            0,
            "no empty tape in {}: {out}\n{err}",
            tapes.display()
        );
        format!("{out}\n{err}")
    })
    .await
    .unwrap();
    assert!(!out.contains("tapes: 4 case(s) in"), "{out}");
    assert!(
        out.contains("tapes: none for 4 case(s) that made no request through the proxy"),
        "{out}"
    );
}

/// A script's case settles as soon as its process tree has exited, whatever `settle_ms`:
/// nothing more of it can come. So at the default window its instances take their next
/// case at once, no case waits for one, and the run says nothing of spare instances (a
/// fast script settling on the clock would keep all twelve busy and make cases wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_settle_ends_when_its_process_tree_exits() {
    let search = origin::search_tool().await;
    // Fast: one tool call through its lane and an answer, a few milliseconds.
    let command = r#"curl -s -o /dev/null "$TOOL_URL?q=x" && echo According to search"#;
    let prompts: Vec<String> = (1..=12).map(|i| format!("question {i}")).collect();
    let prompts: Vec<&str> = prompts.iter().map(String::as_str).collect();
    let yaml = config(&search, command, "", &prompts).replace("settle_ms: 0", "settle_ms: 500");
    let (_, out, report, _) = run(yaml).await;
    assert_eq!(cases(&report).len(), 24, "{out}");
    let warnings = report["warnings"].to_string();
    for never in ["no idle spare", "cases waited for an instance", "asks for"] {
        assert!(!warnings.contains(never), "{never}: {warnings}");
    }
    // The twelve instances it started with ran the 24 cases between them, each free again
    // as soon as its script exited: the pool never grew (one settling on the clock would
    // keep all twelve busy, and it would grow toward one instance per case).
    assert!(
        out.contains("pool: 3 running + 9 settling (12 agent instances started"),
        "{out}"
    );
    let most = cases(&report)
        .iter()
        .filter_map(|c| c["instance"].as_u64())
        .max();
    assert!(most.is_some_and(|n| n <= 12), "{most:?}\n{out}");
}
