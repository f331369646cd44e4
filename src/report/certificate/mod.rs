//! The resilience certificate (docs/reports.md): one HTML page stating what a run proved
//! about an agent (agent, config digest, seed, scores, verdict, the SHA-256 of the JSON
//! report) and an Ed25519 signature over those claims with the data folder's key
//! (`key.rs`). The claims are in the page as the exact JSON bytes signed; verification
//! checks the signature, renders the page again from the claims (so one byte changed
//! anywhere in the page fails) and hashes the report again.

pub mod key;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{ED25519, UnparsedPublicKey};
use serde::{Deserialize, Serialize};

use crate::run::{Report, RunVerdict};

/// The claims' format version.
pub const SCHEMA: &str = "flakestorm.certificate/1";

/// What the certificate states, signed as one JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    pub certificate: String,
    pub agent: Option<String>,
    /// `contract`, `chaos`, `mutation` or `ci`.
    pub kind: String,
    /// The contract's name, when the run had one.
    pub name: Option<String>,
    pub config_digest: Option<String>,
    pub seed: Option<u64>,
    /// Each phase's score, and `overall` for `ci`.
    pub scores: BTreeMap<String, f64>,
    /// The run's score (`ci`: the overall).
    pub score: f64,
    pub verdict: RunVerdict,
    pub threshold: f64,
    /// The run passed and its score reached the threshold.
    pub certified: bool,
    /// Why it is not certified.
    pub reasons: Vec<String>,
    pub tester: Option<String>,
    /// RFC 3339, UTC.
    pub issued_at: String,
    pub flakestorm: String,
    /// The report file as it was named when certified.
    pub report: String,
    /// Hex SHA-256 of the report file's bytes.
    pub report_sha256: String,
    /// The signing key's public half, base64.
    pub public_key: String,
}

/// Who and what asked for a certificate.
pub struct Request<'a> {
    pub report_path: &'a Path,
    pub report_bytes: &'a [u8],
    pub tester: Option<String>,
    /// Default: the report's own pass mark.
    pub threshold: Option<f64>,
    pub issued_at: String,
}

/// The claims for `report`, not yet signed.
pub fn claims(report: &Report, req: &Request<'_>, public: &[u8]) -> Claims {
    let overview = super::view::overview(report);
    let threshold = req.threshold.unwrap_or(overview.min_score);
    let mut reasons = vec![];
    if overview.verdict != RunVerdict::Pass {
        reasons.push(format!(
            "the run's verdict is {}",
            overview.verdict.label().to_lowercase()
        ));
        reasons.extend(overview.reasons.iter().cloned());
    }
    if overview.score < threshold {
        reasons.push(format!(
            "score {:.1} is below the threshold {threshold}",
            overview.score
        ));
    }
    let first = overview.sections.first();
    Claims {
        certificate: SCHEMA.into(),
        agent: overview.info.and_then(|i| i.agent.clone()),
        kind: overview.kind.into(),
        name: overview
            .sections
            .iter()
            .find(|s| s.phase == crate::run::RunKind::Contract)
            .and_then(|s| s.name.map(String::from)),
        config_digest: overview.config_digest.map(String::from),
        seed: first.map(|s| s.seed),
        scores: report.scores().into_iter().collect(),
        score: overview.score,
        verdict: overview.verdict,
        threshold,
        certified: reasons.is_empty(),
        reasons,
        tester: req.tester.clone(),
        issued_at: req.issued_at.clone(),
        flakestorm: env!("CARGO_PKG_VERSION").into(),
        report: req.report_path.display().to_string(),
        report_sha256: sha256_hex(req.report_bytes),
        public_key: STANDARD.encode(public),
    }
}

/// The claims as the bytes signed and embedded: JSON with `<`, `>` and `&` escaped, so
/// no value can end the page's data block.
fn signed_bytes(claims: &Claims) -> String {
    serde_json::to_string(claims)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Why a certificate could not be issued: its signing key could not be made or read (a
/// key file others can read, a damaged one), or its page not rendered. In words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CertificateError(String);

/// Signs `claims` with `key` and renders the page.
pub fn issue(
    claims: &Claims,
    key: &ring::signature::Ed25519KeyPair,
) -> Result<String, CertificateError> {
    let raw = signed_bytes(claims);
    let signature = STANDARD.encode(key.sign(raw.as_bytes()).as_ref());
    page(claims, &raw, &signature).map_err(CertificateError)
}

static TEMPLATE: LazyLock<Result<minijinja::Environment<'static>, String>> = LazyLock::new(|| {
    let mut env = minijinja::Environment::new();
    env.add_template("certificate.html", include_str!("page.html"))
        .map_err(|e| format!("the certificate template: {e}"))?;
    Ok(env)
});

fn page(claims: &Claims, raw: &str, signature: &str) -> Result<String, String> {
    let env = TEMPLATE.as_ref().map_err(Clone::clone)?;
    let public = STANDARD.decode(&claims.public_key).unwrap_or_default();
    let ctx = minijinja::context! {
        c => minijinja::Value::from(minijinja::value::Serde(claims)),
        claims => raw,
        signature => signature,
        fingerprint => key::fingerprint(&public),
    };
    env.get_template("certificate.html")
        .and_then(|t| t.render(ctx))
        .map_err(|e| format!("rendering the certificate: {e}"))
}

/// A verified certificate: its claims and the key that signed it.
#[derive(Debug)]
pub struct Verified {
    pub claims: Claims,
    pub fingerprint: String,
    /// The report that was hashed again.
    pub report: PathBuf,
}

/// Why a certificate does not verify.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// Something does not match, or the page is no certificate: said exactly.
    #[error("{0}")]
    Mismatch(String),
    /// The certified report could not be read (missing, not a regular file, too large).
    #[error("{0}")]
    Unreadable(String),
}

impl From<String> for VerifyError {
    fn from(why: String) -> Self {
        VerifyError::Mismatch(why)
    }
}

impl From<&str> for VerifyError {
    fn from(why: &str) -> Self {
        VerifyError::Mismatch(why.into())
    }
}

/// Checks the certificate `page` (read from `file`): the signature over its claims, the
/// page against the claims, and the report (`report`, else the one it names, relative to
/// the certificate's folder or the current one) against its hash. Each failure says
/// exactly what does not match.
pub fn verify(
    file: &Path,
    page_text: &str,
    report: Option<&Path>,
) -> Result<Verified, VerifyError> {
    let raw = between(
        page_text,
        "<script type=\"application/json\" id=\"flakestorm-certificate\">",
        "</script>",
    )
    .ok_or("not a flakestorm certificate: it has no signed claims")?;
    let signature = between(
        page_text,
        "<meta name=\"flakestorm-signature\" content=\"",
        "\">",
    )
    .ok_or("not a flakestorm certificate: it has no signature")?;
    let claims: Claims = serde_json::from_str(raw).map_err(|e| {
        let why = crate::config::redact::serde_message(&e.to_string());
        format!("the signed claims do not parse: {why}")
    })?;
    if claims.certificate != SCHEMA {
        return Err(format!(
            "the claims are {}, not {SCHEMA} (this build reads {SCHEMA})",
            super::text::clip(&claims.certificate, 60)
        )
        .into());
    }
    let public = STANDARD
        .decode(&claims.public_key)
        .map_err(|e| format!("public_key: not base64: {e}"))?;
    let sig = STANDARD
        .decode(signature)
        .map_err(|e| format!("the signature is not base64: {e}"))?;
    UnparsedPublicKey::new(&ED25519, &public)
        .verify(raw.as_bytes(), &sig)
        .map_err(|_| {
            "the signature does not match the claims: the claims were changed after signing, \
             or signed with another key"
                .to_string()
        })?;
    same_page(&claims, raw, signature, page_text)?;
    let path = report.map_or_else(|| named_report(file, &claims), Path::to_path_buf);
    let bytes = crate::files::read(&path, crate::files::Limit::Report).map_err(|e| {
        VerifyError::Unreadable(format!("the certified report {e} (name it with --report)"))
    })?;
    let found = sha256_hex(&bytes);
    if found != claims.report_sha256 {
        return Err(format!(
            "the report {} changed since it was certified: its SHA-256 is {found}, the \
             certificate says {}",
            path.display(),
            claims.report_sha256
        )
        .into());
    }
    Ok(Verified {
        fingerprint: key::fingerprint(&public),
        claims,
        report: path,
    })
}

/// Checks that `page_text` is the page the signed claims render to; else names the first
/// line that differs.
fn same_page(
    claims: &Claims,
    raw: &str,
    signature: &str,
    page_text: &str,
) -> Result<(), VerifyError> {
    let again = page(claims, raw, signature)?;
    if again != page_text {
        let line = again
            .lines()
            .zip(page_text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(again.lines().count().min(page_text.lines().count()));
        return Err(format!(
            "the page was changed after signing: line {} is not what the signed claims say \
             (it reads {:?})",
            line + 1,
            super::text::clip(page_text.lines().nth(line).unwrap_or("(end of file)"), 120)
        )
        .into());
    }
    Ok(())
}

/// The report the claims name: as named (relative to the current folder), else the file of
/// that name beside the certificate `file` when only that one exists.
fn named_report(file: &Path, claims: &Claims) -> PathBuf {
    let named = PathBuf::from(&claims.report);
    let beside = file
        .parent()
        .map(|d| d.join(named.file_name().unwrap_or_default()));
    match beside.filter(|b| b.is_file()) {
        Some(b) if !named.is_file() => b,
        _ => named,
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

fn sha256_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
