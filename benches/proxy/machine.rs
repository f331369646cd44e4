//! The machine as `/proc` sees it: the proxy's memory and CPU time, how busy other
//! processes kept the CPU, and the machine description for the report.

use std::process::Command;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The machine's cores, whatever this process is pinned to (`/proc/stat` has a `cpuN` line
/// for each).
pub fn cores() -> usize {
    static CORES: LazyLock<usize> = LazyLock::new(|| {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let n = stat.lines().filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        });
        n.count().max(1)
    });
    *CORES
}

static PINNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `pin_self` pinned this process (then the proxy and nginx are pinned too).
pub fn pinned() -> bool {
    PINNED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Pins this process (all its threads, and those it starts later) to `cpu`, when the
/// machine has another core for the proxy; says whether it did.
pub fn pin_self(cpu: usize) -> bool {
    let cores = cores();
    let pid = std::process::id().to_string();
    let cpu = cpu.to_string();
    let pinned = cores >= 2
        && Command::new("taskset")
            .args(["-a", "-p", "-c", &cpu, &pid])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !pinned {
        eprintln!("not pinned: the proxy shares the cores with the clients and origins");
    }
    PINNED.store(pinned, std::sync::atomic::Ordering::Relaxed);
    pinned
}

pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// A process's resident memory by kind, KiB: anonymous (heap, stacks, the allocator's
/// caches) and file-backed (the binary's text and the libraries it maps). Tells an
/// allocator's leftovers from code the kernel keeps mapped.
#[derive(Clone, Copy)]
pub struct Resident {
    pub anon: u64,
    pub file: u64,
}

pub fn resident(pid: u32) -> Option<Resident> {
    Some(Resident {
        anon: proc_status_kib(pid, "RssAnon")?,
        file: proc_status_kib(pid, "RssFile")?,
    })
}

/// utime + stime of a process.
pub fn proc_cpu(pid: u32) -> Option<Duration> {
    let (user, system) = proc_times(pid)?;
    Some(user + system)
}

/// stime of a process: its time in the kernel (system calls, and on loopback the TCP
/// receive work of the packets it sends).
pub fn proc_sys(pid: u32) -> Option<Duration> {
    Some(proc_times(pid)?.1)
}

fn proc_times(pid: u32) -> Option<(Duration, Duration)> {
    let fields = stat_fields(pid)?;
    let user = fields.get(11)?.parse::<u64>().ok()?;
    let system = fields.get(12)?.parse::<u64>().ok()?;
    Some((ticks_to_duration(user), ticks_to_duration(system)))
}

/// This process's CPU time with that of its children it has reaped (nginx, once the
/// sidecar figures are done), so they do not count as other processes.
fn own_cpu() -> Option<Duration> {
    let fields = stat_fields(std::process::id())?;
    let ticks = (11..=14)
        .map(|i| fields.get(i)?.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some(ticks_to_duration(ticks))
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(String::from).collect())
}

fn ticks_to_duration(ticks: u64) -> Duration {
    static CLK_TCK: LazyLock<u64> = LazyLock::new(|| {
        let out = Command::new("getconf").arg("CLK_TCK").output();
        out.ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
            .unwrap_or(100)
    });
    Duration::from_secs_f64(ticks as f64 / *CLK_TCK as f64)
}

/// CPU time used on the whole machine, by this process and by the proxy, at one instant:
/// two snapshots tell how busy *other* processes kept the machine in between (anything
/// else running makes the numbers noisy).
pub struct CpuSnapshot {
    at: Instant,
    machine_busy: Duration,
    ours: Duration,
}

impl CpuSnapshot {
    /// `pids`: the processes measured (the proxy, an origin process), not counted as others.
    pub fn take(pids: &[u32]) -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
        let t: Vec<u64> = cpu
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
        let busy = t.first()? + t.get(1)? + t.get(2)? + t.get(5)? + t.get(6)? + t.get(7)?;
        Some(CpuSnapshot {
            at: Instant::now(),
            machine_busy: ticks_to_duration(busy),
            ours: pids.iter().fold(own_cpu()?, |sum, pid| {
                sum + proc_cpu(*pid).unwrap_or_default()
            }),
        })
    }

    /// Share of the machine's CPU capacity used by others (incl. hypervisor steal) since `self`.
    pub fn others_until(&self, later: &CpuSnapshot) -> f64 {
        let cores = cores() as f64;
        let capacity = later.at.duration_since(self.at).as_secs_f64() * cores;
        let busy = later.machine_busy.saturating_sub(self.machine_busy);
        let others = busy.saturating_sub(later.ours.saturating_sub(self.ours));
        others.as_secs_f64() / capacity
    }
}

pub fn machine() -> String {
    let cores = cores();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            Some(
                l.strip_prefix("model name")?
                    .split_once(':')?
                    .1
                    .trim()
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem_gib = proc_meminfo_kib("MemTotal").map_or(0.0, |k| k as f64 / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cores} cores, {cpu}, {mem_gib:.0} GiB RAM, Linux {}, {}",
        kernel.trim(),
        command_output("rustc", &["--version"])
    )
}

fn proc_meminfo_kib(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

pub fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(
            || format!("({program} unavailable)"),
            |s| s.trim().to_string(),
        )
}
