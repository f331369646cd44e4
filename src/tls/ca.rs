//! The flakestorm certificate authority: created once (`ca init`, or by `serve` when
//! missing), stored as `ca.pem` + `ca.key` (mode 0600) in the CA folder, or read from two
//! files given (`ca.cert_file`/`ca.key_file`, e.g. a mounted Secret, never created or
//! changed), checked (`check`: key matches, a CA, valid now) and used to sign leaf
//! certificates. The key is never served; `cert_pem` is what clients trust.

use std::io::Write;
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use time::{Duration, OffsetDateTime};

use super::TlsError;

pub const CA_CERT_FILE: &str = "ca.pem";
pub const CA_KEY_FILE: &str = "ca.key";

pub struct CertificateAuthority {
    cert_pem: String,
    cert_path: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    validity: super::check::Validity,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("cert_path", &self.cert_path)
            .finish()
    }
}

impl CertificateAuthority {
    /// Loads the CA in `dir`, creating it first if it does not exist. Returns whether it
    /// was created.
    pub fn load_or_create(dir: &Path) -> Result<(Self, bool), TlsError> {
        if dir.join(CA_CERT_FILE).exists() || dir.join(CA_KEY_FILE).exists() {
            Ok((Self::load(dir)?, false))
        } else {
            Ok((Self::create(dir, false)?, true))
        }
    }

    /// Creates a new CA in `dir`; refuses to overwrite one unless `force`.
    pub fn create(dir: &Path, force: bool) -> Result<Self, TlsError> {
        let cert_path = dir.join(CA_CERT_FILE);
        if !force && cert_path.exists() {
            return Err(TlsError::CaExists { path: cert_path });
        }
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
            path: dir.into(),
            source,
        })?;
        let key = KeyPair::generate()?;
        let cert = ca_params()?.self_signed(&key)?;
        write_private(&dir.join(CA_KEY_FILE), key.serialize_pem().as_bytes())?;
        std::fs::write(&cert_path, cert.pem()).map_err(|source| TlsError::Io {
            path: cert_path.clone(),
            source,
        })?;
        Self::load(dir)
    }

    /// Loads `ca.pem` and `ca.key` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, TlsError> {
        Self::from_files(&dir.join(CA_CERT_FILE), &dir.join(CA_KEY_FILE))
    }

    /// Loads the CA from a certificate and a key file (PEM), checked: the key is the
    /// certificate's, it is a CA, it is valid now.
    pub fn from_files(cert_path: &Path, key_path: &Path) -> Result<Self, TlsError> {
        let (cert_path, key_path) = (cert_path.to_path_buf(), key_path.to_path_buf());
        use crate::files::{Limit, read_to_string};
        let cert_pem = read_to_string(&cert_path, Limit::Pem)?;
        let key_pem = read_to_string(&key_path, Limit::Key)?;
        warn_if_readable_by_others(&key_path);
        let bad = |path: &Path, what: &str, e: rcgen::Error| TlsError::BadFile {
            path: path.into(),
            message: format!("not a valid {what}: {e}"),
        };
        let key = KeyPair::from_pem(&key_pem).map_err(|e| bad(&key_path, "PEM private key", e))?;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let validity = super::check::check_ca(&cert_pem, &cert_path, &key, &key_path, now)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)
            .map_err(|e| bad(&cert_path, "PEM CA certificate", e))?;
        Ok(CertificateAuthority {
            cert_pem,
            cert_path,
            issuer,
            validity,
        })
    }

    /// The certificate's `notAfter`, Unix seconds.
    pub fn not_after(&self) -> i64 {
        self.validity.not_after
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    pub(crate) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }
}

fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    let now = OffsetDateTime::now_utc();
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
    p.distinguished_name
        .push(DnType::CommonName, format!("flakestorm CA ({host})"));
    p.distinguished_name
        .push(DnType::OrganizationName, "flakestorm");
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = now - Duration::days(1);
    p.not_after = now + Duration::days(3650);
    Ok(p)
}

/// Writes a file readable by its owner only (created with mode 0600, never widened).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    let io = |source| TlsError::Io {
        path: path.into(),
        source,
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(path).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // An existing file keeps its old mode on open: narrow it explicitly.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    Ok(())
}

fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Group-readable is how a Kubernetes Secret reaches a non-root container (the
        // pod's fsGroup, defaultMode 0440): only a key every user can read is warned about.
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o007 != 0
        {
            tracing::warn!(
                "CA key {} is readable by every user; run `chmod 600` on it (or 0440 with a \
                 group only flakestorm is in, e.g. a Secret with defaultMode 0440 and fsGroup)",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_then_load_round_trips_and_protects_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, created) = CertificateAuthority::load_or_create(dir.path()).unwrap();
        assert!(created);
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(CA_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, created) = CertificateAuthority::load_or_create(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(again.cert_pem(), ca.cert_pem());
        assert!(matches!(
            CertificateAuthority::create(dir.path(), false),
            Err(TlsError::CaExists { .. })
        ));
    }

    #[test]
    fn a_corrupt_key_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        CertificateAuthority::create(dir.path(), false).unwrap();
        std::fs::write(dir.path().join(CA_KEY_FILE), "garbage").unwrap();
        let err = CertificateAuthority::load(dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ca.key") && err.contains("not a valid PEM private key"),
            "{err}"
        );
    }
}
