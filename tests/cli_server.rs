//! `--server`: a run command as a client of a running `flakestorm serve`. The daemon starts
//! the agent with its own proxy, runs the contract, and the client prints the same
//! progress and verdict and exits with the same code as a local run; the run is in the
//! daemon's history.

mod common;

use std::time::Duration;

use common::cli::{flakestorm, python_agent};
use common::serve::Serve;
use common::within;

const CONTRACT: &str = "contract:\n  name: Research agent\n  invariants:\n    - {id: answers, type: output_not_empty}\n    - {id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}\n  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{tool: web_search, mode: error, error_code: 503}]\n";

/// `flakestorm serve` with `yaml` in `dir`, and its control URL once it listens.
async fn serve(dir: &std::path::Path, yaml: &str) -> (Serve, String) {
    std::fs::write(dir.join("serve.yaml"), yaml).unwrap();
    let s = common::serve::serve(dir, &["-c", "serve.yaml"], "warn", false).await;
    let url = s.url("");
    (s, url)
}

const SERVE: &str =
    "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\ndata_dir: history\n";

#[tokio::test]
async fn a_contract_run_on_the_daemon_reports_and_exits_as_a_local_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (_serve, url) = serve(&d, SERVE).await;
    let agent = python_agent();
    // The same data_dir as the daemon's: `--server` sends the token the daemon keeps there.
    std::fs::write(
        d.join("run.yaml"),
        format!(
            "{}data_dir: history
{CONTRACT}",
            agent.yaml
        ),
    )
    .unwrap();
    let run = {
        let (d, url) = (d.clone(), url.clone());
        tokio::task::spawn_blocking(move || {
            flakestorm(&["contract", "run", "-c", "run.yaml", "--server", &url], &d)
        })
    };
    let (code, out, err) = within("the run on the daemon", run).await.unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    for want in [
        "flakestorm: run ",
        "submitted to http://127.0.0.1:",
        "flakestorm: [1/2] no-chaos: \"What was ACME's Q3 revenue?\": answered in ",
        "flakestorm: [2/2] search-down:",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    // The faulted case's line counts its fault, as a local run's does.
    let faulted = err.lines().find(|l| l.contains("[2/2] search-down:"));
    assert!(faulted.is_some_and(|l| l.contains(", 1 fault(s)")), "{err}");
    // The same summary as a local run: the matrix, the verdict, the report.
    for want in [
        "  answers        ✓         ✓",
        "score 100.0/100 (pass mark 70): PASS",
        "\nrun 2",
        "report: reports/contract.json",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("reports/contract.json")).unwrap())
            .unwrap();
    assert_eq!(report["verdict"], "pass");
    assert_eq!(
        report["cases"][1]["faults"][0]["mode"], "error",
        "the fault reached the agent"
    );
    // The daemon's history has it.
    let id = err
        .split("flakestorm: run ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let (code, out, _) = flakestorm(&["runs", "list", "--data-dir", "history"], &d);
    assert_eq!(code, 0);
    assert!(out.contains(id) && out.contains("passed"), "{out}");
}

#[tokio::test]
async fn a_daemon_that_refuses_the_token_or_the_config_exits_2_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (_serve, url) = serve(
        &d,
        &format!("{SERVE}control: {{listen: '127.0.0.1:0', token: s3cret}}\n")
            .replace("control: {listen: '127.0.0.1:0'}\n", ""),
    )
    .await;
    let port = common::cli::closed_port();
    std::fs::write(
        d.join("run.yaml"),
        format!("agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\ngolden_prompts: [hi]\n{CONTRACT}"),
    )
    .unwrap();
    let go = |args: Vec<String>| {
        let d = d.clone();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            flakestorm(&args, &d)
        })
    };
    let base = vec![
        "contract".to_string(),
        "run".into(),
        "-c".into(),
        "run.yaml".into(),
        "--server".into(),
        url.clone(),
    ];
    let (code, _, err) = within("no token", go(base.clone())).await.unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("missing or wrong token (none was found: control token ")
            && err.contains("Pass --token-file (or FLAKESTORM_API_TOKEN, or --token)"),
        "{err}"
    );
    // With the token, the daemon takes the run; its agent is not there: an error, exit 2.
    let mut with = base.clone();
    with.extend(["--token".into(), "s3cret".into()]);
    let (code, out, err) = within("an unreachable agent", go(with)).await.unwrap();
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(out.contains(": ERROR"), "{out}");
    assert!(
        out.contains(&format!("127.0.0.1:{port}")),
        "the reason names the agent: {out}"
    );
    // The token from a file (not on the command line, where `ps` shows it): the same.
    std::fs::write(d.join("token"), "s3cret\n").unwrap();
    let mut with = base.clone();
    with.extend(["--token-file".into(), "token".into()]);
    let (code, out, err) = within("a token file", go(with)).await.unwrap();
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(out.contains(": ERROR"), "past the token: {out}\n{err}");
    let mut with = base.clone();
    with.extend(["--token-file".into(), "nowhere".into()]);
    let (code, _, err) = within("no token file", go(with)).await.unwrap();
    assert_eq!(code, 2);
    assert!(
        err.contains("--token-file nowhere: cannot read it"),
        "{err}"
    );
    // A daemon that is not there.
    let gone = format!("http://127.0.0.1:{port}");
    let mut args = base;
    args[5] = gone;
    let (code, _, err) = within("no daemon", go(args)).await.unwrap();
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot reach the daemon at http://127.0.0.1:"),
        "{err}"
    );
}

/// Cancelling a run while the agent the daemon started is not ready yet: the run ends
/// `cancelled` only once that agent's whole group is gone, what ignores SIGTERM too, so the
/// run after it does not meet it on its port.
#[tokio::test]
async fn a_run_cancelled_while_its_agent_starts_ends_once_the_agent_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (daemon, url) = serve(&d, SERVE).await;
    let port = common::cli::closed_port();
    let ids = d.join("agent.ids");
    // Never ready (nothing listens on `port`); writes "PID PGID" of what it started.
    let command = format!(
        "trap '' TERM; sleep 300 & echo \"$! $(cut -d' ' -f5 /proc/$!/stat)\" > {0}.tmp \
         && mv {0}.tmp {0}; wait",
        ids.display()
    );
    let config = format!(
        "agent:\n  endpoint: \"http://127.0.0.1:{port}/invoke\"\n  command: {command:?}\n  \
         ready_url: \"http://127.0.0.1:{port}/health\"\ngolden_prompts: [\"hi\"]\n\
         invariants: [{{type: output_not_empty}}]\n\
         chaos: {{llm_faults: [{{mode: timeout, delay_ms: 1000}}]}}\n"
    );
    let http = daemon.client();
    let (id, mut events) = submit_chaos(&http, &url, &config).await;
    assert!(
        common::procs::eventually(Duration::from_secs(20), || ids.exists()),
        "the agent did not start"
    );
    let text = std::fs::read_to_string(&ids).unwrap();
    let pgid: u32 = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let r = http.delete(format!("{url}/v1/runs/{id}")).send().await;
    assert_eq!(r.unwrap().status(), 202);
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "done", "the run ends").await;
    let done = seen.split("event: done\ndata: ").nth(1).unwrap();
    assert!(done.contains(r#""status":"cancelled""#), "{done}");
    // Its SIGTERM ignored, the group outlives the supervisor's 2 s grace: gone within 1 s
    // of `done` only if the run waited for it.
    common::procs::assert_group_gone(pgid, Duration::from_secs(1), "when the run was done");
}

/// Cancelling a run whose agent the daemon started (`agent.command`): the run ends
/// `cancelled` while its case waits on a tool that does not answer, and the agent process
/// is stopped (its port no longer answers).
#[tokio::test]
async fn cancelling_a_run_stops_the_agent_the_daemon_started() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (daemon, url) = serve(&d, SERVE).await;
    let agent = python_agent();
    let health = agent
        .yaml
        .split("ready_url: \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let config = format!(
        "{}invariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: web_search, mode: timeout, delay_ms: 60000}}]}}\n",
        agent.yaml
    );
    let http = daemon.client();
    let (id, mut events) = submit_chaos(&http, &url, &config).await;
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "case_started", "the case starts").await;
    // The agent the daemon started answers.
    assert_eq!(http.get(&health).send().await.unwrap().status(), 200);
    let r = http.delete(format!("{url}/v1/runs/{id}")).send().await;
    assert_eq!(r.unwrap().status(), 202);
    read_until(&mut events, &mut seen, "done", "the run ends").await;
    let done = seen.split("event: done\ndata: ").nth(1).unwrap();
    assert!(done.contains(r#""status":"cancelled""#), "{done}");
    // The daemon stopped its agent before saying the run was done.
    assert!(
        http.get(&health).send().await.is_err(),
        "the agent still answers"
    );
}

/// Submits a chaos run of `config` to the daemon at `url`: its id, and its event stream.
async fn submit_chaos(
    http: &reqwest::Client,
    url: &str,
    config: &str,
) -> (String, reqwest::Response) {
    let body = serde_json::json!({"kind": "chaos", "config": config}).to_string();
    let r = http
        .post(format!("{url}/v1/runs"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, 202, "{text}");
    let run: serde_json::Value = serde_json::from_str(&text).unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let events = http.get(format!("{url}/v1/runs/{id}/events")).send().await;
    (id, events.unwrap())
}

/// Reads a run's `events` into `seen` until they hold an event of `kind`.
async fn read_until(events: &mut reqwest::Response, seen: &mut String, kind: &str, what: &str) {
    let marker = format!("event: {kind}");
    within(what, async {
        while !seen.contains(&marker) {
            let chunk = events.chunk().await.unwrap().expect("the stream ended");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
}
