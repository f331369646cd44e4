//! The binary's commands as a user runs them: exit codes, messages, files.

mod common;

use std::process::Command;

use common::cli::*;

#[test]
fn validate_lists_every_error_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "proxy:\n  listen: nowhere\n  users: [{name: a}]\ncontrol:\n  listen: 0.0.0.0:1\n",
    )
    .unwrap();
    let (code, _, err) = flakestorm(&["validate", "-c", "bad.yaml"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.yaml has 2 errors"), "{err}");
    assert!(
        err.contains("proxy.users[0]: missing field `password`"),
        "{err}"
    );
    assert!(
        err.contains("control.token: required when control.listen (0.0.0.0:1)"),
        "{err}"
    );

    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        "proxy:\n  listen: 127.0.0.1:9999\n",
    )
    .unwrap();
    let (code, out, _) = flakestorm(&["validate"], dir.path());
    assert_eq!(
        (code, out.trim()),
        (0, "flakestorm.yaml: ok"),
        "./flakestorm.yaml is the default"
    );

    let (code, _, err) = flakestorm(&["validate", "-c", "missing.yaml"], dir.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("missing.yaml") && err.contains("cannot read config file"),
        "{err}"
    );
}

/// `validate` needs no secret: a `${VAR}` that is not set is a warning naming where it is
/// used (the v2 examples name `${OPENAI_API_KEY}`); a run of the same file refuses it.
#[test]
fn validate_needs_no_secret_but_a_run_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        "agent: {endpoint: \"http://127.0.0.1:9/invoke\"}\ngolden_prompts: [hi]\nmodel: {provider: openai, name: gpt-4o-mini, api_key: \"${FLAKESTORM_TEST_UNSET_KEY}\"}\n",
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!((code, out.trim()), (0, "flakestorm.yaml: ok"), "{err}");
    assert!(
        err.contains(
            "warning: environment variable `FLAKESTORM_TEST_UNSET_KEY` is not set (used at \
             model.api_key): checked with a stand-in; a run needs it"
        ),
        "{err}"
    );
    let (code, _, err) = flakestorm(&["run"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("environment variable `FLAKESTORM_TEST_UNSET_KEY` is not set"),
        "{err}"
    );
}

#[test]
fn ca_init_export_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = flakestorm(&["ca", "init"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ca.pem"), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("certs/ca.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (code, _, err) = flakestorm(&["ca", "init"], dir.path());
    assert_eq!(code, 1);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );

    let (_, pem, _) = flakestorm(&["ca", "export"], dir.path());
    assert_eq!(
        pem,
        std::fs::read_to_string(dir.path().join("certs/ca.pem")).unwrap()
    );
    let (_, path, _) = flakestorm(&["ca", "path"], dir.path());
    assert!(path.trim().ends_with("certs/ca.pem"), "{path}");

    let (code, _, err) = flakestorm(&["ca", "export", "--ca-dir", "elsewhere"], dir.path());
    assert_eq!(code, 1);
    assert!(
        err.contains("no CA in") && err.contains("flakestorm ca init"),
        "{err}"
    );
}

#[test]
fn demo_runs_ci_offline_and_reports_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = flakestorm(&["demo"], dir.path());
    assert_eq!(code, 0, "{err}");
    for want in [
        "contract \"Demo research agent\": 18 agent calls",
        "search-down (error): 3",
        "llm-429 (rate_limit): 3",
        "llm-rate-limited  3 of 3 cases judged, 12 exchanges; faults: llm-429 (rate_limit) ×3",
        // What the agent did with each fault, from the wire (docs/outcomes.md).
        "search-down: 3 degraded honest",
        "search-empty: 3 fabricated",
        "fabricated \"What was ACME's Q3 revenue?\": the answer states `9%`, found in none of",
        "search-corrupt: 3 propagated",
        "llm-rate-limited: 3 recovered",
        "✗ honest-under-faults under search-empty (medium): 3 of 3 prompts failed;",
        "score 92.9/100 (pass mark 70): PASS",
        "contract   ",
        "mutation run: 30 of 30 judged variants passed (30 sent, seed 42)",
        "  mutation  100.0",
        "the journal keeps `[REDACTED]`",
        "`flakestorm demo --print-config`",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("cites-source"))
        .unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["cites-source", "✓", "·", "·", "·", "·", "·"],
        "when: no_chaos"
    );
    let report = out
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .and_then(|l| l.split(" (").next())
        .unwrap();
    let ci: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(ci["schema"], "flakestorm.ci/2");
    assert_eq!(
        (&ci["passed"], &ci["verdict"]),
        (&true.into(), &"pass".into())
    );
    // Every scenario's fault reached the agent's own traffic, and the report proves it.
    for c in ci["contract"]["coverage"].as_array().unwrap() {
        for r in c["rules"].as_array().unwrap() {
            assert!(r["applied"].as_u64().unwrap() > 0, "{c}");
        }
    }
    // Every faulted case's class with its evidence is in the report.
    let classes: Vec<(&str, &str)> = ci["contract"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| Some((c["scenario"].as_str()?, c["outcome"]["class"].as_str()?)))
        .collect();
    for (scenario, class) in [
        ("search-empty", "fabricated"),
        ("llm-rate-limited", "recovered"),
        ("search-corrupt", "propagated"),
    ] {
        assert!(classes.contains(&(scenario, class)), "{classes:?}");
    }
    // The model's request for the search tool was read off the wire.
    let first = &ci["contract"]["cases"][0];
    assert_eq!(first["scenario"], "no-chaos");
    let asked: Vec<&serde_json::Value> = first["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("llm_tool_calls"))
        .collect();
    assert_eq!(asked, [&serde_json::json!(["web_search"])]);
    // A binary-only user can read the demo's rules.
    let (code, yaml, _) = flakestorm(&["demo", "--print-config"], dir.path());
    assert_eq!(code, 0);
    assert_eq!(yaml, include_str!("../config/demo.yaml"));
}

#[test]
fn serve_with_a_bad_config_never_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("f.yaml"),
        "proxy:\n  listen: 127.0.0.1:0\n  intercept: ['[']\nnope: 1\n",
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["serve", "-c", "f.yaml"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("listening"), "{out}");
    assert!(
        err.contains("proxy.intercept[0]: invalid glob") && err.contains("nope: unknown section"),
        "{err}"
    );
}

#[test]
fn profiles_list_show_and_unknown_names() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = flakestorm(&["profiles", "list"], dir.path());
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 7, "{out}");
    assert!(
        out.lines().all(|l| l.split_whitespace().count() > 3),
        "every profile has a description:\n{out}"
    );
    let (code, yaml, _) = flakestorm(&["profiles", "show", "api_outage"], dir.path());
    assert_eq!(code, 0);
    assert!(
        yaml.contains("mode: error") && yaml.contains("mode: server_error"),
        "{yaml}"
    );
    let (code, _, err) = flakestorm(&["profiles", "show", "nope"], dir.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown chaos profile `nope`") && err.contains("degraded_llm"),
        "{err}"
    );
    let (code, out, err) = flakestorm(&["serve", "--chaos-profile", "nope"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        !out.contains("listening"),
        "never starts with an unknown profile"
    );
}

/// `contract run` end to end: flakestorm starts the (Python) agent with the proxy
/// environment, waits for it, runs the matrix, writes the report, and exits by the verdict.
#[test]
fn contract_run_starts_the_agent_and_scores_it() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let yaml = format!(
        "{}contract:\n  name: Research agent\n  invariants:\n    - {{id: cites-source, type: regex, pattern: \"(?i)according to\", severity: critical}}\n  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{{tool: web_search, mode: error, error_code: 503}}]\n",
        agent.yaml
    );
    std::fs::write(dir.path().join("flakestorm.yaml"), &yaml).unwrap();
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "out/report.json"], dir.path());
    // The agent cannot cite its source when search is down: a critical failure, exit 1.
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("✗ cites-source under search-down"), "{out}");
    assert!(out.contains("FAIL"), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["schema"], "flakestorm.contract/2");
    assert_eq!(
        report["config_digest"],
        flakestorm::config::digest(yaml.as_bytes())
    );
    assert_eq!(report["agent_calls"], 2);
    let down = &report["cases"][1];
    assert_eq!(down["scenario"], "search-down");
    assert!(
        down["answer"].as_str().unwrap().contains("unavailable"),
        "{down}"
    );
    assert_eq!(
        down["faults"][0]["mode"], "error",
        "the fault reached the agent's own tool call"
    );
    // `contract score`: the same run, only the score on stdout, same exit code.
    let (code, out, err) = flakestorm(&["contract", "score", "-o", "out/s.json"], dir.path());
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(
        out,
        format!("{:.1}\n", report["score"]["value"].as_f64().unwrap())
    );
}

#[test]
fn chaos_only_runs_and_ci_combine_phases() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let yaml = format!(
        "{}invariants:\n  - {{type: contains, value: unavailable}}\ncontract:\n  name: c\n  invariants:\n    - {{id: answers, type: output_not_empty}}\nmutations: {{count: 2, types: [noise, prompt_injection, paraphrase]}}\n",
        agent.yaml
    );
    std::fs::write(dir.path().join("flakestorm.yaml"), &yaml).unwrap();
    // `api_outage` also breaks the LLM, and this agent has none: half the profile could
    // not be tested, so the run says so and does not pass, whatever the score.
    let (code, out, err) = flakestorm(
        &["run", "--chaos-only", "--chaos-profile", "api_outage"],
        dir.path(),
    );
    assert_eq!(code, 2, "{out}\n{err}");
    for want in [
        "1 of 1 judged prompts passed",
        "tools-down (error) ×1, llm-down (server_error) never fired",
        "NOT TESTED, no score: the run did not test all it claims",
        "rule `llm-down` (server_error) never reached the agent's traffic: no request matched LLM calls",
        "the proxy saw http://127.0.0.1:",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/chaos.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["verdict"], "not_tested");
    // `run`: mutations without chaos. The tool works, so no answer says "unavailable":
    // every variant fails; paraphrase needs a model and is skipped, saying so.
    let (code, out, err) = flakestorm(&["run"], dir.path());
    assert_eq!(code, 1, "{out}\n{err}");
    for want in [
        "mutation run: 0 of 4 judged variants passed (4 sent",
        "skipped: paraphrase needs the `model:` LLM",
        "score 0.0/100 (pass mark 70): FAIL",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // Progress off a terminal: a line per case with the pass rate so far.
    for want in [
        "flakestorm: [1/4] mutations: ",
        ": answered in ",
        "ms: failed; pass rate so far 0% (0 of 1 judged)",
        "ms: failed; pass rate so far 0% (0 of 4 judged)",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/mutation.json")).unwrap(),
    )
    .unwrap();
    let kinds: Vec<&str> = report["mutants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["noise", "prompt_injection", "noise", "prompt_injection"]
    );
    // ci: no `chaos:` section, so the chaos phase says why it did not run; the mutation
    // phase fails as `run` did, and so does the whole.
    let (code, out, err) = flakestorm(&["ci", "--min-score", "90"], dir.path());
    assert_eq!(code, 1, "{out}\n{err}");
    for want in [
        "mutation    0.0  FAIL",
        "contract  100.0  PASS",
        "chaos     skipped: needs a `chaos:` section",
        "replay    skipped: no `replays.sessions`",
        "(pass mark 90): FAIL",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // A chaos section whose every rule reaches the agent: tested, and passed.
    let chaos = "chaos:\n  tool_faults: [{tool: web_search, mode: error, error_code: 503}]\n";
    std::fs::write(dir.path().join("flakestorm.yaml"), format!("{yaml}{chaos}")).unwrap();
    let (code, out, _) = flakestorm(&["run", "--chaos-only", "--quiet"], dir.path());
    assert_eq!((code, out.as_str()), (0, "chaos PASS: 100.0/100\n"));
    let (code, out, _) = flakestorm(&["ci", "--json"], dir.path());
    let ci: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        (code, ci["schema"].as_str(), ci["verdict"].as_str()),
        (1, Some("flakestorm.ci/2"), Some("fail"))
    );
    let phases: Vec<(&str, &str)> = ci["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?, p["verdict"].as_str()?)))
        .collect();
    assert_eq!(
        phases,
        [
            ("mutation", "fail"),
            ("contract", "pass"),
            ("chaos", "pass")
        ]
    );
    // A chaos section whose rule matches no call: that phase is not tested, printed so,
    // never as a score, and left out of the overall.
    let chaos = "chaos:\n  tool_faults: [{tool: web_search, mode: error, error_code: 503, match_url: \"http://nowhere.invalid/*\"}]\n";
    std::fs::write(dir.path().join("flakestorm.yaml"), format!("{yaml}{chaos}")).unwrap();
    let (code, out, err) = flakestorm(&["ci"], dir.path());
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("chaos     not tested: left out of the overall  (weight"),
        "{out}"
    );
    assert!(!out.contains("chaos       0.0"), "{out}");
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        format!(
            "{yaml}chaos:\n  tool_faults: [{{tool: web_search, mode: error, error_code: 503}}]\n"
        ),
    )
    .unwrap();
    // `run --chaos`: the same variants under the tool fault, which this agent reports.
    let (code, out, err) = flakestorm(&["run", "--chaos", "--quiet"], dir.path());
    assert_eq!(
        (code, out.as_str()),
        (0, "mutation PASS: 100.0/100\n"),
        "{err}"
    );
}

#[test]
fn init_writes_a_starter_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = flakestorm(&["init"], dir.path());
    assert_eq!(code, 0);
    assert!(out.contains("wrote flakestorm.yaml"));
    let (code, _, err) = flakestorm(&["init"], dir.path());
    assert_eq!(code, 1);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!((code, out.trim()), (0, "flakestorm.yaml: ok"), "{err}");
    assert!(err.is_empty(), "a starter with no warnings: {err}");
}

#[test]
fn contract_run_without_a_reachable_agent_exits_2_before_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    write_config(
        dir.path(),
        &format!(
            "agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\ngolden_prompts: [hi]\ncontract:\n  name: c\n  invariants: [{{id: a, type: completes}}]\n"
        ),
    );
    let (code, _, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "agent at http://127.0.0.1:{port}/invoke is unreachable"
        )),
        "{err}"
    );
    assert!(
        !dir.path().join("reports").exists(),
        "no report: no case ran"
    );
}

/// Ctrl-C during a run: flakestorm stops the agent it started (its whole process group:
/// here the agent is the shell's child, not the shell), says so, and exits 130, instead of
/// leaving the agent running.
#[test]
#[allow(clippy::disallowed_methods)] // waits on a real process the kernel reaps in real time
fn ctrl_c_stops_the_run_and_the_agent_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let port = agent_port();
    let fifo = dir.path().join("invoked");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // Accepts connections, never answers; tells the test its pid once a case is invoked.
    std::fs::write(
        dir.path().join("agent.py"),
        r#"import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    c.settimeout(0.5)
    try:
        data = c.recv(1)
    except socket.timeout:
        continue
    if data:
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
"#,
    )
    .unwrap();
    write_config(
        dir.path(),
        &format!(
            "agent:\n  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'python3 agent.py {port} {} & wait'\n  timeout: 60000\ngolden_prompts: [hi]\ncontract:\n  name: c\n  invariants: [{{id: a, type: completes}}]\n",
            fifo.display()
        ),
    );
    let mut run = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["contract", "run"])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || tx.send(std::fs::read_to_string(reader).unwrap()));
    let Ok(agent_pid) = rx.recv_timeout(std::time::Duration::from_secs(60)) else {
        let _ = run.kill();
        let out = run.wait_with_output().unwrap();
        panic!(
            "no case reached the agent: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let status = Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // An agent left running would hold the stderr pipe open: bound the wait, then clean up.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(run.wait_with_output().unwrap()));
    let Ok(out) = rx.recv_timeout(std::time::Duration::from_secs(30)) else {
        let _ = Command::new("kill")
            .args(["-KILL", agent_pid.trim()])
            .status();
        panic!("flakestorm did not finish: the agent it started kept running");
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let running = || {
        std::fs::read_to_string(format!("/proc/{}/stat", agent_pid.trim())).is_ok_and(|stat| {
            stat.rsplit(") ")
                .next()
                .is_some_and(|s| !s.starts_with('Z'))
        })
    };
    // flakestorm sent SIGKILL to the agent's group before it exited; the kernel may take
    // a moment to finish the process off.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(), "the agent (pid {agent_pid}) was stopped");
    assert!(
        !dir.path().join("reports/contract.json").exists(),
        "no report for a stopped run"
    );
    assert!(
        dir.path().join("reports/contract.agent.log").exists(),
        "the agent's log stays for a look"
    );
}

/// An agent endpoint that already answers before `agent.command` starts belongs to some
/// other process (an agent left from an earlier run): the run refuses to use it.
#[test]
fn a_port_taken_before_the_agent_starts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    write_config(
        dir.path(),
        &format!(
            "agent: {{endpoint: 'http://127.0.0.1:{port}/invoke', command: 'exit 0'}}\ngolden_prompts: [hi]\ncontract:\n  name: c\n  invariants: [{{id: a, type: completes}}]\n"
        ),
    );
    let (code, _, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "http://127.0.0.1:{port}/invoke accepted connections before agent.command started"
        )),
        "{err}"
    );
}

#[test]
fn usage_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flakestorm.yaml"), "golden_prompts: [hi]\n").unwrap();
    let (code, _, err) = flakestorm(&["contract", "validate"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no `contract:` section"), "{err}");
    for bad in ["nan", "101", "-1", "high"] {
        let arg = format!("--min-score={bad}");
        let (code, _, err) = flakestorm(&["ci", &arg], dir.path());
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains(&format!("`{bad}` is not a score from 0 to 100")),
            "{err}"
        );
    }
}

#[test]
fn an_unreachable_embeddings_endpoint_stops_the_run_before_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    write_config(
        dir.path(),
        &format!(
            "agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\ngolden_prompts: [hi]\ncontract:\n  name: c\n  invariants: [{{id: a, type: similarity, expected: hi}}]\nadvanced:\n  embeddings: {{url: 'http://127.0.0.1:{port}/v1/embeddings', model: m}}\n"
        ),
    );
    let (code, _, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 2, "{err}");
    let expected =
        format!("embeddings endpoint http://127.0.0.1:{port}/v1/embeddings: unreachable: ");
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("pre-flight of advanced.embeddings"), "{err}");
    assert!(!dir.path().join("reports").exists(), "no case ran");
}
