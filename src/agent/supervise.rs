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
//! With `agent.capture: netns` the supervisor is started by `unshare --net` (and, for a
//! user who is not root, `--user --map-root-user`): before `sh` it sets the namespace up
//! (`capture::set_up`) and writes `netns` on the lifeline with the capture sockets
//! attached, then answers socket requests on the channel that came with them
//! (`capture::serve_factory`) while the agent runs. A namespace that cannot be set up is
//! reported as `exited (…)` with the reason, as a `sh` that cannot start is.
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

use crate::capture::{Namespace, RunAs};

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
    /// leading a process group of its own; and the lifeline. With `netns`, started by
    /// `unshare` in a network namespace of its own, which it sets up for the agent to run
    /// as `netns` says.
    pub(super) fn command(
        program: &Path,
        command: &str,
        netns: Option<RunAs>,
    ) -> io::Result<(Command, Lifeline)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let mut cmd = match netns {
            None => Command::new(program),
            Some(run_as) => {
                let unshare = crate::capture::tool("unshare").ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        "agent.capture: netns needs `unshare` (Debian: apt install util-linux)",
                    )
                })?;
                // `/proc/self/exe` would be `unshare` itself once it runs.
                let program = std::fs::canonicalize(program)?;
                let mut cmd = Command::new(unshare);
                cmd.args(run_as.unshare_args()).arg(program);
                cmd
            }
        };
        cmd.arg(COMMAND);
        if let Some(run_as) = netns {
            cmd.arg("--netns").arg(run_as.arg());
        }
        cmd.arg("--")
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

    /// The namespace the supervisor set up (`agent.capture: netns`): waits for its `netns`
    /// word and the sockets that come with it. The error: it said `exited (…)` instead (the
    /// reason), or ended without a word.
    pub(super) async fn namespace(&mut self) -> Result<Namespace, String> {
        let watch =
            tokio::net::UnixStream::from_std(self.stream.try_clone().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 512];
        loop {
            watch.readable().await.map_err(|e| e.to_string())?;
            let got = watch.try_io(tokio::io::Interest::READABLE, || {
                crate::capture::recv_fds(&self.stream, &mut buf)
            });
            let (n, fds) = match got {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e.to_string()),
                Ok(got) => got,
            };
            if n == 0 {
                return Err("its supervisor ended without setting the namespace up".into());
            }
            self.read.extend_from_slice(&buf[..n]);
            let Some(end) = self.read.iter().position(|&b| b == b'\n') else {
                continue;
            };
            let line: Vec<u8> = self.read.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).to_string();
            if let Some(status) = line.trim_end().strip_prefix("exited ") {
                self.exited = Some(status.to_string());
                return Err(status.trim_matches(['(', ')']).to_string());
            }
            return Namespace::from_message(&line, fds).map_err(|e| {
                format!("its supervisor's namespace sockets did not arrive whole: {e}")
            });
        }
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

/// The supervisor (`flakestorm __supervise-agent [--netns AS] -- COMMAND`): runs `sh -c
/// COMMAND` in its own process group with its stdout and stderr (the agent's log), and
/// stops the group when flakestorm says so or goes away. With `netns` (`root` or
/// `UID:GID`), it first sets up the network namespace it was started in.
pub async fn supervise(command: &str, netns: Option<&str>) -> ExitCode {
    let _ignored = ignore_stop_signals();
    let run_as = match netns.map(|n| RunAs::parse(n).ok_or(n)).transpose() {
        Ok(r) => r,
        Err(bad) => {
            eprintln!("flakestorm: {COMMAND} --netns takes `root` or `UID:GID`, not `{bad}`");
            return ExitCode::from(2);
        }
    };
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
    let set_up = run_as.map(|_| crate::capture::set_up(lifeline.as_fd()));
    let lifeline = match tokio::net::UnixStream::from_std(lifeline) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("flakestorm: {COMMAND}: its lifeline: {e}");
            return ExitCode::from(2);
        }
    };
    let (read, mut write) = lifeline.into_split();
    let mut words = BufReader::new(read).lines();
    let factory = match set_up {
        Some(Err(why)) => {
            let why = format!("(the agent's network namespace could not be set up: {why})");
            report(&mut write, &why).await;
            stop_word(&mut words).await;
            return ExitCode::from(1);
        }
        Some(Ok(channel)) => Some(tokio::spawn(crate::capture::serve_factory(channel))),
        None => None,
    };
    let sh = match run_as {
        Some(run_as) => crate::capture::agent_command(run_as, command),
        None => {
            let mut sh = Command::new("sh");
            sh.arg("-c").arg(command);
            sh
        }
    }
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
    if let Some(f) = factory {
        f.abort();
    }
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
fn lifeline() -> io::Result<UnixStream> {
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    Ok(stream)
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
