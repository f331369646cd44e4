//! The proxy's end of `flakestorm wrap` (`mcp::stdio`): its private wrap directory, where
//! wraps bind their bridge sockets, and the connection to one bridge. The proxy connects
//! to `<dir>/<id>.sock` and to nothing else a request names, so an agent cannot point it
//! at another Unix socket of the host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixStream;

use super::rescue::{ErrorKind, ProxyError};

/// A directory only this user can enter (0700), removed with the proxy.
#[derive(Debug)]
pub struct WrapDir {
    path: PathBuf,
}

impl WrapDir {
    /// Makes a fresh directory under the system's temporary directory (short: a socket
    /// path has about 100 bytes).
    pub fn create() -> std::io::Result<WrapDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..4 {
            let path = base.join(format!(
                "flakestorm-wrap-{}",
                crate::mcp::stdio::random_hex(6)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(WrapDir { path }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no directory")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WrapDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Connects to bridge `id` in `dir`, within `timeout`.
pub async fn connect(
    dir: Option<&Path>,
    id: &str,
    timeout: Duration,
) -> Result<UnixStream, ProxyError> {
    let Some(dir) = dir else {
        return Err(ProxyError::new(
            ErrorKind::UpstreamConnect,
            "this proxy has no wrap directory: stdio servers cannot be bridged",
        ));
    };
    let path = dir.join(crate::mcp::stdio::socket_file(id));
    let failed = |e: std::io::Error| {
        ProxyError::new(
            ErrorKind::UpstreamConnect,
            format!(
                "the stdio bridge {id} (flakestorm wrap) cannot be reached at {}: {e}",
                path.display()
            ),
        )
    };
    match tokio::time::timeout(timeout, UnixStream::connect(&path)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(failed(e)),
        Err(_) => Err(failed(std::io::ErrorKind::TimedOut.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wrap_dir_is_private_and_gone_with_the_proxy() {
        use std::os::unix::fs::PermissionsExt;
        let dir = WrapDir::create().unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let l = tokio::net::UnixListener::bind(path.join("abcdef0123456789.sock")).unwrap();
        let ok = connect(Some(&path), "abcdef0123456789", Duration::from_secs(5)).await;
        assert!(ok.is_ok());
        drop(l);
        let e = connect(Some(&path), "0123456789abcdef", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("0123456789abcdef"), "{e}");
        drop(dir);
        assert!(!path.exists());
    }
}
