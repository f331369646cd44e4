//! Whether `capture: netns` works on this machine: the tools are there and a namespace
//! like an agent's can be set up (an `unshare` that runs the same setup as the supervisor:
//! loopback up, every address local, the redirection rules loaded). When it cannot, the
//! error names the cause and what to do: the package to install, or the `sysctl` that
//! forbids unprivileged user namespaces. Blocking; a run calls it once before any case.

use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::namespace::{RunAs, package_of, tool};
use super::nft::{self, Ports};

/// The sysctls that can forbid an unprivileged user namespace, and the value that does.
const USERNS_SYSCTLS: &[(&str, &str, &str)] = &[
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "kernel.unprivileged_userns_clone",
        "0",
    ),
    (
        "/proc/sys/user/max_user_namespaces",
        "user.max_user_namespaces",
        "0",
    ),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "kernel.apparmor_restrict_unprivileged_userns",
        "1",
    ),
];

/// Why `capture: netns` cannot work here, or nothing. The first answer is kept for the
/// process's life: the machine does not change under a run.
pub fn check() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("agent.capture: netns needs Linux (network namespaces)".into());
    }
    for name in ["unshare", "ip", "nft"] {
        if tool(name).is_none() {
            return Err(format!(
                "agent.capture: netns needs `{name}`, which is not installed (Debian: apt \
                 install {})",
                package_of(name)
            ));
        }
    }
    let run_as = RunAs::current();
    let ruleset = nft::ruleset(Ports {
        tcp4: 1,
        tcp6: None,
        dns: 2,
    });
    let script = format!(
        "{ip} link set lo up && {ip} route add local default dev lo && {nft} -f - <<'EOF'\n{ruleset}EOF\n",
        ip = path_of("ip"),
        nft = path_of("nft"),
    );
    let out = Command::new(path_of("unshare"))
        .args(run_as.unshare_args())
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("agent.capture: netns: `unshare` could not start: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(refused(run_as, &said))
}

fn path_of(name: &str) -> String {
    tool(name).map_or(name.to_string(), |p| p.display().to_string())
}

/// The error for a probe that failed with `said` on its stderr.
fn refused(run_as: RunAs, said: &str) -> String {
    let userns = said.contains("unshare failed") || said.contains("write failed");
    if run_as == RunAs::Root || !userns {
        return format!("agent.capture: netns: the agent's namespace could not be set up: {said}");
    }
    let forbidding: Vec<String> = USERNS_SYSCTLS
        .iter()
        .filter(|(file, _, bad)| std::fs::read_to_string(file).is_ok_and(|v| v.trim() == *bad))
        .map(|(_, name, bad)| format!("{name} = {bad}"))
        .collect();
    let why = match forbidding.is_empty() {
        true => "this kernel refuses unprivileged user namespaces (see the sysctls \
                 kernel.unprivileged_userns_clone, user.max_user_namespaces and \
                 kernel.apparmor_restrict_unprivileged_userns, or a container's seccomp \
                 profile)"
            .to_string(),
        false => format!(
            "this kernel refuses unprivileged user namespaces ({}); allow them (e.g. `sysctl \
             -w {}`) or run flakestorm as root",
            forbidding.join(", "),
            fix(&forbidding[0])
        ),
    };
    format!("agent.capture: netns: {why}; unshare said: {said}")
}

/// The `sysctl -w` setting that undoes `name = bad`.
fn fix(setting: &str) -> String {
    let name = setting.split(" = ").next().unwrap_or(setting);
    let good = match name {
        "user.max_user_namespaces" => "15000",
        "kernel.apparmor_restrict_unprivileged_userns" => "0",
        _ => "1",
    };
    format!("{name}={good}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_user_namespace_names_the_sysctls() {
        let e = refused(
            RunAs::User { uid: 1, gid: 1 },
            "unshare: unshare failed: Operation not permitted",
        );
        assert!(e.contains("unprivileged user namespaces"), "{e}");
        assert!(
            e.contains("user.max_user_namespaces") || e.contains("sysctl -w"),
            "{e}"
        );
        assert!(e.contains("Operation not permitted"), "{e}");
    }

    #[test]
    fn other_failures_say_what_failed() {
        let e = refused(RunAs::Root, "Error: Could not process rule: No such file");
        assert!(e.contains("could not be set up: Error: Could not"), "{e}");
    }

    #[test]
    fn fixes_are_the_permissive_values() {
        assert_eq!(
            fix("kernel.apparmor_restrict_unprivileged_userns = 1"),
            "kernel.apparmor_restrict_unprivileged_userns=0"
        );
        assert_eq!(
            fix("kernel.unprivileged_userns_clone = 0"),
            "kernel.unprivileged_userns_clone=1"
        );
    }
}
