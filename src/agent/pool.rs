//! The agent pool (design.md §6): when `agent.command` takes `{port}`, a run starts
//! `agent.instances` copies of it, each on a free port of its own and each talking through
//! a proxy lane of its own, so every exchange arriving on an instance's lane is the case
//! that instance runs. A case leases a free instance; an instance that exits is restarted
//! before its next case, and the case it exited in says so. Instances that never become
//! ready are left out (the run says which and why); none ready is an error.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::launch::{LaunchError, ProxyAt, start};
use super::{Agent, AgentProcess};
use crate::config::Config;
use crate::journal::{Lane, OpenLane, ServeCapture};

/// What restarting an instance needs.
struct Setup {
    config: Config,
    ca: PathBuf,
    wrap_dir: Option<PathBuf>,
}

struct Instance {
    /// 1-based, as the run's words say it.
    number: usize,
    port: u16,
    agent: Agent,
    lane: Lane,
    proxy: SocketAddr,
    log: PathBuf,
    process: tokio::sync::Mutex<Option<AgentProcess>>,
    /// Serves its namespace's capture on its lane (`agent.capture: netns`).
    capture: ServeCapture,
    _listener: Box<dyn Send + Sync>,
}

/// The instances of one run.
pub struct Pool {
    instances: Vec<Instance>,
    free: Mutex<VecDeque<usize>>,
    permits: Arc<Semaphore>,
    setup: Setup,
    /// Instances left out at the start, in words.
    pub warnings: Vec<String>,
}

/// One instance, the case's until dropped.
pub struct Lease {
    pool: Arc<Pool>,
    index: usize,
    _permit: OwnedSemaphorePermit,
}

/// `log` for instance `n`: the first keeps the name, the others get `-n` before the
/// extension (`agent.log`, `agent-2.log`, …).
fn log_of(log: &Path, n: usize) -> PathBuf {
    if n == 1 {
        return log.to_path_buf();
    }
    let stem = log.file_stem().unwrap_or_default().to_string_lossy();
    let name = match log.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    log.with_file_name(name)
}

/// The lowest port the kernel hands out for outgoing connections and port 0.
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// `n` distinct free ports of the loopback interface for agent instances, taken below the
/// kernel's ephemeral range: a port from that range (what binding port 0 gives), released
/// for the agent to bind, can meanwhile become the local port of an outgoing connection
/// (the agent's own calls go out by the hundred), and the instance then fails to bind.
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Positions already tried by this process: each call goes on from there, so ports it
    // handed out are not handed out again until the range has been gone through.
    static TRIED: AtomicUsize = AtomicUsize::new(0);
    const FIRST: u16 = 10_000;
    let low = ephemeral_low();
    // A host whose ephemeral range starts low leaves no room below it: ports the kernel
    // picks, as everywhere else.
    if low < FIRST + 1000 {
        return kernel_ports(n);
    }
    let span = usize::from(low - FIRST);
    // Processes side by side (runs, daemons) start at different places.
    let origin = std::process::id() as usize * 7919;
    let mut held = vec![];
    for _ in 0..span {
        if held.len() == n {
            break;
        }
        // A step of 13, prime to the span's usual size, visits every port once.
        let k = TRIED.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + ((origin + k * 13) % span) as u16;
        if let Ok(l) = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
            held.push(l);
        }
    }
    if held.len() < n {
        return Err(format!(
            "no {n} free loopback ports below {low} for the agent instances"
        ));
    }
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// `n` distinct ports the kernel picks (port 0, each held until all are chosen).
fn kernel_ports(n: usize) -> Result<Vec<u16>, String> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("no free port for an agent instance: {e}"))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

impl Pool {
    /// Starts `size` instances of `config.agent`, each behind a lane from `open`; their
    /// output to `log` (numbered). Fails when none becomes ready, saying why of each.
    pub async fn start(
        config: &Config,
        size: usize,
        open: &OpenLane,
        ca: &Path,
        wrap_dir: Option<&Path>,
        log: &Path,
    ) -> Result<Pool, LaunchError> {
        let Some(spec) = &config.agent else {
            return Err(LaunchError("runs need an `agent:` section".into()));
        };
        let ports = free_ports(size).map_err(LaunchError)?;
        let setup = Setup {
            config: config.clone(),
            ca: ca.to_path_buf(),
            wrap_dir: wrap_dir.map(Path::to_path_buf),
        };
        let starts = ports.iter().enumerate().map(|(i, &port)| {
            let (setup, target, open) = (&setup, spec.at_port(port), open.clone());
            let log = log_of(log, i + 1);
            async move {
                let lane = open().await.map_err(|e| format!("no proxy lane: {e}"))?;
                let agent =
                    Agent::new(&target, config.advanced.retries).map_err(|e| e.to_string())?;
                let at = ProxyAt {
                    addr: lane.addr,
                    ca_cert: &setup.ca,
                    wrap_dir: setup.wrap_dir.as_deref(),
                };
                let agent = super::script::on_lane(agent, config, &at, &log).await;
                let process = setup.launch(&agent, lane.addr, &lane.capture, &log).await?;
                Ok::<_, String>(Instance {
                    number: i + 1,
                    port,
                    agent,
                    lane: lane.lane,
                    proxy: lane.addr,
                    log,
                    process: tokio::sync::Mutex::new(process),
                    capture: lane.capture,
                    _listener: lane.keep,
                })
            }
        });
        let (mut instances, mut warnings) = (vec![], vec![]);
        for (i, started) in join_all(starts).await.into_iter().enumerate() {
            match started {
                Ok(instance) => instances.push(instance),
                Err(why) => warnings.push(format!(
                    "agent instance {} (port {}) never became ready, so no case ran on it: \
                     {why}",
                    i + 1,
                    ports[i]
                )),
            }
        }
        if instances.is_empty() {
            return Err(LaunchError(warnings.join("\n")));
        }
        let n = instances.len();
        Ok(Pool {
            instances,
            free: Mutex::new((0..n).collect()),
            permits: Arc::new(Semaphore::new(n)),
            setup,
            warnings,
        })
    }

    /// How many instances are running cases.
    pub fn size(&self) -> usize {
        self.instances.len()
    }

    /// The first instance's driver (what reports show as the agent's endpoint).
    pub fn first(&self) -> &Agent {
        &self.instances[0].agent
    }

    /// Waits for a free instance and takes it.
    pub async fn lease(self: &Arc<Self>) -> Lease {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        // The least recently used instance: it has had the longest to go quiet.
        let index = self
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
            .expect("a permit means a free instance");
        Lease {
            pool: self.clone(),
            index,
            _permit: permit,
        }
    }

    /// Stops every instance; a warning for each that had exited during the run.
    pub async fn stop(&self) -> Vec<String> {
        let mut warnings = vec![];
        for i in &self.instances {
            if let Some(p) = i.process.lock().await.take()
                && let Some(w) = p.end_of_run().await
            {
                warnings.push(format!("agent instance {}: {w}", i.number));
            }
        }
        warnings
    }
}

impl Setup {
    /// Starts the instance's command (if any) through its lane and waits until it answers.
    async fn launch(
        &self,
        agent: &Agent,
        lane: SocketAddr,
        capture: &ServeCapture,
        log: &Path,
    ) -> Result<Option<AgentProcess>, String> {
        let at = ProxyAt {
            addr: lane,
            ca_cert: &self.ca,
            wrap_dir: self.wrap_dir.as_deref(),
        };
        let target = agent.target();
        let process = start(&self.config, target, agent, at, Some(capture), log).await?;
        if let Err(e) = agent.preflight().await {
            if let Some(p) = process {
                let tail = p.tail();
                p.stop(Duration::from_secs(5)).await;
                return Err(format!("{e}{tail}"));
            }
            return Err(e.to_string());
        }
        Ok(process)
    }
}

impl Lease {
    fn instance(&self) -> &Instance {
        &self.pool.instances[self.index]
    }

    pub fn agent(&self) -> &Agent {
        &self.instance().agent
    }

    pub fn lane(&self) -> &Lane {
        &self.instance().lane
    }

    /// The instance's number (1-based).
    pub fn number(&self) -> usize {
        self.instance().number
    }

    /// Before a case: the instance restarted if its process had exited. Why the case cannot
    /// run on it, if it could not be.
    pub async fn ready(&self) -> Result<(), LaunchError> {
        let i = self.instance();
        let mut process = i.process.lock().await;
        let Some(status) = process.as_mut().and_then(AgentProcess::exit_status) else {
            return Ok(());
        };
        if let Some(p) = process.take() {
            p.stop(Duration::from_secs(1)).await;
        }
        tracing::info!(
            "agent instance {} had exited ({status}); restarting it on port {}",
            i.number,
            i.port
        );
        *process = self
            .pool
            .setup
            .launch(&i.agent, i.proxy, &i.capture, &i.log)
            .await
            .map_err(|why| {
                LaunchError(format!(
                    "agent instance {} exited ({status}) and could not restart: {why}",
                    i.number
                ))
            })?;
        Ok(())
    }

    /// After a case: how the instance's process exited, if it did, with its log's tail.
    pub async fn exited(&self) -> Option<String> {
        let i = self.instance();
        let mut process = i.process.lock().await;
        let p = process.as_mut()?;
        let status = p.exit_status()?;
        Some(format!(
            "agent instance {} exited ({status}) during this case{}",
            i.number,
            p.tail()
        ))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_logs_are_numbered_after_the_first() {
        let log = Path::new("/tmp/run/agent.log");
        assert_eq!(log_of(log, 1), log);
        assert_eq!(log_of(log, 2), Path::new("/tmp/run/agent-2.log"));
        assert_eq!(log_of(Path::new("/x/out"), 3), Path::new("/x/out-3"));
    }

    #[test]
    fn free_ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_ports(8).unwrap();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 8, "{ports:?}");
        assert!(
            ports.iter().all(|p| *p >= 10_000 && *p < ephemeral_low()),
            "{ports:?}"
        );
        // Where the range leaves no room below it, the kernel's picks, distinct too.
        let mut kernel = kernel_ports(8).unwrap();
        kernel.sort_unstable();
        kernel.dedup();
        assert_eq!(kernel.len(), 8);
        // The next call does not hand the same ports out again.
        let next = free_ports(8).unwrap();
        assert!(
            next.iter().all(|p| !ports.contains(p)),
            "{ports:?} then {next:?}"
        );
    }
}
