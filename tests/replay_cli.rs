//! `flakestorm replay run` end to end, the issue's proof: a session whose tool answered 504
//! makes the agent's own tool call receive 504 during replay while the real tool origin
//! receives nothing; an agent fixed to handle it passes the same session. Also: a bad
//! session file and a contract that resolves to nothing fail their own sessions only.

mod common;

use common::cli::{flakestorm, incident_config};
use common::origin;

const CONTRACT: &str = r#"
golden_prompts: ["What was ACME's Q3 revenue?"]
contract:
  name: Research Agent Contract
  invariants:
    - {id: completes, type: completes, severity: critical}
    - {id: admits-outage, type: regex, pattern: "(?i)unavailable", when: tool_faults_active, severity: high}
    - {id: cites-search, type: contains, value: "According to search", when: no_chaos}
"#;

const SESSION: &str = r#"
id: incident-504
name: search timed out
source: production
input: "What was ACME's Q3 revenue?"
contract: Research Agent Contract
expected_failure: the search tool timed out (504) and the agent crashed
tool_responses:
  - {tool: web_search, status: 504, response: null}
"#;

/// The config of `dir`: the incident agent (fixed or not) with its search tool at `tool`.
fn config(dir: &std::path::Path, tool: std::net::SocketAddr, fixed: bool, extra: &str) {
    incident_config(dir, tool, fixed, &format!("{CONTRACT}{extra}"));
}

async fn replay(dir: &std::path::Path, args: &[&str]) -> (i32, String, String, serde_json::Value) {
    let (dir, args) = (
        dir.to_path_buf(),
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
    );
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = flakestorm(&args, &dir);
        let report = std::fs::read_to_string(dir.join("replay.json"))
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(serde_json::Value::Null);
        (code, out, err, report)
    });
    out.await.unwrap()
}

#[tokio::test]
async fn a_504_incident_reaches_the_agent_and_the_fixed_agent_passes_it() {
    let tool = origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("replays")).unwrap();
    std::fs::write(dir.path().join("replays/incident_504.yaml"), SESSION).unwrap();
    let args = ["replay", "run", "replays", "-o", "replay.json"];

    config(dir.path(), tool.addr, false, "");
    let (code, out, err, r) = replay(dir.path(), &args).await;
    assert_eq!(
        code, 1,
        "the unfixed agent fails the incident\n{out}\n{err}"
    );
    assert_eq!(r["schema"], "flakestorm.replay/1");
    let s = &r["sessions"][0];
    assert_eq!(
        (&s["id"], &s["verdict"]),
        (&"incident-504".into(), &"fail".into())
    );
    assert_eq!(
        s["expected_failure"],
        "the search tool timed out (504) and the agent crashed"
    );
    assert_eq!((&s["recorded"], &s["served"]), (&1.into(), &1.into()));
    let case = &r["cases"][0];
    assert!(
        case["error"]
            .as_str()
            .unwrap()
            .contains("the search tool answered HTTP 504"),
        "the agent's own tool call received the recorded 504: {case}"
    );
    let ex = &case["exchanges"][0];
    assert_eq!(
        (&ex["target"]["kind"], &ex["target"]["name"]),
        (&"tool".into(), &"web_search".into()),
        "{ex}"
    );
    assert_eq!(ex["fault"]["rule"], "replay");
    assert_eq!(ex["fault"]["mode"], "replayed");
    assert!(
        out.contains("incident: the search tool timed out (504)"),
        "{out}"
    );
    assert_eq!(tool.log.len(), 0, "the real tool origin received nothing");

    config(dir.path(), tool.addr, true, "");
    let (code, out, err, r) = replay(dir.path(), &args).await;
    assert_eq!(
        code, 0,
        "the fixed agent passes the same session\n{out}\n{err}"
    );
    let s = &r["sessions"][0];
    assert_eq!(s["verdict"], "pass", "{s}");
    let answer = r["cases"][0]["answer"].as_str().unwrap();
    assert!(answer.contains("(HTTP 504)"), "{answer}");
    let checks: Vec<(&str, &str)> = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["invariant"].as_str().unwrap(),
                c["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("completes", "pass"),
            ("admits-outage", "pass"),
            ("cites-search", "not_applicable")
        ]
    );
    assert_eq!(r["score"], 100.0);
    assert_eq!(tool.log.len(), 0, "still nothing reached the real tool");
    // The saved report reads back as a replay report and renders.
    let (code, md, err) = run(
        dir.path(),
        &["report", "replay.json", "-f", "markdown", "-o", "-"],
    )
    .await;
    assert_eq!(code, 0, "{md}\n{err}");
    assert!(md.contains("replay"), "{md}");

    // ci runs the replay phase when replays.sessions is set, beside the contract phase.
    let sessions = "replays:\n  sessions: [{file: replays/incident_504.yaml}]\n";
    config(dir.path(), tool.addr, true, sessions);
    let (code, out, err) = run(dir.path(), &["ci", "-o", "ci.json"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("replay    100.0  PASS"), "{out}");
    let ci: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ci.json")).unwrap())
            .unwrap();
    assert_eq!(ci["replay"]["sessions"][0]["verdict"], "pass", "{ci}");
    assert_eq!(
        tool.log.len(),
        1,
        "the contract phase's call went to the real tool; the replayed one did not"
    );
}

async fn run(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let (dir, args) = (
        dir.to_path_buf(),
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
    );
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        flakestorm(&args, &dir)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn bad_sessions_fail_alone_and_strict_misses_are_listed() {
    let tool = origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    std::fs::write(sessions.join("a_good.yaml"), SESSION).unwrap();
    std::fs::write(
        sessions.join("b_bad.yaml"),
        "id: broken\ninput: hi\ntool_responses:\n  - tool: web_search\n    status: 700\n",
    )
    .unwrap();
    std::fs::write(
        sessions.join("c_nocontract.yaml"),
        SESSION.replace("incident-504", "lost").replace(
            "contract: Research Agent Contract",
            "contract: Nobody's Contract",
        ),
    )
    .unwrap();
    // Answers nothing for web_search: with on_miss strict, the call is a 599 and a failure.
    std::fs::write(
        sessions.join("d_strict.yaml"),
        "id: strict\ninput: hi\ncontract: Research Agent Contract\ntool_responses:\n  - {tool: other_tool, status: 500}\n",
    )
    .unwrap();
    // A contract given as a path, relative to the session file: a config file's contract.
    std::fs::write(
        dir.path().join("other.yaml"),
        "golden_prompts: [x]\ncontract:\n  name: From File\n  invariants:\n    - {id: says-ok, type: contains, value: \"unavailable\"}\n",
    )
    .unwrap();
    std::fs::write(
        sessions.join("e_by_path.yaml"),
        SESSION.replace("incident-504", "by-path").replace(
            "contract: Research Agent Contract",
            "contract: ../other.yaml",
        ),
    )
    .unwrap();
    config(dir.path(), tool.addr, true, "replays: {on_miss: strict}\n");
    let args = ["replay", "run", "sessions", "-o", "replay.json"];
    let (code, out, err, r) = replay(dir.path(), &args).await;
    assert_eq!(code, 1, "{out}\n{err}");
    let by_id = |id: &str| {
        r["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no session {id}: {r}"))
            .clone()
    };
    assert_eq!(by_id("incident-504")["verdict"], "pass");
    let bad = by_id("b_bad");
    assert_eq!(bad["verdict"], "error");
    let why = bad["reasons"][0].as_str().unwrap();
    assert!(
        why.contains("b_bad.yaml")
            && why.contains("tool_responses[0].status")
            && why.contains("(line 5)"),
        "{why}"
    );
    let lost = by_id("lost");
    assert_eq!(lost["verdict"], "error");
    assert!(
        lost["reasons"][0]
            .as_str()
            .unwrap()
            .contains("contract `Nobody's Contract` resolves to nothing"),
        "{lost}"
    );
    let strict = by_id("strict");
    assert_eq!(strict["verdict"], "fail", "{strict}");
    let miss = format!("GET http://{}/search?q=acme", tool.addr);
    assert_eq!(strict["misses"], serde_json::json!([miss]));
    assert!(
        strict["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap()
                == format!("on_miss: strict: no recorded answer for {miss}")),
        "{strict}"
    );
    assert_eq!(tool.log.len(), 0, "a strict miss is not forwarded");
    let by_path = by_id("by-path");
    assert_eq!(
        (&by_path["verdict"], &by_path["contract"]),
        (&"pass".into(), &"From File".into()),
        "{by_path}"
    );
    assert_eq!(by_path["checks"][0]["invariant"], "says-ok");
    let reasons = r["verdict_reasons"].to_string();
    assert!(
        reasons.contains("session `b_bad` could not be replayed"),
        "{reasons}"
    );
    // Every format lists the sessions that could not run, though they have no case.
    let (code, xml, err) = flakestorm(
        &["report", "replay.json", "-f", "junit", "-o", "-"],
        dir.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        xml.contains("<testcase classname=\"replay.lost\" name=\"lost\" time=\"0.000\">\n      <error message=\"could not run: contract `Nobody&apos;s Contract` resolves to nothing"),
        "{xml}"
    );
    let (_, md, _) = flakestorm(
        &["report", "replay.json", "-f", "markdown", "-o", "-"],
        dir.path(),
    );
    assert!(md.contains("- ⚠️ session b\\_bad could not run: "), "{md}");
    let (_, html, _) = flakestorm(
        &["report", "replay.json", "-f", "html", "-o", "-"],
        dir.path(),
    );
    assert!(
        html.contains("session `lost` could not run: contract"),
        "{html}"
    );
}

/// `replay run --server`: the daemon replays the config's sessions (sent inline) through its
/// own proxy, the client prints the verdict and exits as a local run, and the real tool
/// origin still receives nothing.
#[tokio::test]
async fn a_daemon_replays_the_sessions_of_a_submitted_config() {
    let tool = origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let serve_yaml =
        "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\ndata_dir: history\n";
    std::fs::write(d.join("serve.yaml"), serve_yaml).unwrap();
    let serve = common::serve::serve(&d, &["-c", "serve.yaml"], "warn", false).await;
    let url = serve.url("");
    let inline = SESSION
        .trim()
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("    - {l}\n"),
            _ => format!("      {l}\n"),
        })
        .collect::<String>();
    config(
        &d,
        tool.addr,
        false,
        &format!("data_dir: history\nreplays:\n  sessions:\n{inline}"),
    );
    let args = ["replay", "run", "--server", &url, "-o", "replay.json"];
    let (code, out, err, r) = common::within("the replay on the daemon", replay(&d, &args)).await;
    assert_eq!(code, 1, "the unfixed agent fails, as locally\n{out}\n{err}");
    assert!(err.contains("submitted to http://127.0.0.1:"), "{err}");
    assert_eq!(r["schema"], "flakestorm.replay/1", "{out}\n{err}");
    assert_eq!(r["sessions"][0]["verdict"], "fail");
    assert_eq!(r["cases"][0]["exchanges"][0]["fault"]["mode"], "replayed");
    assert_eq!(tool.log.len(), 0, "the real tool origin received nothing");
    let (code, out, _) = flakestorm(&["runs", "list", "--data-dir", "history"], &d);
    assert_eq!(code, 0);
    assert!(out.contains("replay") && out.contains("failed"), "{out}");
    drop(serve);
}

/// `--trials 3` replays each session three times, each trial its own case: the unfixed
/// agent fails all three, consistently (pass^1 0, not flaky), and the session says so.
#[tokio::test]
async fn a_session_replays_once_per_trial() {
    let tool = origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("replays")).unwrap();
    std::fs::write(dir.path().join("replays/incident_504.yaml"), SESSION).unwrap();
    config(dir.path(), tool.addr, false, "");
    let args = [
        "replay",
        "run",
        "replays",
        "-o",
        "replay.json",
        "--trials",
        "3",
    ];
    let (code, out, err, r) = replay(dir.path(), &args).await;
    assert_eq!(code, 1, "{out}\n{err}");
    let trials: Vec<&serde_json::Value> = r["cases"].as_array().unwrap().iter().collect();
    assert_eq!(trials.len(), 3, "{out}");
    assert_eq!(
        trials
            .iter()
            .map(|c| c["trial"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let s = &r["sessions"][0];
    assert_eq!(s["verdict"], "fail");
    let t = &s["consistency"];
    assert_eq!(
        (&t["trials"], &t["passed"], &t["flaky"]),
        (&3.into(), &0.into(), &false.into())
    );
    assert_eq!(
        tool.log.len(),
        0,
        "every trial was answered from the session"
    );
}
