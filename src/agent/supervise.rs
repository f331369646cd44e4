//! The agent's supervisor: flakestorm's own binary, run again as the hidden command
//! `__supervise-agent`, between flakestorm and `agent.command`, so that no agent outlives
//! the flakestorm that started it, however flakestorm ends (a signal it handles, SIGHUP
//! from a closed terminal, SIGKILL from an OOM killer or a CI timeout, a crash).
//!
//! The supervisor leads a process group of its own and runs `sh -c COMMAND` in it. Its
//! stdin is one end of a socket pair whose other end only flakestorm holds (close-on-exec,
//! so no other child inherits it): its *lifeline*. It waits for one of two things:
//! - flakestorm writes `stop MS` (the end of a run, or a run that failed to start): SIGTERM
//!   to the group, up to MS for `sh` to exit, then SIGKILL to the group;
//! - the lifeline reaches EOF without that (flakestorm exited or was killed, or dropped the
//!   handle): the same, with a grace of [`GRACE_ON_EOF`].
//!
//! When `sh` exits first the supervisor writes `exited STATUS` on the lifeline (the agent's
//! exit status a run reports) and goes on waiting: what `sh` left running in the group is
//! stopped when flakestorm says so or goes away. It ignores SIGINT, SIGTERM and SIGHUP:
//! signals sent to the group are for the agent, and its own life ends with its lifeline.
//!
//! Why a supervisor (`#![forbid(unsafe_code)]` rules out `pre_exec` and `prctl` in
//! flakestorm): `setpriv --pdeathsig` exists only on Linux with util-linux, reaches `sh` but
//! not what `sh` started, and fires when the *thread* that forked exits, and tokio's
//! blocking-pool threads exit when idle, so it would kill the agents of live runs. The
//! kernel closes every descriptor of a process however it dies, so EOF on the lifeline is
//! a death notice that needs nothing from the dying process and no platform feature. The
//! supervisor sits in the agent's group, not flakestorm's: a kill of flakestorm's whole
//! group (a CI job's timeout) does not take the supervisor along before it has stopped the
//! agent. Only the agent's group being killed, or the supervisor alone, ends it otherwise.
//!
//! The binary registers itself (`cli::run`, [`supervise_with`]); a library user that
//! registers nothing (the crate's in-process tests) gets `sh -c` started directly in a group
//! of its own, stopped at the end and on drop, but orphaned if the process is SIGKILLed.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// The hidden command that runs the supervisor.
pub const COMMAND: &str = "__supervise-agent";

/// How long the supervisor waits for `sh` after SIGTERM when its lifeline ends unannounced.
pub const GRACE_ON_EOF: Duration = Duration::from_secs(2);

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Every agent this process starts from now on is supervised by `program` (flakestorm's
/// binary). The first registration holds.
pub fn supervise_with(program: impl Into<PathBuf>) {
    let _ = PROGRAM.set(program.into());
}

/// This process's binary: `/proc/self/exe` where there is one (it still starts a binary
/// replaced or deleted since this process started), else `current_exe`.
pub fn own_binary() -> Option<PathBuf> {
    let proc = Path::new("/proc/self/exe");
    match proc.exists() {
        true => Some(proc.to_path_buf()),
        false => std::env::current_exe().ok(),
    }
}

pub(super) fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// flakestorm's end of a supervisor's lifeline: what the supervisor reported, and how it is
/// told to stop.
pub(super) struct Lifeline {
    stream: UnixStream,
    read: Vec<u8>,
    exited: Option<String>,
}

impl Lifeline {
    /// `program __supervise-agent -- COMMAND`, its stdin the other end of the lifeline,
    /// leading a process group of its own; and the lifeline.
    pub(super) fn command(program: &Path, command: &str) -> io::Result<(Command, Lifeline)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let mut cmd = Command::new(program);
        cmd.arg(COMMAND)
            .arg("--")
            .arg(command)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .process_group(0);
        let lifeline = Lifeline {
            stream: ours,
            read: vec![],
            exited: None,
        };
        Ok((cmd, lifeline))
    }

    /// How `sh -c COMMAND` exited, once the supervisor has said so (never blocks).
    pub(super) fn exited(&mut self) -> Option<&str> {
        let mut buf = [0u8; 256];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break, // WouldBlock: nothing more for now
            }
        }
        while let Some(end) = self.read.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.read.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(status) = line.trim_end().strip_prefix("exited ") {
                self.exited = Some(status.to_string());
            }
        }
        self.exited.as_deref()
    }

    /// Tells the supervisor to stop the agent's group, giving `sh` `grace` after SIGTERM
    /// (`None`: [`GRACE_ON_EOF`]), and closes flakestorm's side.
    pub(super) fn stop(&mut self, grace: Option<Duration>) {
        if let Some(grace) = grace {
            // A few bytes into an empty socket buffer; a supervisor already gone is no error.
            let word = format!("stop {}\n", grace.as_millis());
            let _ = self.stream.write_all(word.as_bytes());
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// The supervisor (`flakestorm __supervise-agent -- COMMAND`): runs `sh -c COMMAND` in its
/// own process group with its stdout and stderr (the agent's log), and stops the group when
/// flakestorm says so or goes away.
pub async fn supervise(command: &str) -> ExitCode {
    let _ignored = ignore_stop_signals();
    let lifeline = match lifeline() {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "flakestorm: {COMMAND} is for flakestorm's own use (its stdin must be the \
                 socket flakestorm passes it): {e}"
            );
            return ExitCode::from(2);
        }
    };
    let (read, mut write) = lifeline.into_split();
    let mut words = BufReader::new(read).lines();
    let sh = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .spawn();
    let mut sh = match sh {
        Ok(sh) => sh,
        Err(e) => {
            report(&mut write, &format!("(could not start `sh`: {e})")).await;
            stop_word(&mut words).await;
            return ExitCode::from(1);
        }
    };
    let grace = tokio::select! {
        status = sh.wait() => {
            let status = status.map_or_else(|e| format!("(unknown: {e})"), |s| s.to_string());
            report(&mut write, &status).await;
            stop_word(&mut words).await
        }
        grace = stop_word(&mut words) => grace,
    };
    stop_group(&mut sh, grace).await;
    ExitCode::SUCCESS
}

/// Handlers for the signals that would otherwise end the supervisor with its group.
fn ignore_stop_signals() -> Vec<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .filter_map(|kind| signal(kind).ok())
    .collect()
}

/// The supervisor's end of the lifeline: its stdin, as a socket.
fn lifeline() -> io::Result<tokio::net::UnixStream> {
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
}

async fn report(write: &mut tokio::net::unix::OwnedWriteHalf, status: &str) {
    // flakestorm gone: nobody to tell, and the lifeline's EOF follows.
    let _ = write
        .write_all(format!("exited {status}\n").as_bytes())
        .await;
}

/// Waits for flakestorm's word: `stop MS`, or the lifeline's end (flakestorm went away, or
/// dropped its handle). The grace `sh` gets after SIGTERM.
async fn stop_word<R>(words: &mut tokio::io::Lines<R>) -> Duration
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    while let Ok(Some(word)) = words.next_line().await {
        let ms = word
            .strip_prefix("stop ")
            .and_then(|m| m.trim().parse().ok());
        if let Some(ms) = ms {
            return Duration::from_millis(ms);
        }
    }
    GRACE_ON_EOF
}

/// SIGTERM to the group (this process included: it ignores it), up to `grace` for `sh`,
/// then SIGKILL to the group, which ends this process too.
async fn stop_group(sh: &mut Child, grace: Duration) {
    let group = std::process::id();
    signal_group(group, Signal::TERM);
    let _ = tokio::time::timeout(grace, sh.wait()).await;
    signal_group(group, Signal::KILL);
}

/// Sends `signal` to process group `group` (`kill(-group, signal)`, through rustix: no
/// unsafe FFI here). A group already gone is no error: there is nothing left to stop.
pub(super) fn signal_group(group: u32, signal: Signal) {
    let group = i32::try_from(group).ok().and_then(Pid::from_raw);
    if let Some(group) = group {
        let _ = kill_process_group(group, signal);
    }
}
