//! The tape commands as a user runs them: `serve --record DIR` writes the proxied traffic
//! to a tape it names when it starts and saves when it stops (SIGTERM); `replay export`
//! refuses a report it cannot read and names a failed case whose tape is missing (exit 2).

mod common;

use common::cli::{flakestorm, write_config};
use common::{origin, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn serve_record_writes_the_traffic_it_proxied_when_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let o = origin::fixed(None, "hello from the tool").await;
    write_config(dir.path(), "");
    let mut s = common::serve::serve(dir.path(), &["--record", "tapes"], "warn", true).await;
    let a = o.addr;
    let mut client = tokio::net::TcpStream::connect(&s.proxy).await.unwrap();
    let req = format!(
        "GET http://{a}/q?key=AIzaSECRET-123 HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer \
         tok-SECRET-456\r\nConnection: close\r\n\r\n"
    );
    client.write_all(req.as_bytes()).await.unwrap();
    let mut reply = String::new();
    within("the reply", client.read_to_string(&mut reply))
        .await
        .unwrap();
    assert!(reply.ends_with("hello from the tool"), "{reply}");
    let pid = s.child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = within("exit", s.child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
    let mut log = String::new();
    while let Some(l) = s.stderr.as_mut().unwrap().next_line().await.unwrap() {
        log.push_str(&l);
        log.push('\n');
    }
    assert!(log.contains("recorded 1 exchange(s) to "), "{log}");
    let tapes: Vec<_> = std::fs::read_dir(dir.path().join("tapes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(tapes.len(), 1, "{tapes:?}");
    let text = std::fs::read_to_string(&tapes[0]).unwrap();
    assert!(!text.contains("SECRET"), "{text}");
    let har = flakestorm::tape::read(&tapes[0]).unwrap();
    let e = &har.log.entries[0];
    assert_eq!(e.request.url, format!("http://{a}/q?key=[REDACTED]"));
    assert_eq!(
        e.response.content.text.as_deref(),
        Some("hello from the tool")
    );
}

#[test]
fn export_names_a_bad_report_and_a_missing_tape() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bad.json"), "{\"schema\": \"nope\"}").unwrap();
    let (code, _, err) = flakestorm(
        &["replay", "export", "--from-report", "bad.json", "-o", "out"],
        d,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("flakestorm: bad.json: "), "{err}");
    // A replay report whose one session failed, written without its tapes.
    let report = serde_json::json!({
        "schema": "flakestorm.replay/1", "config_digest": null, "seed": 1, "on_miss": "live",
        "cases": [{"scenario": "s1", "prompt": "hi", "answer": "no", "error": null,
                   "latency_ms": 1.0, "attempts": 1, "not_judged": null, "faults": [],
                   "exchanges": []}],
        "sessions": [{"id": "s1", "input": "hi", "verdict": "fail", "reasons": ["`x`: bad"],
                      "checks": [], "recorded": 1, "served": 1, "missed": 0, "misses": [],
                      "case": 0}],
        "score": 0.0, "verdict": "fail", "verdict_reasons": [], "min_score": 70.0, "coverage": [],
        "agent_calls": 1, "warnings": []
    });
    std::fs::write(d.join("replay.json"), report.to_string()).unwrap();
    let (code, _, err) = flakestorm(
        &[
            "replay",
            "export",
            "--from-report",
            "replay.json",
            "-o",
            "out",
        ],
        d,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not exported: case replay-0 (s1): no tape at "),
        "{err}"
    );
    assert!(err.contains("replay.tapes/replay-0.har"), "{err}");
}

#[tokio::test]
async fn record_applies_no_chaos_and_writes_the_real_traffic() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let o = origin::fixed(None, "the real answer").await;
    let a = o.addr;
    write_config(
        dir.path(),
        &format!(
            "tools:\n  - {{name: search, match_url: 'http://{a}/*'}}\n\
             chaos:\n  tool_faults: [{{tool: search, mode: error, error_code: 503}}]\n"
        ),
    );
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["record", "-o", "recorded"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut proxy, mut file) = (None, None);
    within("record prints where it listens and records", async {
        while proxy.is_none() || file.is_none() {
            let line = out.next_line().await.unwrap().expect("record exited early");
            if let Some(p) = line.strip_prefix("flakestorm: proxy listening on ") {
                proxy = Some(p.to_string());
            } else if let Some(f) = line.strip_prefix("flakestorm: recording to ") {
                file = Some(std::path::PathBuf::from(f));
            }
        }
    })
    .await;
    let mut client = tokio::net::TcpStream::connect(proxy.unwrap())
        .await
        .unwrap();
    let req = format!("GET http://{a}/q HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n");
    client.write_all(req.as_bytes()).await.unwrap();
    let mut reply = String::new();
    within("the reply", client.read_to_string(&mut reply))
        .await
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "no fault fired: {reply}");
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(within("exit", child.wait()).await.unwrap().success());
    let har = flakestorm::tape::read(&dir.path().join(file.unwrap())).unwrap();
    let e = &har.log.entries[0];
    assert_eq!(
        (e.response.status, e.target.as_deref(), e.fault.as_deref()),
        (200, Some("search"), None)
    );
    assert_eq!(e.response.content.text.as_deref(), Some("the real answer"));
}

/// Record → export → replay as a user runs it: `contract run` writes the failed case's tape
/// beside its report (`output.tapes` default), `replay export` makes it a session, and
/// `replay run` on that folder fails the same check again from the tape.
#[test]
fn contract_run_then_export_then_replay_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = common::cli::python_agent();
    let contract = "contract:\n  name: Research agent\n  invariants:\n    - {id: cites, type: contains, value: According}\n    - {id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}\n  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{tool: web_search, mode: error, error_code: 503}]\n";
    std::fs::write(
        d.join("flakestorm.yaml"),
        format!("{}{contract}", agent.yaml),
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["contract", "run"], d);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("tapes: 1 case(s) in "), "{out}");
    let tape = d.join("reports/contract.tapes/contract-1.har");
    let har = flakestorm::tape::read(&tape).unwrap();
    let faulted: Vec<_> = har
        .log
        .entries
        .iter()
        .filter_map(|e| e.fault.as_deref())
        .collect();
    assert_eq!(faulted, ["tool_faults[0]/error"], "{har:?}");
    let (code, out, err) = flakestorm(
        &[
            "replay",
            "export",
            "--from-report",
            "reports/contract.json",
            "-o",
            "replays",
        ],
        d,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("session: replays/contract-1.json"), "{out}");
    let (code, out, err) = flakestorm(&["replay", "run", "replays", "-o", "replay.json"], d);
    assert_eq!(code, 1, "{out}\n{err}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("replay.json")).unwrap()).unwrap();
    let s = &r["sessions"][0];
    assert_eq!(s["verdict"], "fail", "{s}");
    assert!(
        s["reasons"][0].as_str().unwrap().starts_with("`cites`: "),
        "{s}"
    );
    assert_eq!(s["missed"], 0, "{s}");
    // The tape's faulted tool answer makes `when: tool_faults_active` apply, as in the run.
    let admits = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["invariant"] == "admits-outage");
    assert_eq!(admits.unwrap()["verdict"], "pass", "{s}");
    let answer = r["cases"][0]["answer"].as_str().unwrap();
    assert!(
        answer.starts_with("Sorry, search is unavailable"),
        "{answer}"
    );
    drop(agent);
}

#[test]
fn a_bad_output_tapes_value_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "output: {tapes: sometimes}\n");
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    let all = format!("{out}{err}");
    assert!(all.contains("output.tapes"), "{all}");
    assert!(all.contains("sometimes"), "{all}");
}
