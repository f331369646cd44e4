//! The agent's network namespace, from the supervisor's side (it runs inside it, started by
//! `unshare --net`): loopback up, every address local (`ip route add local default dev
//! lo`, so a `connect()` to any address leaves the socket layer and meets the rules), the
//! capture listener, the DNS socket and the socket factory's channel opened, the
//! redirection rules loaded (`nft`), and the sockets handed to flakestorm over the
//! lifeline. Then the agent's command, as the user who started flakestorm (a user namespace
//! of its own maps the supervisor's root back to that user) or as root when flakestorm runs
//! as root.

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;

use socket2::{Domain, Protocol, Socket, Type};

use super::nft::{self, Ports};
use super::pass;

/// Pending connections the capture listener holds: an agent that opens hundreds at once
/// is answered by the proxy's cap (`proxy.max_connections`), not by SYNs dropped here.
const BACKLOG: i32 = 1024;

/// Who the agent runs as inside the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// flakestorm runs as root: no user namespace.
    Root,
    /// The user (and group) who started flakestorm.
    User { uid: u32, gid: u32 },
}

impl RunAs {
    /// This process's user.
    pub fn current() -> RunAs {
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        match uid.is_root() {
            true => RunAs::Root,
            false => RunAs::User {
                uid: uid.as_raw(),
                gid: gid.as_raw(),
            },
        }
    }

    /// As the supervisor's `--netns` takes it: `root` or `UID:GID`.
    pub fn arg(self) -> String {
        match self {
            RunAs::Root => "root".into(),
            RunAs::User { uid, gid } => format!("{uid}:{gid}"),
        }
    }

    pub fn parse(s: &str) -> Option<RunAs> {
        if s == "root" {
            return Some(RunAs::Root);
        }
        let (uid, gid) = s.split_once(':')?;
        Some(RunAs::User {
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
        })
    }

    /// `unshare`'s options that start the supervisor in a new network namespace (and, for
    /// a user, a user namespace in which it is root, which the namespace's setup needs).
    pub fn unshare_args(self) -> &'static [&'static str] {
        match self {
            RunAs::Root => &["--net", "--"],
            RunAs::User { .. } => &["--user", "--map-root-user", "--net", "--"],
        }
    }
}

/// Where a tool is: `PATH`, then the system folders a user's `PATH` often lacks.
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from);
    std::env::split_paths(&path)
        .chain(extra)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The Debian package that has a tool.
pub fn package_of(tool: &str) -> &'static str {
    match tool {
        "ip" => "iproute2",
        "nft" => "nftables",
        _ => "util-linux",
    }
}

/// Runs `tool args` (with `input` on its stdin), its stderr the error.
fn run(name: &str, args: &[&str], input: Option<&str>) -> Result<(), String> {
    let Some(path) = tool(name) else {
        return Err(format!(
            "`{name}` is not installed (Debian: apt install {})",
            package_of(name)
        ));
    };
    let mut child = std::process::Command::new(&path)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("`{}` could not start: {e}", path.display()))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = stdin.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("`{name}`: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "`{name} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

fn listener(addr: SocketAddr) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket)
}

fn port(socket: &Socket) -> Result<u16, String> {
    socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .ok_or_else(|| "a capture socket has no port".to_string())
}

/// Sets up the namespace this process is in and sends flakestorm its sockets over
/// `lifeline`: `netns\n` (or `netns v6\n` when IPv6 is captured too) with the factory's
/// channel, the DNS socket and the capture listeners (IPv4, then IPv6). Returns the
/// supervisor's end of the factory's channel. The error says which step failed.
pub fn set_up(lifeline: BorrowedFd<'_>) -> Result<OwnedFd, String> {
    run("ip", &["link", "set", "lo", "up"], None)?;
    run(
        "ip",
        &["route", "add", "local", "default", "dev", "lo"],
        None,
    )?;
    let bind = |what: &str, e: std::io::Error| format!("{what} in the namespace: {e}");
    let tcp4 = listener((Ipv4Addr::LOCALHOST, 0).into()).map_err(|e| bind("listen", e))?;
    // A kernel or namespace without IPv6 leaves IPv6 unreachable, which nothing bypasses.
    let tcp6 = run(
        "ip",
        &["-6", "route", "add", "local", "default", "dev", "lo"],
        None,
    )
    .ok()
    .and_then(|()| listener((Ipv6Addr::LOCALHOST, 0).into()).ok());
    let dns = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .and_then(|s| {
            s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
                .map(|()| s)
        })
        .map_err(|e| bind("DNS socket", e))?;
    let ports = Ports {
        tcp4: port(&tcp4)?,
        tcp6: tcp6.as_ref().map(port).transpose()?,
        dns: port(&dns)?,
    };
    run("nft", &["-f", "-"], Some(&nft::ruleset(ports)))?;
    let (ours, theirs) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| format!("socket pair: {e}"))?;
    let mut fds = vec![theirs.as_fd(), dns.as_fd(), tcp4.as_fd()];
    fds.extend(tcp6.as_ref().map(AsFd::as_fd));
    let word: &[u8] = if tcp6.is_some() {
        b"netns v6\n"
    } else {
        b"netns\n"
    };
    pass::send(lifeline, word, &fds).map_err(|e| format!("handing sockets to flakestorm: {e}"))?;
    Ok(ours)
}

/// The agent's command inside the namespace: `sh -c COMMAND`, as `run_as`.
pub fn agent_command(run_as: RunAs, command: &str) -> tokio::process::Command {
    let unshare = tool("unshare").unwrap_or_else(|| PathBuf::from("unshare"));
    let mut cmd = match run_as {
        RunAs::Root => tokio::process::Command::new("sh"),
        RunAs::User { uid, gid } => {
            let mut cmd = tokio::process::Command::new(unshare);
            cmd.arg("--user")
                .arg(format!("--map-user={uid}"))
                .arg(format!("--map-group={gid}"))
                .arg("--")
                .arg("sh");
            cmd
        }
    };
    cmd.arg("-c").arg(command);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_as_round_trips_through_its_argument() {
        for r in [
            RunAs::Root,
            RunAs::User {
                uid: 1000,
                gid: 100,
            },
        ] {
            assert_eq!(RunAs::parse(&r.arg()), Some(r));
        }
        assert_eq!(RunAs::parse("1000"), None);
        assert_eq!(RunAs::parse("x:1"), None);
    }

    #[test]
    fn a_user_gets_a_user_namespace_and_root_does_not() {
        assert!(RunAs::Root.unshare_args().contains(&"--net"));
        assert!(!RunAs::Root.unshare_args().contains(&"--user"));
        let user = RunAs::User { uid: 1, gid: 1 }.unshare_args();
        assert!(user.contains(&"--map-root-user") && user.contains(&"--net"));
    }
}
