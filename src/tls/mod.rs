//! TLS: the flakestorm CA (`ca`, checked by `check`), per-host leaf certificates for
//! interception (`leaf`), the client configuration for upstream connections (`upstream`),
//! and the trust bundle clients point at (`bundle`: system roots plus the CA). All crypto uses
//! rustls with the `ring` provider, chosen explicitly (never the process default).

mod bundle;
mod ca;
mod check;
mod leaf;
mod upstream;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

pub use bundle::{SYSTEM_ROOTS, system_roots, write_bundle, write_system_bundle};
pub use ca::{CA_CERT_FILE, CA_KEY_FILE, CertificateAuthority};
pub use leaf::LeafCache;
pub use upstream::{UpstreamTls, client_config, read_ca_bundle};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    BadFile { path: PathBuf, message: String },
    /// Not a regular file, too large, or unreadable (`files`).
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    #[error(
        "the CA key {key} does not match the certificate {cert} (a certificate and a key of \
         different issuances?): give the key that was issued with this certificate \
         (ca.cert_file/ca.key_file, or ca.pem and ca.key in ca.dir)"
    )]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error(
        "CA {path} already exists; pass --force to replace it (clients must then trust the new one)"
    )]
    CaExists { path: PathBuf },
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("`{host}` is not a valid host name or IP address for a certificate")]
    BadHost { host: String },
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("no system root bundle found (looked for {})", bundle::SYSTEM_ROOTS.join(", "))]
    NoSystemRoots,
}

/// The crypto provider used everywhere (ring: no C toolchain needed beyond cc).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate in a PEM file (a regular file of at most `files::MAX_PEM`); an error
/// when there is none.
pub fn read_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = crate::files::read(path, crate::files::Limit::Pem)?;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&bytes).collect();
    let certs = certs.map_err(|e| TlsError::BadFile {
        path: path.into(),
        message: format!("bad PEM: {e}"),
    })?;
    if certs.is_empty() {
        let message = "no PEM certificate (-----BEGIN CERTIFICATE-----) in file".to_string();
        return Err(TlsError::BadFile {
            path: path.into(),
            message,
        });
    }
    Ok(certs)
}
