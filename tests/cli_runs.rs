//! Run commands as a user meets them: an agent that bypasses the proxy, a `serve` already on
//! the default ports, `-o` naming a folder, proxy credentials, an agent that crashes. Each
//! test starts a Python agent with `agent.command`.

mod common;

use common::cli::*;

fn report(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const CONTRACT: &str = "contract:\n  name: Research agent\n  invariants:\n    - {id: answers, type: output_not_empty}\n    - {id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}\n  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{tool: web_search, mode: error, error_code: 503}]\n";

/// Without the proxy variables (here: its command unsets them before the agent starts),
/// the agent calls its tool directly: nothing is tested, and the run says so, exit 2, not a
/// PASS, naming what flakestorm set and that the agent's stack ignored it.
#[test]
fn an_agent_that_bypasses_the_proxy_is_not_tested() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let yaml = agent.yaml.replace(
        "command: \"exec",
        "command: \"unset HTTPS_PROXY HTTP_PROXY https_proxy http_proxy; exec",
    );
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        format!("{yaml}{CONTRACT}"),
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 2, "{out}\n{err}");
    for want in [
        "search-down  0 of 1 cases judged, 0 exchanges; faults: tool_faults[0] (error) never fired  [NOT TESTED]",
        "? not tested: admits-outage under search-down",
        "so no number would measure the agent\n  - no request crossed the proxy during the run: flakestorm started the agent (agent.command) with HTTPS_PROXY and HTTP_PROXY set to its proxy, but the agent's HTTP client ignores them (httpx or requests with trust_env=False, an SDK given its own http_client, a gRPC client) or the command unsets them",
        "(exit 2: the run could not judge the agent",
    ] {
        assert!(
            out.contains(want),
            "missing {want:?} in:\n{out}\nstderr:\n{err}"
        );
    }
    let r = report(&dir.path().join("reports/contract.json"));
    assert_eq!(
        (&r["verdict"], &r["score"]["passed"]),
        (&"not_tested".into(), &false.into())
    );
}

/// A `flakestorm serve` holds the default ports (8080, 8081): a run that starts its own
/// agent does not need them and takes free ones. Checked without binding them here (what
/// else runs on the machine may hold them, or need them): the run's own listeners, listed
/// from `/proc` as its agent starts (tests/fixtures/agent/listeners.py), are on none of the
/// default ports, so a serve there is no obstacle.
#[test]
fn a_run_works_while_serve_holds_the_default_ports() {
    let defaults = flakestorm::config::Config::default();
    let defaults = [&defaults.proxy.listen, &defaults.control.listen].map(|l| *l.get().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent");
    let listeners = dir.path().join("listeners.txt");
    let list = format!(
        "command: \"python3 {} > {}; exec",
        fixtures.join("listeners.py").display(),
        listeners.display()
    );
    let yaml = agent.yaml.replace("command: \"exec", &list);
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        format!("{yaml}{CONTRACT}"),
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(": PASS"), "{out}");
    // Its proxy and its control API, each on a port of its own, none of them a default.
    let ports: Vec<u16> = std::fs::read_to_string(&listeners)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(ports.len(), 2, "the run's listeners: {ports:?}");
    for default in defaults {
        assert!(!ports.contains(&default.port()), "{default} in {ports:?}");
        assert!(!err.contains(&default.to_string()), "{err}");
    }
    let proxy = err.split("proxy on 127.0.0.1:").nth(1);
    let proxy = proxy.and_then(|rest| rest.split(' ').next()?.parse::<u16>().ok());
    assert!(
        proxy.is_some_and(|p| ports.contains(&p)),
        "{ports:?}\n{err}"
    );
    // Off a terminal, progress is a line per case on stderr.
    for want in [
        "flakestorm: [1/2] no-chaos: \"What was ACME's Q3 revenue?\": answered in ",
        "flakestorm: [2/2] search-down: \"What was ACME's Q3 revenue?\": answered in ",
        ", 1 fault(s)",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    let r = report(&dir.path().join("reports/contract.json"));
    assert_eq!(
        r["cases"][1]["faults"][0]["mode"], "error",
        "the fault reached the agent"
    );
}

/// `-o` naming a folder writes inside it; a path that cannot be written is refused before
/// the agent is even started.
#[test]
fn report_paths_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        format!("{}{CONTRACT}", agent.yaml),
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "out/"], dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(dir.path().join("out/contract.json").exists());
    assert!(
        dir.path().join("out/contract.agent.log").exists(),
        "the agent's output beside the report"
    );
    let (code, _, err) = flakestorm(&["ci", "-o", "out", "--quiet"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        dir.path().join("out/ci.json").exists(),
        "an existing folder: inside it"
    );
    std::fs::write(dir.path().join("afile"), "x").unwrap();
    let (code, out, err) = flakestorm(&["contract", "run", "-o", "afile/r.json"], dir.path());
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("report path afile/r.json: afile is not a folder"),
        "{err}"
    );
    assert!(!out.contains("cases"), "no case ran: {out}");
}

/// With `proxy.users`, the agent flakestorm starts gets the credentials in its proxy URL.
#[test]
fn the_agent_gets_the_proxy_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let users = "proxy:\n  users: [{name: agent, password: \"${FS_TEST_PW}\"}]\n";
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        format!("{}{users}{CONTRACT}", agent.yaml),
    )
    .unwrap();
    let (code, out, err) = flakestorm_env(
        &["contract", "run"],
        dir.path(),
        &[("FS_TEST_PW", "s3cret:/@")],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let r = report(&dir.path().join("reports/contract.json"));
    let ex = &r["cases"][0]["exchanges"][0];
    assert_eq!(
        (&ex["client_user"], &ex["target"]["name"]),
        (&"agent".into(), &"web_search".into())
    );
}

/// An agent that dies during the run: the cases it died in or after are not judged, with
/// its exit as the reason (the run is not tested, exit 2), and the report and summary show
/// the end of its log.
#[test]
fn an_agent_that_crashes_during_the_run_is_reported_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let port = agent_port();
    std::fs::write(
        dir.path().join("agent.py"),
        r#"import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        b = json.dumps({"result": "ok"}).encode()
        self.send_response(200); self.send_header("content-length", str(len(b))); self.end_headers()
        self.wfile.write(b); self.wfile.flush()
        print("agent: out of memory, exiting", file=sys.stderr, flush=True)
        os._exit(3)
    def do_GET(self):
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#,
    )
    .unwrap();
    write_config(
        dir.path(),
        &format!(
            "agent:\n  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'exec python3 agent.py {port}'\n  ready_url: 'http://127.0.0.1:{port}/health'\ngolden_prompts: [one, two]\ncontract:\n  name: c\n  invariants: [{{id: answers, type: completes}}]\n"
        ),
    );
    let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
    // The case it crashed in cannot be judged: the run did not test what it claims.
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("the agent process (agent.command) exited (exit status: 3) during this case")
            || out.contains(
                "the agent process (agent.command) had exited (exit status: 3) before this case"
            ),
        "the exit is the verdict's reason: {out}"
    );
    assert!(
        out.contains("warning: the agent (agent.command) exited during the run (exit status: 3)")
            && out.contains("agent: out of memory, exiting"),
        "{out}"
    );
}

/// `--baseline last-pass --max-drop X`: the first run has nothing to compare with; a later
/// run that still passes but scores more than X below the last passing run fails; an
/// unknown baseline id is a usage error. The runs are in the history (`runs list`).
#[test]
fn a_score_that_drops_below_the_baseline_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let write = |extra: &str| {
        let contract = CONTRACT.replace("  chaos_matrix:", &format!("{extra}  chaos_matrix:"));
        std::fs::write(
            dir.path().join("flakestorm.yaml"),
            format!("{}{contract}", agent.yaml),
        )
        .unwrap();
    };
    write("");
    let gate = [
        "contract",
        "run",
        "--baseline",
        "last-pass",
        "--max-drop",
        "5",
        "--min-score",
        "10",
    ];
    let (code, out, err) = flakestorm(&gate, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("--baseline last-pass: no passing contract run of this config (sha256:")
            && err.contains("or of contract `Research agent` is stored yet"),
        "{err}"
    );
    // A low-severity check that fails everywhere: still a pass at a pass mark of 10.
    write("    - {id: says-q4, type: contains, value: Q4-figures, severity: low}\n");
    let (code, out, err) = flakestorm(&gate, dir.path());
    assert!(out.contains(": PASS"), "{out}\n{err}");
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("regressions against the baseline:\n  - contract "),
        "{out}"
    );
    assert!(out.contains("below 100.0 in baseline run "), "{out}");
    // Another agent's config in the same folder (the same store): the runs above passed,
    // but they are no baseline of its.
    let other = format!(
        "{}{}",
        agent.yaml,
        CONTRACT.replace("name: Research agent", "name: Billing agent")
    );
    std::fs::write(dir.path().join("billing.yaml"), other).unwrap();
    let mut billing = gate.to_vec();
    billing.splice(2..2, ["-c", "billing.yaml"]);
    let (code, out, err) = flakestorm(&billing, dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("or of contract `Billing agent` is stored yet") && !out.contains("baseline"),
        "{out}\n{err}"
    );
    let (code, _, err) = flakestorm(&["contract", "run", "--baseline", "nope"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("--baseline nope: no run nope"), "{err}");
    let (code, out, _) = flakestorm(&["runs", "list", "--kind", "contract"], dir.path());
    assert_eq!(code, 0);
    assert!(out.matches("contract").count() >= 2, "{out}");
}
