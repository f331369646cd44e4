//! The checks of the file-format targets (tests/fuzz.rs runs them): what must hold of any
//! bytes handed to the HAR tape reader, the session file reader, the saved-report reader,
//! the certificate verifier and the loader of `POST /v1/runs` configs.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use flakestorm::config::ReportFormat;
use flakestorm::config::replays::{Session, check_session};
use flakestorm::config::session_file::read_session;
use flakestorm::report::certificate::{self, Request, key};
use flakestorm::run::Report;
use flakestorm::tape::{Har, TapeTable, key_of};
use serde_json::Value;

use crate::mutate::{Rng, parsed};

/// `replays.match.ignore_json_fields` a tape is keyed with.
const IGNORES: &[&[&str]] = &[&[], &["user"], &["metadata.session_id", "stream_options"]];

/// A HAR tape: an error that says why, or a tape whose table answers each entry's own
/// request with that entry's response in recorded order (the n-th identical call, the
/// n-th answer), never waits longer than a replay may, and which written back reads the
/// same entries under the same keys.
pub fn tape(rng: &mut Rng, input: &[u8]) {
    let har = match flakestorm::tape::parse(input) {
        Ok(har) => har,
        Err(why) => return assert!(!why.is_empty(), "an error says why"),
    };
    parsed();
    let ignore: Vec<String> = IGNORES[rng.below(IGNORES.len())]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let table = TapeTable::new(&har, &ignore);
    assert_eq!(table.entries(), har.log.entries.len());
    let most = std::time::Duration::from_secs(600);
    for (i, e) in har.log.entries.iter().enumerate() {
        let a = table
            .answer(&key_of(e, &ignore))
            .unwrap_or_else(|| panic!("entry {i}: its own request found no answer"));
        assert_eq!(a.status, e.response.status, "entry {i}: played in order");
        assert_eq!(a.refused, e.response.status == 0, "entry {i}");
        let played: Vec<u8> = a.pieces.iter().flat_map(|(_, b)| b.to_vec()).collect();
        assert_eq!(played, recorded_body(e), "entry {i}: the body recorded");
        assert!(
            a.head_after <= most && a.pieces.iter().all(|(at, _)| *at <= most),
            "entry {i}: a replay would wait {:?}",
            a.pieces
        );
    }
    let n = har.log.entries.len() as u64;
    assert_eq!((table.served(), table.missed()), (n, 0));
    let again = flakestorm::tape::parse(&serde_json::to_vec(&har).unwrap())
        .unwrap_or_else(|e| panic!("a tape written back does not read: {e}"));
    assert_eq!(keys(&again, &ignore), keys(&har, &ignore), "written back");
}

fn keys(har: &Har, ignore: &[String]) -> Vec<String> {
    let entries = har.log.entries.iter();
    entries
        .map(|e| key_of(e, ignore).as_str().to_string())
        .collect()
}

/// The body a tape entry recorded: its stream's events, else its text (base64-decoded).
fn recorded_body(e: &flakestorm::tape::har::Entry) -> Vec<u8> {
    let c = &e.response.content;
    if !c.events.is_empty() {
        return c.events.iter().flat_map(|ev| ev.text.bytes()).collect();
    }
    match (&c.text, c.encoding.as_deref()) {
        (Some(t), Some("base64")) => base64::engine::general_purpose::STANDARD
            .decode(t)
            .expect("the reader checked it decodes"),
        (Some(t), _) => t.clone().into_bytes(),
        (None, _) => vec![],
    }
}

/// A session file: an error naming the file, or a session with nothing `check_session`
/// objects to which, written back as `replay export` writes one (JSON), reads the same.
pub fn session(file: &Path, input: &[u8]) {
    std::fs::write(file, input).unwrap();
    let s = match read_session(file) {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e.file, file);
            return assert!(!e.message.is_empty(), "an error says why");
        }
    };
    parsed();
    let mut errors = vec![];
    check_session(&s, "", &mut errors);
    assert!(
        errors.is_empty(),
        "a session read has no errors: {errors:?}"
    );
    let json = serde_json::to_string_pretty(&s).unwrap() + "\n";
    std::fs::write(file, &json).unwrap();
    let again: Session = read_session(file)
        .unwrap_or_else(|e| panic!("a session written back does not read: {e}\n{json}"));
    if let Some(d) = differs(&to_value(&again), &to_value(&s), "") {
        panic!("a session written back reads otherwise: {d}");
    }
}

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

/// The first difference between two values (path, and each side). Floats too must read
/// back exactly (serde_json's `float_roundtrip`: without it some 17-digit floats read one
/// unit in the last place off, and a report written back changed its score).
fn differs(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| differs(x, y, &format!("{at}[{i}]"))),
        (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => x
            .iter()
            .find_map(|(k, v)| differs(v, &y[k], &format!("{at}.{k}"))),
        _ => (a != b).then(|| format!("{at}: {a} then {b}")),
    }
}

/// A saved report: an error that says why, or a report that renders in every format (the
/// HTML page may refuse, with a reason), reads back from its own JSON as the same report,
/// and yields its failed cases (`replay export`) and certificate claims.
pub fn report(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let report = match Report::from_json(&text) {
        Ok(r) => r,
        Err(e) => return assert!(!e.to_string().is_empty(), "an error says why"),
    };
    parsed();
    for format in ReportFormat::all() {
        match flakestorm::report::render(&report, format) {
            Ok(out) => assert!(!out.is_empty(), "{format:?} rendered nothing"),
            Err(why) => assert!(
                format == ReportFormat::Html && !why.is_empty(),
                "{format:?}: {why}"
            ),
        }
    }
    let json = flakestorm::report::render(&report, ReportFormat::Json).unwrap();
    let again = Report::from_json(&json)
        .unwrap_or_else(|e| panic!("a report written back does not read: {e}"));
    if let Some(d) = differs(&to_value(&again), &to_value(&report), "") {
        panic!("a report written back reads otherwise: {d}");
    }
    let _ = flakestorm::run::tapes::cases(&report);
    let req = request(Path::new("report.json"), input);
    let claims = certificate::claims(&report, &req, &[7; 32]);
    assert_eq!(claims.certified, claims.reasons.is_empty());
}

fn request<'a>(path: &'a Path, bytes: &'a [u8]) -> Request<'a> {
    Request {
        report_path: path,
        report_bytes: bytes,
        tester: Some("fuzz".into()),
        threshold: None,
        issued_at: "2026-01-01T00:00:00Z".into(),
    }
}

/// Certificates issued for the seed reports, and what `verify` needs to check them.
pub struct Certificates {
    pub pages: Vec<Vec<u8>>,
    /// The certificate's file (beside it: the report, `report.json`).
    pub file: PathBuf,
    pub report: PathBuf,
}

/// Signs a certificate for each report in `reports` with a key made in `dir`; the bytes
/// certified are the first report's, saved as `dir/report.json`.
pub fn certificates(dir: &Path, reports: &[Vec<u8>]) -> Certificates {
    let key = key::load_or_create(dir).unwrap();
    let path = dir.join("report.json");
    std::fs::write(&path, &reports[0]).unwrap();
    let pages = reports
        .iter()
        .map(|r| {
            let report = Report::from_json(std::str::from_utf8(r).unwrap()).unwrap();
            let claims =
                certificate::claims(&report, &request(&path, &reports[0]), &key::public(&key));
            certificate::issue(&claims, &key).unwrap().into_bytes()
        })
        .collect();
    Certificates {
        pages,
        file: dir.join("report.certificate.html"),
        report: path,
    }
}

/// A certificate page: verified only if it is, byte for byte, a page that was issued
/// (a signature covers the claims; the page is rendered again from them).
pub fn certificate(c: &Certificates, rng: &mut Rng, input: &[u8]) {
    let page = String::from_utf8_lossy(input);
    let report = rng.chance(2).then_some(c.report.as_path());
    match certificate::verify(&c.file, &page, report) {
        Ok(v) => {
            parsed();
            assert!(
                c.pages.iter().any(|p| p.as_slice() == input),
                "a changed page verified: {:?}",
                v.claims
            );
        }
        Err(why) => {
            let why = why.to_string();
            // Counted as parsed: pages whose signature held, checked against the claims.
            if why.starts_with("the page was changed") {
                parsed();
            }
            assert!(!why.is_empty(), "an error says why");
        }
    }
}

/// A `POST /v1/runs` body through `api::check_submission`, as a JSON or a YAML body:
/// accepted, or refused with a reason of reasonable length (no file's content, no value
/// of the body quoted whole).
pub fn run_body(rng: &mut Rng, input: &[u8]) {
    match flakestorm::api::check_submission(input, rng.chance(2)) {
        Ok(()) => parsed(),
        Err(why) => {
            assert!(!why.is_empty(), "a refused body says why");
            assert!(
                why.len() <= 64 * 1024,
                "a refusal of {} bytes quotes too much",
                why.len()
            );
        }
    }
}
