//! Config hardening as a user meets it through the binary (issue #9): `serve --listen` and
//! `validate` agree on a broken section, duplicate keys stop both, and no secret from the
//! file reaches the terminal.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::cli::*;

/// Runs `serve` until it exits or says it is listening (then it is stopped: a failure).
fn serve_outcome(args: &[&str], dir: &std::path::Path) -> Result<(i32, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        if line.contains("listening") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("serve started: {line}"));
        }
    }
    let out = child.wait_with_output().unwrap();
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    ))
}

#[test]
fn listen_flag_never_hides_a_broken_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("f.yaml"),
        "proxy: \"127.0.0.1:8080\"\ncontrol: {listen: '127.0.0.1:0'}\n",
    )
    .unwrap();
    let (code, _, validate_err) = flakestorm(&["validate", "-c", "f.yaml"], dir.path());
    assert_eq!(code, 2, "{validate_err}");
    let (code, serve_err) =
        serve_outcome(&["-c", "f.yaml", "--listen", "127.0.0.1:0"], dir.path()).unwrap();
    assert_eq!(code, 2, "{serve_err}");
    let line = validate_err
        .lines()
        .find(|l| l.contains("proxy:"))
        .unwrap_or_else(|| panic!("{validate_err}"));
    assert!(serve_err.contains(line), "{serve_err}\nvs\n{validate_err}");
}

#[test]
fn duplicate_sections_stop_validate_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        "chaos:\n  llm_faults: [{mode: rate_limit}]\nchaos:\n  tool_faults: []\n",
    );
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("chaos: duplicate key `chaos` (lines 3 and 5)"),
        "{err}"
    );
    let (code, err) = serve_outcome(&[], dir.path()).unwrap();
    assert_eq!(code, 2);
    assert!(err.contains("duplicate key `chaos`"), "{err}");
}

#[test]
fn a_key_in_a_number_field_is_not_printed() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-ant-api03-Zx8Qw2Er4Ty6Ui8Op0As";
    write_config(dir.path(), &format!("journal:\n  capacity: \"{key}\"\n"));
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("journal.capacity: invalid type: string"),
        "{err}"
    );
    assert!(
        !err.contains("Zx8Qw2") && !out.contains("Zx8Qw2"),
        "{out}{err}"
    );
}

/// An open proxy is valid YAML that `serve` refuses: `validate` says so (a warning, exit 0).
#[test]
fn validate_warns_about_an_open_proxy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        "proxy: {listen: '0.0.0.0:0'}\ncontrol: {listen: '127.0.0.1:0'}\n",
    )
    .unwrap();
    let (code, out, err) = flakestorm(&["validate"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warning: serve and runs will refuse this config")
            && err.contains("--allow-open-proxy"),
        "{err}"
    );
    let (code, err) = serve_outcome(&[], dir.path()).unwrap();
    assert_eq!(code, 1, "{err}");
}
