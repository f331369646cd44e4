//! The trust bundle clients point `SSL_CERT_FILE` / `REQUESTS_CA_BUNDLE` at: the system's
//! root certificates plus flakestorm's CA, in one PEM file (`flakestorm ca bundle -o
//! FILE`, or `ca.bundle_file` written by the daemon at start). Pointing those variables at
//! the CA alone breaks every passthrough host (its real certificate is then untrusted).
//! Written whole or not at all (a temporary file renamed over it), mode 0644: it holds
//! public certificates only, never a key.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::TlsError;

/// Where distributions keep their root bundle (Debian and Ubuntu, Fedora and RHEL, SUSE,
/// the RHEL extracted form, Alpine and BSDs), in the order looked for.
pub const SYSTEM_ROOTS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The first system root bundle that exists.
pub fn system_roots() -> Option<PathBuf> {
    SYSTEM_ROOTS.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Writes this machine's system roots plus `ca_pem` to `out` (`ca.bundle_file`); the
/// problem in words when there are no system roots or the file cannot be written.
pub fn write_system_bundle(out: &Path, ca_pem: &str) -> Result<usize, TlsError> {
    let roots = system_roots().ok_or(TlsError::NoSystemRoots)?;
    write_bundle(out, &roots, ca_pem)
}

/// Writes the certificates of `roots` (a PEM bundle) and `ca_pem` to `out`; returns how
/// many certificates it holds. A root equal to the CA is written once.
pub fn write_bundle(out: &Path, roots: &Path, ca_pem: &str) -> Result<usize, TlsError> {
    let ca: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::BadFile {
            path: out.into(),
            message: format!("the CA certificate is not valid PEM: {e}"),
        })?;
    let system = super::read_pem_certs(roots)?;
    let mut text = String::new();
    let mut n = 0;
    for der in ca.iter().chain(system.iter().filter(|c| !ca.contains(c))) {
        pem(&mut text, der);
        n += 1;
    }
    write_public(out, text.as_bytes())?;
    Ok(n)
}

fn pem(text: &mut String, der: &[u8]) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    text.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str("-----END CERTIFICATE-----\n");
}

/// `bytes` to `path` through a temporary file in the same folder, renamed over it.
fn write_public(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    let io = |source| TlsError::Io {
        path: path.into(),
        source,
    };
    let name = path
        .file_name()
        .map_or_else(|| "bundle".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o644);
    let mut f = opts.open(&tmp).map_err(io)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_is_the_ca_then_every_other_root() {
        let dir = tempfile::tempdir().unwrap();
        let ca = super::super::CertificateAuthority::create(&dir.path().join("ca"), false).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let test_ca = std::fs::read_to_string(fixtures.join("test-ca.pem")).unwrap();
        // A system bundle that already holds flakestorm's CA (a bundle made before).
        let roots = dir.path().join("roots.pem");
        std::fs::write(&roots, format!("{test_ca}\n{}", ca.cert_pem())).unwrap();
        let out = dir.path().join("bundle.pem");
        assert_eq!(write_bundle(&out, &roots, ca.cert_pem()).unwrap(), 2);
        let certs = super::super::read_pem_certs(&out).unwrap();
        let ca_der = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap();
        let test_der = CertificateDer::from_pem_slice(test_ca.as_bytes()).unwrap();
        assert_eq!(certs, [ca_der, test_der]);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains("PRIVATE KEY"));
        assert!(
            text.lines()
                .all(|l| l.len() <= 64 || l.starts_with("-----"))
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&out).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
        let err = write_bundle(&out, &dir.path().join("none.pem"), ca.cert_pem()).unwrap_err();
        assert!(err.to_string().contains("none.pem"), "{err}");
    }
}
