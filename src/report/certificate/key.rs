//! The certificate signing key: one Ed25519 key per data folder, `data_dir/certificate.key`
//! (PKCS#8, mode 0600), made on first use. A key file others can read is refused, as ssh
//! refuses one: a signature is only worth the secrecy of its key.

use std::io::Write;
use std::path::{Path, PathBuf};

use ring::signature::{Ed25519KeyPair, KeyPair};

use super::CertificateError;

pub const FILE: &str = "certificate.key";

/// The key in `data_dir`, made (0600) if there is none.
pub fn load_or_create(data_dir: &Path) -> Result<Ed25519KeyPair, CertificateError> {
    load_or_make(data_dir).map_err(CertificateError)
}

fn load_or_make(data_dir: &Path) -> Result<Ed25519KeyPair, String> {
    let path = data_dir.join(FILE);
    if path.exists() {
        return load(&path);
    }
    std::fs::create_dir_all(data_dir)
        .map_err(|e| format!("creating {}: {e}", data_dir.display()))?;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|_| "could not generate a signing key".to_string())?;
    let mut file = private_file(&path)?;
    file.write_all(pkcs8.as_ref())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|e| format!("{}: {e}", path.display()))
}

/// The key in `data_dir`, if there is one (verification never makes one).
pub fn existing(data_dir: &Path) -> Result<Option<Ed25519KeyPair>, CertificateError> {
    let path = data_dir.join(FILE);
    match path.exists() {
        true => load(&path).map(Some).map_err(CertificateError),
        false => Ok(None),
    }
}

fn load(path: &Path) -> Result<Ed25519KeyPair, String> {
    check_private(path)?;
    let bytes =
        crate::files::read(path, crate::files::Limit::Key).map_err(|e| format!("reading {e}"))?;
    Ed25519KeyPair::from_pkcs8(&bytes).map_err(|e| {
        format!(
            "{}: not an Ed25519 PKCS#8 key ({e}); move it away to make a new one",
            path.display()
        )
    })
}

/// `SHA256:` and the base64 of the public key's SHA-256, as people compare keys.
pub fn fingerprint(public: &[u8]) -> String {
    use base64::Engine;
    let d = ring::digest::digest(&ring::digest::SHA256, public);
    let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(d.as_ref());
    format!("SHA256:{b64}")
}

pub fn public(key: &Ed25519KeyPair) -> Vec<u8> {
    key.public_key().as_ref().to_vec()
}

#[cfg(unix)]
fn private_file(path: &PathBuf) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating {}: {e}", path.display()))
}

#[cfg(not(unix))]
fn private_file(path: &PathBuf) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("creating {}: {e}", path.display()))
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("reading {}: {e}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} is readable by others (mode {:o}): `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_private_and_an_open_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path()).unwrap();
        let again = load_or_create(dir.path()).unwrap();
        assert_eq!(public(&first), public(&again));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(FILE);
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = load_or_create(dir.path()).err().unwrap().to_string();
            assert!(err.contains("readable by others (mode 644)"), "{err}");
        }
        assert!(fingerprint(&public(&first)).starts_with("SHA256:"));
    }
}
