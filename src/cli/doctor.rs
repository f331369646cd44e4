//! `flakestorm doctor`: whether `agent.capture: netns` works on this machine (the same
//! check a run makes: tools, user namespaces, the namespace's rules), and, for the
//! configured agent, which of its calls would bypass the proxy in `proxy` mode. For that it
//! runs the agent once under `capture: netns`, with no chaos, sends it the first golden
//! prompt, and sorts the calls the case made: those that came through `HTTPS_PROXY` (what
//! `proxy` mode sees) and those captured around it (`client_addr` marked by the capture:
//! what `proxy` mode would miss). One real call of the agent: what it does for that prompt,
//! not every path it has.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::ConfigArg;
use super::load::load;
use crate::agent::Pool;
use crate::capture::Mode;
use crate::config::{Config, Overrides};
use crate::daemon::Daemon;

pub(super) async fn run(arg: &ConfigArg) -> ExitCode {
    let available = tokio::task::spawn_blocking(crate::capture::check)
        .await
        .unwrap_or_else(|e| Err(format!("the check failed: {e}")));
    match &available {
        Ok(()) => println!("agent.capture: netns is available on this machine"),
        Err(why) => println!("agent.capture: netns is not available here: {why}"),
    }
    let Ok(loaded) = load(arg, Overrides::default()) else {
        return ExitCode::from(2);
    };
    let Some(prompt) = loaded.config.golden_prompts.first().cloned() else {
        println!("(no golden_prompts: the agent's calls were not watched)");
        return code(&available);
    };
    let command = loaded.config.agent.as_ref().and_then(|a| a.command.clone());
    if command.is_none() || available.is_err() {
        println!(
            "(the agent's calls are watched when flakestorm starts it, agent.command, under \
             capture: netns)"
        );
        return code(&available);
    }
    match watch(&loaded.config, &prompt).await {
        Ok(seen) => say(&seen, &prompt),
        Err(why) => {
            println!("the agent could not be watched: {why}");
            return ExitCode::from(1);
        }
    }
    code(&available)
}

fn code(available: &Result<(), String>) -> ExitCode {
    match available {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// The hosts the case called: through the proxy variables, and around them.
struct Seen {
    through: BTreeSet<String>,
    around: BTreeSet<String>,
    answered: Result<(), String>,
}

/// Runs the agent once under `capture: netns` and sorts its calls.
async fn watch(config: &Config, prompt: &str) -> Result<Seen, String> {
    let mut config = config.clone();
    config.proxy.listen = "127.0.0.1:0".into();
    config.control.listen = "127.0.0.1:0".into();
    if let Ok(none) = crate::chaos::spec::CompiledChaos::compile(Default::default()) {
        config.chaos = none;
    }
    if let Some(agent) = config.agent.as_mut() {
        agent.capture = Mode::Netns;
    }
    let daemon = Daemon::start(&config).await.map_err(|e| e.to_string())?;
    let log = std::env::temp_dir().join(format!("flakestorm-doctor-{}.log", std::process::id()));
    let pool = Pool::start(
        &config,
        crate::config::PoolSize {
            start: 1,
            most: 1,
            cases: Some(1),
        },
        &daemon.lanes,
        &daemon.ca_cert_path,
        daemon.wrap_dir.as_deref(),
        &log,
    )
    .await;
    let pool = match pool {
        Ok(p) => Arc::new(p),
        Err(e) => {
            daemon.stop().await;
            return Err(e.to_string());
        }
    };
    let lease = pool.lease().await;
    let trace = "d0c7e0000000000000000000000000d0";
    let watch = daemon.journal.watch(trace);
    let serving = lease.lane().serving(trace);
    let reply = lease.agent().invoke(prompt, &Default::default()).await;
    let bound = config
        .agent
        .as_ref()
        .map_or(Duration::from_secs(5), |a| a.timeout);
    watch.settle(Duration::from_millis(500), bound).await;
    drop(serving);
    let mut seen = Seen {
        through: BTreeSet::new(),
        around: BTreeSet::new(),
        answered: reply.answer.map(|_| ()).map_err(|e| e.to_string()),
    };
    for e in daemon.journal.by_trace(trace) {
        let host = origin(&e.request.url);
        match e.client_addr.starts_with(crate::proxy::CAPTURED) {
            true => seen.around.insert(host),
            false => seen.through.insert(host),
        };
    }
    drop(lease);
    pool.stop().await;
    daemon.stop().await;
    let _ = std::fs::remove_file(&log);
    Ok(seen)
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    format!("{scheme}://{authority}")
}

fn say(seen: &Seen, prompt: &str) {
    println!("the agent, asked {prompt:?} once under capture: netns with no chaos:");
    if let Err(why) = &seen.answered {
        println!("  (it gave no answer: {why})");
    }
    let list = |hosts: &BTreeSet<String>| match hosts.is_empty() {
        true => "none".to_string(),
        false => hosts.iter().cloned().collect::<Vec<_>>().join(", "),
    };
    println!(
        "  through HTTPS_PROXY (proxy mode sees them): {}",
        list(&seen.through)
    );
    println!(
        "  around it (proxy mode would miss them):     {}",
        list(&seen.around)
    );
    if seen.around.is_empty() {
        println!("every call it made crossed the proxy variables: capture: proxy tests it");
    } else {
        println!(
            "with capture: proxy these calls bypass flakestorm (a run says NOT TESTED for \
             them); capture: netns captures them (docs/capture.md)"
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_origin_is_scheme_host_and_port() {
        assert_eq!(
            super::origin("https://localhost:8443/v1/chat?x=1"),
            "https://localhost:8443"
        );
        assert_eq!(super::origin("http://a.example"), "http://a.example");
    }
}
