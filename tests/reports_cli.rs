//! Report formats as users get them: a run whose config asks for several formats writes
//! each beside its JSON report, and `flakestorm report` renders a saved report again
//! (from its file or a stored run's id), writing what it can when a file cannot be written.

mod common;

use common::cli::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/reports/ci.json"
);

/// `impossible` fails on purpose (critical, so the run fails), for the formats to show.
const CONTRACT: &str = "contract:\n  name: Research agent\n  invariants:\n    - {id: answers, type: output_not_empty}\n    - {id: admits-outage, type: contains, value: unavailable, when: tool_faults_active}\n    - {id: impossible, type: contains, value: text the agent never writes, severity: critical, when: tool_faults_active}\n  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{tool: web_search, mode: error, error_code: 503}]\n";

#[test]
fn a_run_writes_every_format_its_config_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let agent = python_agent();
    let yaml = format!(
        "{}{CONTRACT}output:\n  format: [json, html, junit, markdown]\n",
        agent.yaml
    );
    std::fs::write(dir.path().join("flakestorm.yaml"), yaml).unwrap();
    let (code, out, err) = flakestorm(&["contract", "run"], dir.path());
    assert_eq!(code, 1, "{out}\n{err}");
    let reports = dir.path().join("reports");
    for file in [
        "contract.json",
        "contract.html",
        "contract.junit.xml",
        "contract.md",
    ] {
        let path = reports.join(file);
        assert!(path.is_file(), "{file} missing; stderr:\n{err}");
        assert!(
            out.contains(&format!("report: reports/{file}\n")),
            "{file} not named in:\n{out}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("contract.json")).unwrap())
            .unwrap();
    let xml = std::fs::read_to_string(reports.join("contract.junit.xml")).unwrap();
    // One testcase per cell and one for the run's verdict; the failed cell is a failure.
    let cells = json["cells"].as_array().unwrap();
    let failed = cells.iter().filter(|c| c["verdict"] == "fail").count();
    assert_eq!(failed, 1, "{json}");
    assert!(
        xml.contains(&format!(
            "<testsuite name=\"contract\" tests=\"{}\" failures=\"2\"",
            cells.len() + 1
        )),
        "{xml}"
    );
    let md = std::fs::read_to_string(reports.join("contract.md")).unwrap();
    assert!(
        md.contains("| search-down | impossible | critical | ❌ fail | \"What was ACME's Q3 revenue?\": does not contain"),
        "{md}"
    );
    // The stored run renders the same JUnit again from its id.
    let id = json_runs(dir.path())[0]["id"].as_str().unwrap().to_string();
    let (code, out, err) = flakestorm(&["report", &id, "-f", "junit", "-o", "-"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, xml);
}

fn json_runs(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let (code, out, err) = flakestorm(&["runs", "list", "--json"], dir);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["runs"].as_array().unwrap().clone()
}

#[test]
fn report_renders_a_saved_report_and_writes_what_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.display().to_string();
    let args = [
        "report",
        FIXTURE,
        "-f",
        "junit,markdown,json",
        "-o",
        &out_arg,
    ];
    let (code, out, err) = flakestorm(&args, dir.path());
    assert_eq!(code, 0, "{err}");
    for file in ["ci.junit.xml", "ci.md", "ci.json"] {
        assert!(out.contains(file), "{out}");
    }
    // The JSON written again is the report read, field for field.
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("ci.json")).unwrap()).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    assert_eq!(again, saved);
    // A folder where ci.md should go: that format fails, naming its file; the others
    // are still written; exit 1.
    let second = dir.path().join("second");
    std::fs::create_dir_all(second.join("ci.md")).unwrap();
    let second_arg = second.display().to_string();
    let args = ["report", FIXTURE, "-f", "markdown,junit", "-o", &second_arg];
    let (code, _, err) = flakestorm(&args, dir.path());
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "could not write {}",
            second.join("ci.md").display()
        )),
        "{err}"
    );
    assert!(second.join("ci.junit.xml").is_file());
}

#[test]
fn a_file_that_is_not_a_report_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "har.json",
            r#"{"log": {"version": "1.2"}}"#,
            "has no `schema` field",
        ),
        (
            "newer.json",
            r#"{"schema": "flakestorm.contract/7"}"#,
            "newer than this build reads (flakestorm.contract/2)",
        ),
        (
            "broken.json",
            r#"{"schema": "flakestorm.chaos/2", "seed": "x"}"#,
            "`seed`: invalid type",
        ),
    ];
    for (file, text, want) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let arg = path.display().to_string();
        let (code, _, err) = flakestorm(&["report", &arg, "-f", "html"], dir.path());
        assert_eq!(code, 2, "{file}: {err}");
        assert!(err.contains(&arg) && err.contains(want), "{file}: {err}");
    }
    let (code, _, err) = flakestorm(&["report", "missing.json", "-f", "html"], dir.path());
    assert_eq!(
        (code, err.trim()),
        (2, "flakestorm: missing.json: no such file")
    );
    let (code, _, err) = flakestorm(&["report", FIXTURE, "-f", "pdf"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown report format `pdf`"), "{err}");
}

#[test]
fn a_certificate_is_issued_verified_and_fails_when_its_report_changes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(FIXTURE, d.join("ci.json")).unwrap();
    let (code, out, err) = flakestorm(&["certificate", "ci.json", "--tester", "QA"], d);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("CERTIFIED: ci run PASS, score 94.9/100 (threshold 70)"),
        "{out}"
    );
    let fingerprint = out
        .split("signed with key ")
        .nth(1)
        .unwrap()
        .trim()
        .to_string();
    let (code, out, err) = flakestorm(&["certificate", "verify", "ci.certificate.html"], d);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!(
        "signed with key {fingerprint} (this data folder's key)"
    )));
    let args = [
        "certificate",
        "verify",
        "ci.certificate.html",
        "--key",
        "SHA256:other",
    ];
    assert_eq!(flakestorm(&args, d).0, 1);
    // One byte of the report changed.
    let mut bytes = std::fs::read(d.join("ci.json")).unwrap();
    let i = bytes.len() / 3;
    bytes[i] ^= 0x20;
    std::fs::write(d.join("ci.json"), bytes).unwrap();
    let (code, _, err) = flakestorm(&["certificate", "verify", "ci.certificate.html"], d);
    assert_eq!(code, 1);
    assert!(
        err.contains("the report ci.json changed since it was certified"),
        "{err}"
    );
    // The key is private to its owner.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let key = d.join(".flakestorm/certificate.key");
        assert_eq!(
            std::fs::metadata(key).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
