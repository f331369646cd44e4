//! Reading the files flakestorm is given (configs, session files, tapes, reports,
//! certificates, keys, PEM bundles, the agent's log): bounded, and never blocking. A path
//! is looked at before it is opened, opened with `O_NONBLOCK` and looked at again (the
//! opened file, not the name): anything but a regular file (FIFO, device, directory,
//! socket) is refused at once, saying what it is, since it may block forever or never end.
//! A file is read only when its size is within its kind's `Limit`, and then at most one
//! byte past it, so a file that grows while read is still bounded.
//!
//! Writing flakestorm's own files that hold a run's data (reports, tapes, the stored
//! report of an import) is here too: private to the user who runs it (`write_private`:
//! mode 0600 in folders made 0700), whole or not at all.
//!
//! Owns no format (callers parse) and uses no other module of the crate.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// A config file (also one named as a replay's `contract:`); the control API's body limit.
pub const MAX_CONFIG: u64 = MIB;
/// A replay session file: parsed with the config's checks, so the config's limit.
/// Recorded bodies belong in the session's tape.
pub const MAX_SESSION: u64 = MIB;
/// A tape (HAR), loaded whole; the recorder closes a tape before it passes this.
pub const MAX_TAPE: u64 = 512 * MIB;
/// A JSON report read back (`report`, `certificate`, `replay export`).
pub const MAX_REPORT: u64 = 64 * MIB;
/// A certificate page (a few KiB as flakestorm writes it).
pub const MAX_CERTIFICATE: u64 = MIB;
/// A PEM certificate bundle (`proxy.upstream_ca_file`, the CA's `ca.pem`); an OS bundle
/// of every public root is about 250 KiB.
pub const MAX_PEM: u64 = 4 * MIB;
/// A private key (the CA's `ca.key`, the certificate signing key): at most a few KiB.
pub const MAX_KEY: u64 = 64 * KIB;

/// What a file is read as, and so the most bytes read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Config,
    Session,
    Tape,
    Report,
    Certificate,
    Pem,
    Key,
}

impl Limit {
    pub const fn bytes(self) -> u64 {
        match self {
            Limit::Config => MAX_CONFIG,
            Limit::Session => MAX_SESSION,
            Limit::Tape => MAX_TAPE,
            Limit::Report => MAX_REPORT,
            Limit::Certificate => MAX_CERTIFICATE,
            Limit::Pem => MAX_PEM,
            Limit::Key => MAX_KEY,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Limit::Config => "config file",
            Limit::Session => "session file",
            Limit::Tape => "tape",
            Limit::Report => "report",
            Limit::Certificate => "certificate",
            Limit::Pem => "PEM certificate bundle",
            Limit::Key => "key file",
        }
    }

    /// What to do about a file over the limit.
    fn fix(self) -> &'static str {
        match self {
            Limit::Config => "a configuration is far smaller; is this the right file?",
            Limit::Session => "keep long recorded answers in the session's tape (`tape:`)",
            Limit::Tape => "record fewer exchanges per tape (one case's, or a shorter recording)",
            Limit::Report => "reports flakestorm writes are far smaller; is this the right file?",
            Limit::Certificate => "a certificate is a few KiB; is this the right file?",
            Limit::Pem => "keep only the CA certificates needed in the file",
            Limit::Key => "a private key is a few KiB at most; is this the right file?",
        }
    }
}

/// Why a file was not read. Shown as `PATH: reason`; `reason` alone for errors that name
/// the file themselves.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", self.path().display(), self.reason())]
pub enum FileError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A FIFO, device, directory or socket.
    NotAFile {
        path: PathBuf,
        found: &'static str,
    },
    /// `size` is `None` when the file grew past the limit while it was read.
    TooLarge {
        path: PathBuf,
        size: Option<u64>,
        limit: Limit,
    },
    NotUtf8 {
        path: PathBuf,
        at: usize,
    },
}

impl FileError {
    pub fn path(&self) -> &Path {
        match self {
            FileError::Io { path, .. }
            | FileError::NotAFile { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::NotUtf8 { path, .. } => path,
        }
    }

    /// The error without the path.
    pub fn reason(&self) -> String {
        match self {
            FileError::Io { source, .. } => source.to_string(),
            FileError::NotAFile { found, .. } => format!(
                "{found}, not a regular file: flakestorm reads only regular files (a FIFO, \
                 device or socket can block or never end); give the path of the file itself"
            ),
            FileError::TooLarge { size, limit, .. } => {
                let (what, max, fix) = (limit.what(), human(limit.bytes()), limit.fix());
                match size {
                    Some(n) => format!("{n} bytes, over the {max} limit for a {what}: {fix}"),
                    None => format!("grew past the {max} limit for a {what} as it was read"),
                }
            }
            FileError::NotUtf8 { at, .. } => format!("not UTF-8 text (at byte {at})"),
        }
    }

    /// The file does not exist (callers for which that means "none yet").
    pub fn not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Opens `path` for reading if it is a regular file (symbolic links followed).
pub fn open(path: &Path) -> Result<File, FileError> {
    open_sized(path).map(|(file, _)| file)
}

/// The whole file, if it is a regular file within `limit`.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    let (file, size) = open_sized(path)?;
    let too_large = |size| FileError::TooLarge {
        path: path.into(),
        size,
        limit,
    };
    if size > limit.bytes() {
        return Err(too_large(Some(size)));
    }
    // One byte past the limit tells a file that grew since fstat from one that did not.
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(limit.bytes() + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    if bytes.len() as u64 > limit.bytes() {
        return Err(too_large(None));
    }
    Ok(bytes)
}

/// `read`, as UTF-8 text.
pub fn read_to_string(path: &Path, limit: Limit) -> Result<String, FileError> {
    String::from_utf8(read(path, limit)?).map_err(|e| FileError::NotUtf8 {
        path: path.into(),
        at: e.utf8_error().valid_up_to(),
    })
}

/// The last `max` bytes of a regular file (of any size), and the offset they start at.
pub fn tail(path: &Path, max: u64) -> Result<(u64, Vec<u8>), FileError> {
    let (mut file, size) = open_sized(path)?;
    let from = size.saturating_sub(max);
    file.seek(SeekFrom::Start(from)).map_err(io(path))?;
    let mut bytes = vec![];
    file.take(max).read_to_end(&mut bytes).map_err(io(path))?;
    Ok((from, bytes))
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> FileError + '_ {
    move |source| FileError::Io {
        path: path.into(),
        source,
    }
}

/// The opened regular file and its size.
fn open_sized(path: &Path) -> Result<(File, u64), FileError> {
    // Looked at by name first, so a device is not even opened (opening a terminal or a
    // tape drive has effects of its own).
    if let Ok(meta) = std::fs::metadata(path) {
        regular(path, &meta)?;
    }
    let file = open_nonblocking(path).map_err(io(path))?;
    // Then the file opened: the name may have been pointed elsewhere in between.
    let meta = file.metadata().map_err(io(path))?;
    regular(path, &meta)?;
    Ok((file, meta.len()))
}

/// Makes `dir` and its missing parents, each it makes with mode 0700 (the folders that
/// exist keep theirs).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes `bytes` to `path` whole, readable by its owner only (0600): a temporary file of
/// a name no other process uses, beside it, renamed into place, so a reader never sees
/// half a file and a file that was there (whatever its mode) is replaced, not rewritten.
/// Missing folders are made 0700.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for
    // one. O_NOCTTY: a terminal opened by a race never becomes ours.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

fn regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), FileError> {
    match meta.is_file() {
        true => Ok(()),
        false => Err(FileError::NotAFile {
            path: path.into(),
            found: kind(&meta.file_type()),
        }),
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        } else if t.is_char_device() {
            return "a character device";
        } else if t.is_block_device() {
            return "a block device";
        } else if t.is_socket() {
            return "a socket";
        }
    }
    "something else"
}

/// `1 MiB`, `64 KiB`, or bytes.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
