//! What a config sent to `/v1/runs` may make the daemon do when its control API is off
//! loopback (reached from other machines, with the token): nothing on the daemon's own
//! host. It may not start a command, and it may not name a file for the daemon to open
//! (sessions, tapes, contracts by path): those travel inline. Refused before anything is
//! opened, with the same answer whether the file exists or not, so the daemon's file system
//! cannot be probed through it.

use serde_json::Value;

use crate::config::Config;
use crate::config::replays::SessionEntry;

/// The first thing in `config` a run submitted from off loopback may not do, as the
/// `not_runnable` message (the field, the rule and the fix).
pub fn off_loopback(config: &Config) -> Result<(), String> {
    const RULE: &str = "a control API off loopback opens no file of the daemon's host";
    if config.agent.as_ref().is_some_and(|a| a.command.is_some()) {
        return Err(
            "agent.command would run a command on the daemon's host, which a control API off \
             loopback does not allow; start the agent yourself and give agent.endpoint"
                .into(),
        );
    }
    let own_contract = config.contract.as_ref().map(|c| c.name.as_str());
    for (i, entry) in config.replays.sessions.iter().enumerate() {
        let at = format!("replays.sessions[{i}]");
        let session = match entry {
            SessionEntry::File(_) => {
                return Err(format!(
                    "{at}: names a session file, and {RULE}; send the session inline (its \
                     fields under replays.sessions)"
                ));
            }
            SessionEntry::Inline(s) => s,
        };
        if session.tape.is_some() {
            return Err(format!(
                "{at}.tape: names a tape file, and {RULE}; replay it with the daemon on \
                 loopback or with a local run (`flakestorm replay run`), or give the \
                 session's answers inline as tool_responses"
            ));
        }
        if session
            .contract
            .as_deref()
            .is_some_and(|n| Some(n) != own_contract)
        {
            return Err(format!(
                "{at}.contract: is not the name of the config's contract:, so it would be read \
                 as a file path, and {RULE}; put the contract in the config and name it"
            ));
        }
    }
    Ok(())
}

/// What a JSON value is, for an error that must not quote it.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
