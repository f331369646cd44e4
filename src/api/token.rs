//! The control API's token when `control.token` is not set: made once, kept in
//! `data_dir/control.token` (mode 0600, so only the user who runs flakestorm can read it),
//! and reused by every later start on that data_dir, so `--server` and `curl` on the same
//! machine pick it up while other local users (a shared CI runner) and web pages cannot.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The file's name inside `data_dir`.
pub const FILE: &str = "control.token";

/// Why the token file could not be made or used.
#[derive(Debug, thiserror::Error)]
#[error("control token {}: {reason}", path.display())]
pub struct TokenError {
    pub path: PathBuf,
    pub reason: String,
}

/// The token in `data_dir/control.token`, made now if there is none. A file that other
/// users could read or write, or that another user owns, is refused (its token may be
/// known to them).
pub fn ensure(data_dir: &Path) -> Result<String, TokenError> {
    let path = data_dir.join(FILE);
    let fail = |reason: String| TokenError {
        path: path.clone(),
        reason,
    };
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(data_dir)
        .map_err(|e| fail(format!("creating its folder: {e}")))?;
    // A new token goes to a private temporary file, then is linked into place: a link never
    // replaces an existing file, so two daemons starting at once agree on one token, and no
    // reader sees a half-written file.
    let token = new_token().map_err(fail)?;
    // A name of its own randomness: one made of the token's first characters told a
    // directory listing part of the secret.
    let nonce = new_token().map_err(fail)?;
    let temp = data_dir.join(format!("{FILE}.{}.tmp", &nonce[..16]));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(|e| fail(format!("creating {}: {e}", temp.display())))?;
    let me = file.metadata().map(|m| m.uid());
    let written = file
        .write_all(token.as_bytes())
        .and_then(|()| file.sync_all());
    let linked = written.and_then(|()| std::fs::hard_link(&temp, &path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(token),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let me = me.map_err(|e| fail(e.to_string()))?;
            read_private(&path, Some(me))
        }
        Err(e) => Err(fail(format!("writing it: {e}"))),
    }
}

/// The token a daemon on `data_dir` uses when it made its own, if this user can read it.
pub fn read(data_dir: &Path) -> Result<String, TokenError> {
    read_private(&data_dir.join(FILE), None)
}

/// Reads a token file that only its owner (`owner`, when given) can read and write.
fn read_private(path: &Path, owner: Option<u32>) -> Result<String, TokenError> {
    let fail = |reason: String| TokenError {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(fail(format!(
            "other users may read or change it (mode {mode:o}); run `chmod 600 {}`, or delete \
             it so that the next start makes a new one",
            path.display()
        )));
    }
    if owner.is_some_and(|uid| uid != meta.uid()) {
        return Err(fail(
            "another user owns it, so they may know the token; delete it so that the next \
             start makes a new one"
                .into(),
        ));
    }
    let text = crate::files::read(path, crate::files::Limit::Key).map_err(|e| fail(e.reason()))?;
    let text = String::from_utf8_lossy(&text);
    let token = text.trim();
    if token.is_empty() || token.len() > 512 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(fail(
            "it does not hold a token; delete it so that the next start makes a new one".into(),
        ));
    }
    Ok(token.to_string())
}

/// 32 random bytes, hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| "the system's random source failed".to_string())?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path()).unwrap();
        assert_eq!(first.len(), 64);
        let path = dir.path().join(FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            ensure(dir.path()).unwrap(),
            first,
            "a second start reuses it"
        );
        assert_eq!(read(dir.path()).unwrap(), first);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
    }

    #[test]
    fn a_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        ensure(dir.path()).unwrap();
        let path = dir.path().join(FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ensure(dir.path()).unwrap_err().to_string();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        assert!(read(dir.path()).is_err());
    }

    #[test]
    fn a_file_without_a_token_is_refused_and_not_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, "two words\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = ensure(dir.path()).unwrap_err().to_string();
        assert!(e.contains("does not hold a token"), "{e}");
        assert!(!e.contains("two words"), "{e}");
    }
}
