use super::*;

const FIXTURE: &str = include_str!("../../../tests/fixtures/reports/ci.json");

struct Issued {
    dir: tempfile::TempDir,
    page: String,
    file: PathBuf,
    report: PathBuf,
}

fn issued(tester: Option<&str>, threshold: Option<f64>) -> Issued {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("ci.json");
    std::fs::write(&report_path, FIXTURE).unwrap();
    let report = Report::from_json(FIXTURE).unwrap();
    let key = key::load_or_create(&dir.path().join("data")).unwrap();
    let req = Request {
        report_path: &report_path,
        report_bytes: FIXTURE.as_bytes(),
        tester: tester.map(String::from),
        threshold,
        issued_at: "2026-11-24T04:00:00Z".into(),
    };
    let claims = claims(&report, &req, &key::public(&key));
    let page = issue(&claims, &key).unwrap();
    let file = dir.path().join("certificate.html");
    std::fs::write(&file, &page).unwrap();
    Issued {
        dir,
        page,
        file,
        report: report_path,
    }
}

#[test]
fn a_certificate_verifies_and_states_the_run() {
    let c = issued(Some("QA team"), None);
    let v = verify(&c.file, &c.page, None).expect("it verifies");
    assert!(v.claims.certified);
    assert_eq!(v.claims.verdict, RunVerdict::Pass);
    assert_eq!(v.claims.threshold, 70.0);
    assert_eq!(v.claims.seed, Some(42));
    assert_eq!(
        v.claims.agent.as_deref(),
        Some("http://127.0.0.1:8000/invoke")
    );
    assert_eq!(v.report, c.report);
    assert!(v.fingerprint.starts_with("SHA256:"));
    for shown in [
        "CERTIFIED: ci run pass, score 94.9/100",
        "QA team",
        &v.fingerprint,
    ] {
        assert!(c.page.contains(shown), "{shown} not on the page");
    }
    // The certificate travels with its report: found beside it when moved together.
    let moved = c.dir.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    std::fs::copy(&c.report, moved.join("ci.json")).unwrap();
    std::fs::remove_file(&c.report).unwrap();
    assert!(verify(&moved.join("certificate.html"), &c.page, None).is_ok());
}

#[test]
fn one_byte_changed_in_the_page_or_the_report_fails_saying_what() {
    let c = issued(None, None);
    // A byte of the visible page, of the signed claims, of the signature.
    let visible = c.page.replacen("94.9/100", "99.9/100", 1);
    let err = verify(&c.file, &visible, None).unwrap_err().to_string();
    assert!(
        err.starts_with("the page was changed after signing: line "),
        "{err}"
    );
    let claims = c.page.replacen("\"score\":94.", "\"score\":99.", 1);
    assert_ne!(claims, c.page);
    let err = verify(&c.file, &claims, None).unwrap_err().to_string();
    assert!(
        err.starts_with("the signature does not match the claims"),
        "{err}"
    );
    let at = c.page.find("flakestorm-signature\" content=\"").unwrap() + 35;
    let mut sig = c.page.clone().into_bytes();
    sig[at] = if sig[at] == b'A' { b'B' } else { b'A' };
    let err = verify(&c.file, &String::from_utf8(sig).unwrap(), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("signature"), "{err}");
    // One byte of the report.
    let mut report = FIXTURE.as_bytes().to_vec();
    let i = report.len() / 2;
    report[i] ^= 0x01;
    std::fs::write(&c.report, &report).unwrap();
    let err = verify(&c.file, &c.page, None).unwrap_err().to_string();
    assert!(
        err.contains("changed since it was certified: its SHA-256 is"),
        "{err}"
    );
    std::fs::remove_file(&c.report).unwrap();
    let err = verify(&c.file, &c.page, None).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Unreadable(e) if e.contains("name it with --report")),
        "{err}"
    );
    // A report that is no regular file is refused, not read.
    let err = verify(&c.file, &c.page, Some(Path::new("/dev/zero"))).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Unreadable(e) if e.starts_with("the certified report /dev/zero: a character device")),
        "{err}"
    );
    let err = verify(&c.file, "<html></html>", None)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "not a flakestorm certificate: it has no signed claims");
}

#[test]
fn a_run_under_the_threshold_is_not_certified_and_names_stay_inert() {
    let c = issued(Some("<script>alert(1)</script>"), Some(95.0));
    let v = verify(&c.file, &c.page, None).unwrap();
    assert!(!v.claims.certified);
    assert_eq!(
        v.claims.reasons,
        ["score 94.9 is below the threshold 95".to_string()]
    );
    assert!(c.page.contains("NOT CERTIFIED"));
    assert!(
        !c.page.contains("<script>alert"),
        "the tester's name is escaped"
    );
    assert!(
        c.page
            .contains("<td>&lt;script&gt;alert(1)&lt;&#x2f;script&gt;</td>")
    );
}
