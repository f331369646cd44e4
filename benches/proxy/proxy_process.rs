//! The `flakestorm serve` child process: starting it on free ports, learning its addresses
//! from its stdout, and stopping it with SIGTERM.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub struct ProxyProcess {
    child: Child,
    pub pid: u32,
    addr: SocketAddr,
    pub ca_pem: PathBuf,
    stderr_path: PathBuf,
    stdout_rx: mpsc::Receiver<String>,
    pub startup: Duration,
    /// The CPU it is pinned to, if it is.
    pub cpu: Option<usize>,
    _dir: tempfile::TempDir,
}

pub struct StopReport {
    pub status: Option<ExitStatus>,
    pub after: Duration,
    pub extra_stdout: Vec<String>,
    pub stderr: String,
}

impl ProxyProcess {
    /// Starts the proxy, pinned to `cpu` if given.
    pub fn start(root: &Path, cpu: Option<usize>) -> Result<Self> {
        Self::start_with(root, "", cpu)
    }

    /// Starts with `extra` appended to the config (whole top-level sections, e.g. `chaos:`).
    pub fn start_with(root: &Path, extra: &str, cpu: Option<usize>) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("flakestorm.yaml");
        let upstream_ca = root.join("tests/fixtures/test-ca.pem");
        let ca_dir = dir.path().join("certs");
        std::fs::write(
            &config,
            format!(
                "proxy:\n  listen: \"127.0.0.1:0\"\n  upstream_ca_file: \"{}\"\n\
                 control:\n  listen: \"127.0.0.1:0\"\nca:\n  dir: \"{}\"\n{extra}",
                upstream_ca.display(),
                ca_dir.display()
            ),
        )?;
        let stderr_path = dir.path().join("stderr.log");
        let started = Instant::now();
        // FLAKESTORM_BIN runs another build (e.g. a saved baseline) against the same load.
        let bin = std::env::var_os("FLAKESTORM_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_flakestorm").into());
        let mut command = match cpu {
            // taskset execs the proxy: the child's pid is the proxy's.
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string()]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let mut child = command
            .arg("serve")
            .arg("-c")
            .arg(&config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?)
            .spawn()
            .context("spawning flakestorm")?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, stdout_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (mut proxy, mut control) = (None, None);
        let deadline = started + Duration::from_secs(30);
        while proxy.is_none() || control.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match stdout_rx.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => {
                    let _ = child.kill();
                    let status = child.wait().ok();
                    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                    bail!(
                        "flakestorm did not report both listeners ({e}; exit {status:?}); \
                         stderr:\n{stderr}"
                    );
                }
            };
            match parse_listening(&line) {
                Some(("proxy", addr)) => proxy = Some(addr),
                Some((_, addr)) => control = Some(addr),
                None => eprintln!("flakestorm stdout: {line}"),
            }
        }
        let startup = started.elapsed();
        let ca_pem = ca_dir.join("ca.pem");
        if !ca_pem.exists() {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "flakestorm is listening but {} does not exist",
                ca_pem.display()
            );
        }
        Ok(ProxyProcess {
            child,
            pid,
            addr: proxy.expect("loop ends when set"),
            ca_pem,
            stderr_path,
            stdout_rx,
            startup,
            cpu,
            _dir: dir,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then wait up to 10 s (SIGKILL after that).
    pub fn stop(&mut self) -> StopReport {
        let started = Instant::now();
        let mut status = self.exited();
        if status.is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .status();
            while status.is_none() && started.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
                status = self.exited();
            }
        }
        let after = started.elapsed();
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        StopReport {
            status,
            after,
            extra_stdout: self.stdout_rx.try_iter().collect(),
            stderr: std::fs::read_to_string(&self.stderr_path).unwrap_or_default(),
        }
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `flakestorm: (proxy|control) listening on (\S+)`
fn parse_listening(line: &str) -> Option<(&str, SocketAddr)> {
    let rest = line.strip_prefix("flakestorm: ")?;
    let (kind, addr) = rest.split_once(" listening on ")?;
    if !matches!(kind, "proxy" | "control") || addr.contains(char::is_whitespace) {
        return None;
    }
    Some((kind, addr.parse().ok()?))
}
