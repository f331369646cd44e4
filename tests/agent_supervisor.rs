//! `agent.command` under its supervisor (flakestorm's own binary, as the CLI and the daemon
//! run it): the agent's exit status and log reach the run; stopping it, dropping its handle
//! and a readiness timeout each stop its whole process group, also what ignores SIGTERM,
//! and also after its supervisor was killed on its own.

mod common;

use std::time::Duration;

use common::procs::{assert_group_gone, eventually, running};
use flakestorm::agent::{AgentProcess, ProxyAt, launch, supervise_with, wait_ready};

fn supervised() {
    supervise_with(env!("CARGO_BIN_EXE_flakestorm"));
}

/// A command that starts `sleep` in the background (ignoring SIGTERM when `stubborn`), then
/// writes "PID PGID" of that sleep to `file`, and waits.
fn group_command(file: &std::path::Path, stubborn: bool) -> String {
    let trap = if stubborn { "trap '' TERM; " } else { "" };
    format!(
        "{trap}sleep 300 & echo \"$! $(cut -d' ' -f5 /proc/$!/stat)\" > {0}.tmp && mv {0}.tmp {0}; wait",
        file.display()
    )
}

/// The "PID PGID" in `file`, once it exists.
async fn pid_and_group(p: &mut AgentProcess, file: &std::path::Path) -> (u32, u32) {
    let f = file.to_path_buf();
    let written = move || {
        let f = f.clone();
        async move { f.exists() }
    };
    wait_ready(Some(p), "the pid file", Duration::from_secs(20), written)
        .await
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let mut ids = text.split_whitespace().map(|n| n.parse().unwrap());
    (ids.next().unwrap(), ids.next().unwrap())
}

#[tokio::test]
async fn a_supervised_agent_that_dies_is_reported_with_its_status_and_log() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/agent.log");
    let cmd = "echo starting; echo 'ImportError: no module named agent' >&2; exit 3";
    let mut p = AgentProcess::start(cmd, &[], Some(&log)).unwrap();
    let never = || async { false };
    let err = wait_ready(Some(&mut p), "ready", Duration::from_secs(20), never)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("exited (exit status: 3) before ready"),
        "the agent's own status, not its supervisor's: {err}"
    );
    assert!(err.contains("ImportError: no module named agent"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "starting\nImportError: no module named agent\n",
        "the agent's output, and nothing of its supervisor's"
    );
    p.stop(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn stopping_a_supervised_agent_stops_its_group_what_ignores_sigterm_too() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bg.pid");
    let mut p = AgentProcess::start(&group_command(&file, true), &[], None).unwrap();
    let (pid, pgid) = pid_and_group(&mut p, &file).await;
    assert!(running(pid));
    assert_eq!(p.exit_status(), None, "still running");
    p.stop(Duration::from_millis(300)).await;
    assert_group_gone(pgid, Duration::from_secs(5), "after stop");
}

/// Dropping the handle (a run cancelled while its agent starts) stops the group, what
/// ignores SIGTERM too, and waits for that off the async thread: on the current-thread
/// runtime a one-CPU daemon runs, that thread also carries all the proxy's traffic.
#[tokio::test]
async fn dropping_a_supervised_agent_stops_its_group_off_the_async_thread() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bg.pid");
    let mut p = AgentProcess::start(&group_command(&file, true), &[], None).unwrap();
    let (pid, pgid) = pid_and_group(&mut p, &file).await;
    drop(p);
    // A drop that waited would return only once the group was gone (its SIGTERM ignored,
    // after the supervisor's 2 s grace).
    assert!(
        running(pid),
        "drop waited for the group on the async thread"
    );
    flakestorm::agent::stopped().await;
    // Its SIGTERM ignored, the group would outlive 1 s by the supervisor's 2 s grace had
    // `stopped` not waited for it.
    assert_group_gone(pgid, Duration::from_secs(1), "once `stopped` returned");
}

/// Dropped as its runtime shuts down (flakestorm exiting with a run under way), the handle
/// still stops the group before the runtime is gone.
#[test]
fn dropping_an_agent_as_its_runtime_shuts_down_stops_its_group() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let (runtime, p, pgid) = started_on_its_own_runtime(&dir.path().join("bg.pid"));
    runtime.spawn(async move {
        let _held = p;
        std::future::pending::<()>().await
    });
    drop(runtime);
    assert_group_gone(pgid, Duration::from_secs(1), "when the runtime was gone");
}

/// Dropped where no runtime runs, the handle stops the group before it returns.
#[test]
fn dropping_an_agent_without_a_runtime_stops_its_group_before_returning() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let (runtime, p, pgid) = started_on_its_own_runtime(&dir.path().join("bg.pid"));
    drop(runtime);
    drop(p);
    // Its SIGTERM ignored, the group would outlive 1 s by the supervisor's 2 s grace had drop
    // not waited for it.
    assert_group_gone(pgid, Duration::from_secs(1), "when drop returned");
}

/// An agent never ready within its readiness wait (30 s, in paused time): the run is not
/// started, and the agent is stopped, with what it started. Under a port thief: what
/// another process on the machine could do to listen on the agent's port right after the
/// test chose it fails (the port is held bound, never listening: `common::ports`), and
/// had it not, the run would have been refused as "accepted connections before
/// agent.command started" (the thief keeps what it got until the end).
#[tokio::test(start_paused = true)]
async fn an_agent_not_ready_in_time_is_stopped() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bg.pid");
    let port = common::cli::closed_port();
    let thief = common::ports::steal(port);
    assert!(thief.is_none(), "another process could listen on {port}");
    let yaml = format!(
        "agent:\n  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: {:?}\n",
        group_command(&file, false)
    );
    let path = dir.path().join("flakestorm.yaml");
    std::fs::write(&path, yaml).unwrap();
    let loaded =
        flakestorm::config::load_with_env(Some(&path), &Default::default(), &Default::default())
            .unwrap();
    let ca = dir.path().join("ca.pem");
    let proxy = ProxyAt {
        addr: "127.0.0.1:9".parse().unwrap(),
        ca_cert: &ca,
        wrap_dir: None,
    };
    let log = dir.path().join("agent.log");
    let launching = launch(&loaded.config, proxy, &log);
    // Virtual time only moves when the runtime idles: keep it busy until the agent has
    // started, so that the 30 s are not over before it could be.
    let started = tokio::spawn({
        let file = file.clone();
        #[allow(clippy::disallowed_methods)] // the agent starts in real time
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !file.exists() && std::time::Instant::now() < deadline {
                tokio::task::yield_now().await;
            }
        }
    });
    let (err, _) = tokio::join!(launching, started);
    let err = err.err().expect("the agent never answers").to_string();
    assert!(err.contains("not ready within 30s"), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let pgid: u32 = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(eventually(Duration::from_secs(5), || common::procs::group(
        pgid
    )
    .is_empty()));
}

/// A supervisor killed on its own (SIGKILL: it ignores the rest) leaves the agent to
/// flakestorm: the run says so, and its end still stops the group.
#[tokio::test]
async fn an_agent_whose_supervisor_was_killed_is_still_stopped() {
    supervised();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bg.pid");
    let mut p = AgentProcess::start(&group_command(&file, false), &[], None).unwrap();
    let (pid, pgid) = pid_and_group(&mut p, &file).await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pgid.to_string()]) // the leader: the supervisor
        .status()
        .unwrap();
    assert!(killed.success());
    let ended = common::within("its supervisor's end is seen", async {
        loop {
            match p.exit_status() {
                Some(status) => break status,
                None => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
    .await;
    assert!(ended.starts_with("its supervisor ended"), "{ended}");
    assert!(running(pid), "the agent outlived its supervisor");
    p.stop(Duration::from_secs(1)).await;
    assert_group_gone(pgid, Duration::from_secs(5), "after stop");
}

/// A runtime of its own, and an agent group started on it that ignores SIGTERM, with the
/// group's id.
fn started_on_its_own_runtime(
    file: &std::path::Path,
) -> (tokio::runtime::Runtime, AgentProcess, u32) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (p, pgid) = runtime.block_on(async {
        let mut p = AgentProcess::start(&group_command(file, true), &[], None).unwrap();
        let (_, pgid) = pid_and_group(&mut p, file).await;
        (p, pgid)
    });
    (runtime, p, pgid)
}

/// The ports tests name before anything listens on them (`common::ports`): a closed port
/// refuses connections and no one can take it, every way a server binds; an agent's port
/// is free for the agent to bind, outside the ranges the kernel and flakestorm's agent pool
/// pick from, and reserved: no other test process can be given it.
#[test]
fn closed_ports_stay_closed_and_agent_ports_are_reserved_for_their_agent() {
    use std::os::linux::net::SocketAddrExt;
    let closed = common::ports::closed_port();
    assert!(common::ports::steal(closed).is_none(), "{closed} taken");
    let refused = std::net::TcpStream::connect(("127.0.0.1", closed)).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let (ports, high) = (
        [common::ports::agent_port(), common::ports::agent_port()],
        common::ports::ephemeral_range().1,
    );
    assert_ne!(ports[0], ports[1]);
    for port in ports {
        if high <= 64535 {
            assert!(port > high, "{port} is in the kernel's or the pool's range");
        }
        let name = format!("flakestorm-test-port-{port}");
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
        let other = std::os::unix::net::UnixListener::bind_addr(&addr);
        assert!(other.is_err(), "{port} is not reserved");
        let agent = std::net::TcpListener::bind(("127.0.0.1", port));
        assert!(agent.is_ok(), "the agent cannot bind {port}: {agent:?}");
    }
}
