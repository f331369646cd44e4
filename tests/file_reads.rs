//! Issue #23, unbounded and blocking reads, through the binary: every file flakestorm is
//! given (config, session file, tape, report, certificate, upstream CA bundle) that is a
//! FIFO or `/dev/zero` is refused within a second, exit 2, naming the path and what it is;
//! a report holding a 50 MB string gives a short error; a file's content is not echoed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::origin;

/// Runs flakestorm in `dir`; killed, and the test failed, if it has not exited within a
/// second (reading a FIFO the old way never ends, `/dev/zero` fills memory).
async fn within_a_second(args: &[&str], dir: &Path) -> (i32, String) {
    within(Duration::from_secs(1), args, dir).await
}

/// Runs flakestorm in `dir`: its exit code and stderr; killed after `limit`.
async fn within(limit: Duration, args: &[&str], dir: &Path) -> (i32, String) {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("flakestorm {args:?} still running after {limit:?}"))
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), err)
}

/// `flakestorm ARGS` exits 2 within a second, and its error names `path` and `what` it is.
async fn refuses(args: &[&str], dir: &Path, path: &Path, what: &str) {
    let (code, err) = within_a_second(args, dir).await;
    assert_eq!(code, 2, "flakestorm {args:?}: {err}");
    let named = format!("{}: {what}, not a regular file", path.display());
    assert!(err.contains(&named), "flakestorm {args:?}: {err}");
}

/// `validate -c PATH` exits 2 within a second; the config error names `path` (its heading)
/// and `what` it is.
async fn refuses_config(dir: &Path, path: &Path, what: &str) {
    let (code, err) = within_a_second(&["validate", "-c", s(path)], dir).await;
    assert_eq!(code, 2, "{err}");
    let says = format!(
        "flakestorm: {} has 1 error:\n  - cannot read config file: {what}, not a regular file",
        path.display()
    );
    assert!(err.starts_with(&says), "{err}");
}

fn mkfifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

const FIFO: &str = "a FIFO (named pipe)";
const DEVICE: &str = "a character device";
const ZERO: &str = "/dev/zero";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn a_config_or_its_upstream_ca_that_is_no_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(dir.path(), "flakestorm.yaml");
    let d = dir.path();
    refuses_config(d, &fifo, FIFO).await;
    refuses_config(d, Path::new(ZERO), DEVICE).await;
    // Named relative to the config (a temp folder's name would be hidden as secret-like).
    mkfifo(d, "ca.pem");
    for (bundle, what) in [("ca.pem", FIFO), (ZERO, DEVICE)] {
        let config = d.join("ca.yaml");
        std::fs::write(
            &config,
            format!("proxy: {{upstream_ca_file: '{bundle}'}}\n"),
        )
        .unwrap();
        let (code, err) = within_a_second(&["validate", "-c", s(&config)], d).await;
        assert_eq!(code, 2, "{err}");
        let path = d.join(bundle);
        let says = format!(
            "  - proxy.upstream_ca_file: {}: {what}, not a regular file",
            path.display()
        );
        assert!(err.contains(&says), "{err}");
    }
}

/// The CA's own files: `ca export` (as `serve` loads them) fails at once, exit 1 as any
/// CA that cannot be loaded, naming the file.
#[tokio::test]
async fn a_ca_file_that_is_no_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = d.join("ca");
    std::fs::create_dir(&ca).unwrap();
    let pem = mkfifo(&ca, "ca.pem");
    std::fs::write(ca.join("ca.key"), "not a key").unwrap();
    let (code, err) = within_a_second(&["ca", "export", "--ca-dir", s(&ca)], d).await;
    assert_eq!(code, 1, "{err}");
    let says = format!("{}: {FIFO}, not a regular file", pem.display());
    assert!(err.contains(&says), "{err}");
}

#[tokio::test]
async fn a_session_file_that_is_no_file_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = mkfifo(d, "incident.yaml");
    refuses(&["replay", "run", s(&fifo)], d, &fifo, FIFO).await;
    refuses(&["replay", "run", ZERO], d, Path::new(ZERO), DEVICE).await;
    // In a folder of sessions, too.
    std::fs::write(d.join("a.yaml"), "id: a\ninput: hi\n").unwrap();
    refuses(&["replay", "run", s(d)], d, &fifo, FIFO).await;
}

/// The tape is read when the run starts, after the agent is ready: its session fails at
/// once, naming the tape, and so does the run (exit 1, as for any session that could not
/// be replayed).
#[tokio::test]
async fn a_tape_that_is_no_file_fails_its_session_at_once() {
    let agent = origin::json(r#"{"output": "ok"}"#).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::cli::write_config(
        d,
        &format!(
            "agent: {{endpoint: '{}'}}\ninvariants: [{{type: completes}}]\n",
            agent.http_url("/invoke")
        ),
    );
    let tape = mkfifo(d, "tape.har");
    for tape in [tape.as_path(), Path::new(ZERO)] {
        let yaml = format!("id: s\ninput: hi\ntape: {}\n", tape.display());
        std::fs::write(d.join("session.yaml"), yaml).unwrap();
        let args = ["replay", "run", "session.yaml", "-o", "replay.json"];
        let (code, err) = within_a_second(&args, d).await;
        assert_eq!(code, 1, "{err}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("replay.json")).unwrap()).unwrap();
        let why = report["sessions"][0]["reasons"][0].as_str().unwrap();
        assert!(
            why.starts_with(&format!("tape: {}: a ", tape.display()))
                && why.contains(", not a regular file"),
            "{why}"
        );
    }
}

#[tokio::test]
async fn a_report_that_is_no_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = mkfifo(d, "ci.json");
    for (path, what) in [(fifo.as_path(), FIFO), (Path::new(ZERO), DEVICE)] {
        let p = s(path);
        refuses(&["report", p, "-f", "markdown", "-o", "-"], d, path, what).await;
        refuses(
            &["replay", "export", "--from-report", p, "-o", "out"],
            d,
            path,
            what,
        )
        .await;
    }
}

/// A report holding a 50 MB string where a number belongs, or as its `schema`, or a file
/// that is one word: the error quotes none of it.
#[tokio::test]
async fn a_reports_content_is_not_echoed_in_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fixture = std::fs::read_to_string(common::fixture("reports/ci.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    let long = "x".repeat(50_000_000);
    report["overall"] = long.clone().into();
    std::fs::write(d.join("long.json"), report.to_string()).unwrap();
    std::fs::write(d.join("schema.json"), format!(r#"{{"schema": "{long}"}}"#)).unwrap();
    std::fs::write(d.join("hostname"), "\"build-runner-07\"\n").unwrap();
    for (file, says) in [
        (
            "long.json",
            "`overall`: invalid type: string (50000000 characters, not shown)",
        ),
        (
            "schema.json",
            "`schema` is (50000000 characters, not shown)",
        ),
        (
            "hostname",
            "the top level is a string of 15 characters, not a JSON object",
        ),
    ] {
        for args in [
            vec!["report", file, "-f", "markdown", "-o", "-"],
            vec!["replay", "export", "--from-report", file, "-o", "out"],
            vec!["certificate", file, "--data-dir", "data"],
        ] {
            // Parsing 50 MB takes a moment in a debug build.
            let (code, err) = within(Duration::from_secs(20), &args, d).await;
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.len() < 1024, "{args:?}: {} bytes of error", err.len());
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(
                !err.contains("xxxx") && !err.contains("build-runner"),
                "{err}"
            );
        }
    }
}

#[tokio::test]
async fn a_certificate_or_its_report_that_is_no_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(common::fixture("reports/ci.json"), d.join("ci.json")).unwrap();
    let fifo = mkfifo(d, "other.json");
    let data = ["--data-dir", "data"];
    let issue = [&["certificate", "ci.json"][..], &data].concat();
    let (code, err) = within_a_second(&issue, d).await;
    assert_eq!(code, 0, "{err}");
    for (path, what) in [(fifo.as_path(), FIFO), (Path::new(ZERO), DEVICE)] {
        let p = s(path);
        refuses(&[&["certificate", p][..], &data].concat(), d, path, what).await;
        let verify = ["certificate", "verify", p];
        refuses(&[&verify[..], &data].concat(), d, path, what).await;
        let page = "ci.certificate.html";
        let args = ["certificate", "verify", page, "--report", p];
        refuses(&[&args[..], &data].concat(), d, path, what).await;
    }
}

/// The agent's log is read from its end only, and a FIFO in its place is not waited on.
#[test]
fn the_agent_log_tail_reads_the_end_and_never_waits() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(dir.path(), "agent.log");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(flakestorm::agent::log_tail(&fifo, 20)));
    let tail = rx
        .recv_timeout(Duration::from_secs(1))
        .expect("log_tail returned");
    assert_eq!(tail, "");
    let log = dir.path().join("big.log");
    let mut text = "x".repeat(200_000);
    text.push_str("\nTraceback (most recent call last):\nValueError: boom\n");
    std::fs::write(&log, text).unwrap();
    let tail = flakestorm::agent::log_tail(&log, 20);
    assert!(
        tail.ends_with("(most recent call last):\nValueError: boom") && !tail.contains("xxx"),
        "{tail}"
    );
}
