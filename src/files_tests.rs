use std::path::Path;
use std::time::Duration;

use super::*;

/// `f` on another thread, failing the test if it does not return within a second (a FIFO
/// read the old way never returns).
fn within_a_second<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(1))
        .expect("returned within a second")
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

fn refused(path: &Path, limit: Limit) -> String {
    let owned = path.to_path_buf();
    let err = within_a_second(move || read(&owned, limit))
        .map(|b| b.len())
        .unwrap_err();
    assert!(matches!(err, FileError::NotAFile { .. }), "{err}");
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}: ", path.display())), "{text}");
    text
}

#[test]
fn a_regular_file_within_the_limit_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.pem");
    let at_limit = vec![b'x'; MAX_KEY as usize];
    std::fs::write(&path, &at_limit).unwrap();
    assert_eq!(read(&path, Limit::Key).unwrap(), at_limit);
    std::fs::write(&path, "ok: é\n").unwrap();
    assert_eq!(read_to_string(&path, Limit::Config).unwrap(), "ok: é\n");
    std::fs::write(&path, b"ok\xff").unwrap();
    let err = read_to_string(&path, Limit::Config).unwrap_err();
    assert!(
        err.to_string().ends_with("not UTF-8 text (at byte 2)"),
        "{err}"
    );
}

#[test]
fn a_file_over_its_limit_is_refused_naming_the_limit_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.pem");
    std::fs::write(&path, vec![b'x'; MAX_KEY as usize + 1]).unwrap();
    let err = read(&path, Limit::Key).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: 65537 bytes, over the 64 KiB limit for a key file: a private key is a few \
             KiB at most; is this the right file?",
            path.display()
        )
    );
    assert_eq!(human(MAX_TAPE), "512 MiB");
}

#[test]
fn fifos_devices_folders_and_sockets_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("session.yaml");
    mkfifo(&fifo);
    assert!(refused(&fifo, Limit::Session).contains("a FIFO (named pipe), not a regular file"));
    // Through a link, the FIFO is what is named.
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    assert!(refused(&link, Limit::Session).contains("a FIFO"));
    let zero = refused(Path::new("/dev/zero"), Limit::Tape);
    assert!(
        zero.starts_with("/dev/zero: a character device, not a regular file"),
        "{zero}"
    );
    assert!(refused(dir.path(), Limit::Config).contains("a directory, not a regular file"));
    let socket = dir.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(refused(&socket, Limit::Report).contains("a socket, not a regular file"));
    // `open` and `tail` refuse them too.
    let owned = fifo.clone();
    assert!(within_a_second(move || open(&owned).is_err()));
    let owned = fifo.clone();
    assert!(within_a_second(move || tail(&owned, 10).is_err()));
}

#[test]
fn a_missing_file_says_so() {
    let err = read(Path::new("/nonexistent/x.yaml"), Limit::Config).unwrap_err();
    assert!(err.not_found(), "{err}");
    assert!(
        err.to_string().starts_with("/nonexistent/x.yaml: "),
        "{err}"
    );
}

#[test]
fn the_tail_is_the_last_bytes_and_where_they_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.log");
    std::fs::write(&path, "0123456789").unwrap();
    assert_eq!(tail(&path, 4).unwrap(), (6, b"6789".to_vec()));
    assert_eq!(tail(&path, 100).unwrap(), (0, b"0123456789".to_vec()));
}
