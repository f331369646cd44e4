//! What an agent flakestorm starts does not inherit from flakestorm's environment: the
//! variables that hold the control API's token (issue #51). An agent under test that a
//! prompt injection turns could otherwise call the control API and change the chaos that
//! judges it. `spawn` removes them from every agent's environment; an agent's own
//! `agent.env` may still set such a name on purpose.

/// Variables of flakestorm's own environment no agent inherits: where the control API's
/// token comes from. An agent under test that a prompt injection turns could otherwise
/// call the control API and change the chaos that judges it (issue #51).
const NEVER_INHERITED: &[&str] = &["FLAKESTORM_API_TOKEN", "FLAKESTORM_CONTROL__TOKEN"];

/// Further variable names withheld from every agent this process starts (`withhold_env`).
static WITHHELD: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Withholds the variables `names` of this process's environment from every agent it
/// starts from now on (the daemon: those that hold its control token).
pub fn withhold_env(names: impl IntoIterator<Item = String>) {
    let mut withheld = WITHHELD.lock().unwrap_or_else(|e| e.into_inner());
    for name in names {
        if !withheld.contains(&name) {
            withheld.push(name);
        }
    }
}

/// The names of this process's variables whose value is `secret`.
pub fn vars_holding(secret: &str) -> Vec<String> {
    std::env::vars_os()
        .filter(|(_, v)| v.to_str() == Some(secret))
        .filter_map(|(k, _)| k.into_string().ok())
        .collect()
}

/// The inherited variables an agent does not get (its `agent.env` may still set them).
pub(super) fn withheld() -> Vec<String> {
    let mut names: Vec<String> = NEVER_INHERITED.iter().map(|n| n.to_string()).collect();
    names.extend(
        WITHHELD
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned(),
    );
    names
}
