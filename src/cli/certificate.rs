//! `flakestorm certificate REPORT.json [--tester NAME] [--threshold X] [-o PATH]` issues a
//! signed resilience certificate for a saved report; `flakestorm certificate verify FILE`
//! checks one (docs/reports.md). Exit codes: issue 0 certified, 1 written but not
//! certified; verify 0 valid, 1 something does not match; 2 bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::history::StoreArg;
use super::{ConfigArg, load};
use crate::config::Overrides;
use crate::files::{self, Limit};
use crate::report::certificate::{self, Request, VerifyError, key};
use crate::run::Report;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CertificateArgs {
    #[command(subcommand)]
    command: Option<CertificateCommand>,
    /// The JSON report to certify.
    report: Option<PathBuf>,
    /// Who ran the tests, stated on the certificate.
    #[arg(long, value_name = "NAME")]
    tester: Option<String>,
    /// The score (0–100) the run must reach to be certified (default: its pass mark).
    #[arg(long, value_name = "X")]
    threshold: Option<f64>,
    /// The certificate file (default: beside the report, `<name>.certificate.html`).
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    at: StoreArg,
}

#[derive(Debug, Subcommand)]
enum CertificateCommand {
    /// Check a certificate: its signature, the page, and the report it certifies.
    Verify {
        file: PathBuf,
        /// The certified report (default: the one the certificate names, looked for
        /// beside the certificate, then as named).
        #[arg(long, value_name = "PATH")]
        report: Option<PathBuf>,
        /// Require this signing key (`SHA256:…`, as issue and verify print it).
        #[arg(long, value_name = "FINGERPRINT")]
        key: Option<String>,
        #[command(flatten)]
        at: StoreArg,
    },
}

pub fn run(args: CertificateArgs) -> ExitCode {
    let result = match &args.command {
        Some(CertificateCommand::Verify {
            file,
            report,
            key,
            at,
        }) => verify(file, report.as_deref(), key.as_deref(), at),
        None => issue(&args),
    };
    result.unwrap_or_else(|(code, why)| {
        eprintln!("flakestorm: {why}");
        ExitCode::from(code)
    })
}

type Failed = (u8, String);

fn issue(args: &CertificateArgs) -> Result<ExitCode, Failed> {
    let Some(report_path) = &args.report else {
        return Err((
            2,
            "certificate: name the JSON report to certify (or `certificate verify FILE`)".into(),
        ));
    };
    if let Some(t) = args.threshold.filter(|t| !(0.0..=100.0).contains(t)) {
        return Err((2, format!("--threshold: {t} is outside 0..=100")));
    }
    let bytes = files::read(report_path, Limit::Report).map_err(|e| (2, e.to_string()))?;
    let text = String::from_utf8_lossy(&bytes);
    let report =
        Report::from_json(&text).map_err(|e| (2, format!("{}: {e}", report_path.display())))?;
    let key = key::load_or_create(&data_dir(&args.at)?).map_err(|e| (2, e.to_string()))?;
    let req = Request {
        report_path,
        report_bytes: &bytes,
        tester: args.tester.clone(),
        threshold: args.threshold,
        issued_at: now_rfc3339(),
    };
    let claims = certificate::claims(&report, &req, &key::public(&key));
    let page = certificate::issue(&claims, &key).map_err(|e| (1, e.to_string()))?;
    let out = args.output.clone().unwrap_or_else(|| {
        let stem = report_path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy();
        report_path.with_file_name(format!("{stem}.certificate.html"))
    });
    std::fs::write(&out, page).map_err(|e| (1, format!("writing {}: {e}", out.display())))?;
    let label = if claims.certified {
        "CERTIFIED"
    } else {
        "NOT CERTIFIED"
    };
    println!(
        "{label}: {} run {}, score {:.1}/100 (threshold {})",
        claims.kind,
        claims.verdict.label(),
        claims.score,
        claims.threshold
    );
    for r in &claims.reasons {
        println!("  - {r}");
    }
    println!("certificate: {}", out.display());
    println!("signed with key {}", key::fingerprint(&key::public(&key)));
    Ok(ExitCode::from(u8::from(!claims.certified)))
}

fn verify(
    file: &Path,
    report: Option<&Path>,
    want_key: Option<&str>,
    at: &StoreArg,
) -> Result<ExitCode, Failed> {
    let page = files::read_to_string(file, Limit::Certificate).map_err(|e| (2, e.to_string()))?;
    let v = certificate::verify(file, &page, report).map_err(|e| match e {
        VerifyError::Mismatch(why) => (1, format!("{}: {why}", file.display())),
        VerifyError::Unreadable(why) => (2, format!("{}: {why}", file.display())),
    })?;
    if let Some(want) = want_key.filter(|w| *w != v.fingerprint) {
        return Err((
            1,
            format!(
                "{}: signed with key {}, not {want}",
                file.display(),
                v.fingerprint
            ),
        ));
    }
    let c = &v.claims;
    println!(
        "valid: {} {} run {}, score {:.1}/100 (threshold {}), issued {}",
        if c.certified {
            "certified"
        } else {
            "not certified"
        },
        c.kind,
        c.verdict.label(),
        c.score,
        c.threshold,
        c.issued_at
    );
    println!(
        "report {} matches (sha256:{})",
        v.report.display(),
        c.report_sha256
    );
    let ours = data_dir(at)
        .ok()
        .and_then(|d| key::existing(&d).ok().flatten())
        .map(|k| key::fingerprint(&key::public(&k)));
    let whose = match ours {
        Some(f) if f == v.fingerprint => "this data folder's key",
        Some(_) => "not this data folder's key: compare it with the issuer's",
        None => "compare it with the issuer's",
    };
    println!("signed with key {} ({whose})", v.fingerprint);
    Ok(ExitCode::SUCCESS)
}

/// `--data-dir`, else the config's `data_dir` (where the signing key lives).
fn data_dir(at: &StoreArg) -> Result<PathBuf, Failed> {
    if let Some(d) = at.data_dir() {
        return Ok(d.to_path_buf());
    }
    let arg = ConfigArg {
        config: at.config().map(Path::to_path_buf),
        ca_dir: None,
    };
    load(&arg, Overrides::default())
        .map(|l| l.config.data_dir)
        .map_err(|_| (2, "the configuration is invalid".into()))
}

/// Now, RFC 3339 in UTC, to the second.
fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc().replace_nanosecond(0);
    now.ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}
