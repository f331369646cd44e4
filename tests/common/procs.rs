//! Processes seen through `/proc` (Linux): whether a process, or any member of a process
//! group, still runs (a zombie waiting for its parent to reap it does not), and waiting for
//! a condition with a deadline.

use std::time::Duration;

/// The state letter and the process group of `pid`, from `/proc/PID/stat`.
fn stat(pid: &str) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
    let mut rest = stat.rsplit_once(") ")?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let pgrp = rest.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// `pid` exists and is not a zombie.
pub fn running(pid: u32) -> bool {
    stat(&pid.to_string()).is_some_and(|(state, _)| state != 'Z')
}

/// The processes of group `pgid` that still run.
pub fn group(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| stat(pid).is_some_and(|(state, g)| g == pgid && state != 'Z'))
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// Polls `done` every 20 ms for up to `limit`; whether it became true.
#[allow(clippy::disallowed_methods)] // real processes end in real time
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Panics unless every process of group `pgid` is gone within `limit`, naming those left.
pub fn assert_group_gone(pgid: u32, limit: Duration, what: &str) {
    if !eventually(limit, || group(pgid).is_empty()) {
        let left = group(pgid);
        for pid in &left {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        panic!("{what}: processes {left:?} of group {pgid} still run");
    }
}
