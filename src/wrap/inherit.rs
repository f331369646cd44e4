//! Where a wrap finds the run it belongs to: its own environment, else that of the
//! processes it descends from. MCP clients start stdio servers with a reduced environment
//! (the `mcp` SDK's `stdio_client` passes only `HOME`, `PATH` and a few more unless told
//! otherwise), so the variables a run gave the agent often do not reach the wrap; the
//! agent process itself still has them, and on Linux a process of the same user may read
//! them in `/proc/<pid>/environ`.

/// How many ancestors are asked (agent → client library → shell → wrap is three).
const ANCESTORS: usize = 8;

/// The value of `name`: this process's, else the nearest ancestor's that has it.
pub fn var(name: &str) -> Option<String> {
    if let Ok(v) = std::env::var(name) {
        return Some(v);
    }
    let mut pid = parent_of("self")?;
    for _ in 0..ANCESTORS {
        if pid <= 1 {
            return None;
        }
        if let Some(v) = environ_var(&pid.to_string(), name) {
            return Some(v);
        }
        pid = parent_of(&pid.to_string())?;
    }
    None
}

/// A process's parent, from `/proc/<pid>/stat` (the field after the state, which follows
/// the command name's closing parenthesis: a name may hold spaces and parentheses).
fn parent_of(pid: &str) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn environ_var(pid: &str, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    value_in(&env, name)
}

/// `name`'s value in a NUL-separated `NAME=value` list.
fn value_in(environ: &[u8], name: &str) -> Option<String> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let rest = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        String::from_utf8(rest.to_vec()).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_found_by_its_whole_name() {
        let env = b"PATH=/bin\0FLAKESTORM_WRAP_DIR_X=no\0FLAKESTORM_WRAP_DIR=/tmp/w\0";
        assert_eq!(
            value_in(env, "FLAKESTORM_WRAP_DIR").as_deref(),
            Some("/tmp/w")
        );
        assert_eq!(value_in(env, "FLAKESTORM_WRAP"), None);
    }

    #[test]
    fn an_ancestors_variable_is_found_when_this_process_lacks_it() {
        // The test process's parent is cargo or a shell: it has PATH, we read it there.
        let parent = parent_of("self").expect("a parent");
        assert!(parent > 0);
        assert!(environ_var(&parent.to_string(), "PATH").is_some());
    }
}
