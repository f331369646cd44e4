//! `flakestorm demo`: the embedded default, offline, in one process. A mock search tool and
//! a mock OpenAI-compatible LLM (HTTPS, throwaway CA), a small HTTP agent that calls both
//! through the proxy, and `ci` on `config/demo.yaml`: a contract under five faults (tool
//! outage, empty and corrupted search results, one LLM rate limit, truncated LLM answers)
//! with traffic invariants and an `outcome` invariant, and a chaos run.
//! Its working files (CAs, config) live in a temporary folder removed at the end; its
//! report goes to one stated place, `<temp>/flakestorm-demo/ci.json`, replaced each run.

mod agent;
mod origins;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::config::{self, Overrides, ReportFormat};
use crate::daemon::Daemon;
use crate::run::{Report, RunKind, RunRequest, prepare};
use crate::session::{BeforeAgent, Options, Session, Show};

/// The demo's configuration (ports come from `DEMO_*` variables).
pub const DEMO_CONFIG: &str = include_str!("../../config/demo.yaml");

#[derive(Debug, thiserror::Error)]
#[error("demo failed: {0}")]
pub struct DemoError(pub String);

impl DemoError {
    fn from<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> DemoError + '_ {
        move |e| DemoError(format!("{what}: {e}"))
    }
}

/// Runs the demo and returns the text to print.
pub async fn run() -> Result<String, DemoError> {
    let dir = tempfile_dir()?;
    let result = run_in(&dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Where the demo's report goes, replaced by the next demo.
pub fn reports_dir() -> PathBuf {
    std::env::temp_dir().join("flakestorm-demo")
}

/// The embedded config, written to `dir` and loaded with the ports of the mock tools, the
/// mock LLM and the agent; its listeners on free ports, the mocks' CA trusted, JSON and
/// HTML reports.
fn demo_config(
    dir: &std::path::Path,
    mocks: &origins::Mocks,
    agent_port: u16,
) -> Result<config::Loaded, DemoError> {
    let file = dir.join("flakestorm.yaml");
    std::fs::write(&file, DEMO_CONFIG).map_err(DemoError::from("writing the demo config"))?;
    let env: BTreeMap<String, String> = [
        ("DEMO_TOOL_PORT", mocks.tool_port),
        ("DEMO_LLM_PORT", mocks.llm_port),
        ("DEMO_AGENT_PORT", agent_port),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut loaded = config::load_with_env(Some(&file), &Overrides::default(), &env)
        .map_err(|e| DemoError(e.to_string()))?;
    let cfg = &mut loaded.config;
    cfg.proxy.listen = "127.0.0.1:0".into();
    cfg.control.listen = "127.0.0.1:0".into();
    cfg.proxy
        .trust_upstream_ca(mocks.ca_file.clone())
        .map_err(DemoError::from("trusting the mock tools' CA"))?;
    cfg.output.format = vec![ReportFormat::Json, ReportFormat::Html];
    Ok(loaded)
}

async fn run_in(dir: &std::path::Path) -> Result<String, DemoError> {
    let mocks = origins::start(dir).await?;
    let agent_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(DemoError::from("binding the agent"))?;
    let agent_port = agent_listener
        .local_addr()
        .map_err(DemoError::from("binding the agent"))?
        .port();
    let loaded = demo_config(dir, &mocks, agent_port)?;
    let ci = RunRequest {
        kind: RunKind::Ci,
        under_chaos: false,
        profile: None,
    };
    let prepared = prepare(&loaded.config, &ci).map_err(|e| DemoError(e.to_string()))?;
    // The agent is served in-process once the proxy it calls through is up.
    let serve_agent: BeforeAgent = Box::new(move |proxy| {
        let ca_pem = crate::files::read_to_string(&proxy.ca_cert, crate::files::Limit::Pem)
            .map_err(|e| format!("reading the CA: {e}"))?;
        let tls = agent::client_config(&ca_pem).map_err(|e| format!("trusting the CA: {e}"))?;
        agent::serve(agent_listener, proxy.addr, tls, &mocks);
        Ok(())
    });
    let opts = Options {
        agent_log: dir.join("agent.log"),
        min_score: loaded.config.scoring.min_score,
        seed: None,
        trial: None,
        shard: None,
        progress: None,
        before_agent: Some(serve_agent),
        cases: prepared.cases(&loaded.config, None),
    };
    let daemon = Daemon::start(&loaded.config)
        .await
        .map_err(|e| DemoError(format!("starting the run: error: {e}")))?;
    let session = Session::start(loaded, daemon.run_proxy(), opts).await;
    let result = match session {
        Ok(session) => run_ci(session, &prepared).await,
        Err(e) => Err(DemoError(format!("starting the run: {e}"))),
    };
    daemon.stop().await;
    result
}

/// The `ci` run of the demo and what it tells.
async fn run_ci(
    mut session: Session,
    prepared: &crate::run::Prepared,
) -> Result<String, DemoError> {
    let result = session.execute(prepared).await;
    let report = match result {
        Ok(Report::Ci(mut ci)) => {
            in_demo_words(&mut ci);
            ci
        }
        Ok(_) => {
            session.stop().await;
            return Err(DemoError("the ci run made no ci report".into()));
        }
        Err(e) => {
            session.stop().await;
            return Err(DemoError(format!("ci run: {e}")));
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flakestorm demo: a research agent with a search tool and an LLM, in-process and offline."
    );
    let _ = writeln!(
        out,
        "Its tool and LLM calls cross the proxy on {}; its agent, tools, faults and contract:\n\
         `flakestorm demo --print-config`.\n",
        session.proxy().addr
    );
    traffic(&mut out, &session.proxy().journal);
    let reports = reports_dir();
    let ended = session
        .finish(Report::Ci(report), &reports.join("ci.json"))
        .await;
    session.stop().await;
    if let Some(why) = ended.written.failed.first() {
        return Err(DemoError(format!("writing the report: {why}")));
    }
    out.push('\n');
    out.push_str(&ended.told(Show::default(), None).out);
    next_steps(&mut out);
    Ok(out)
}

/// What to do next.
fn next_steps(out: &mut String) {
    let _ = writeln!(
        out,
        "(only the latest demo's reports are kept)\n\n\
         Next: `flakestorm init`, point agent.endpoint at your agent, then `flakestorm ci`\n\
         (README; every fault: docs/faults.md; every check: docs/invariants.md)."
    );
}

/// The demo's words where `ci`'s would send a user looking for a config of theirs.
fn in_demo_words(ci: &mut crate::run::CiReport) {
    let replay = ci.phases.iter_mut();
    for p in replay.filter(|p| p.name == crate::run::RunKind::Replay) {
        p.skipped = Some("the demo has no recorded sessions (replays.sessions)".into());
    }
    if let Some(info) = &mut ci.run {
        info.agent = Some("the demo's research agent (in-process)".into());
    }
}

/// What the proxy saw: exchanges, faults by rule, and a redacted secret.
fn traffic(out: &mut String, journal: &crate::journal::Journal) {
    let all = journal.all();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    for f in all.iter().filter_map(|e| e.fault.as_ref()) {
        *by_rule
            .entry(format!("{} ({})", f.rule, f.mode))
            .or_default() += 1;
    }
    let _ = writeln!(
        out,
        "what the proxy saw: {} exchanges of the agent's; faults injected:",
        all.len()
    );
    for (rule, n) in by_rule {
        let _ = writeln!(out, "  {rule}: {n}");
    }
    if let Some((name, value)) = all
        .iter()
        .flat_map(|e| &e.request.headers)
        .find(|(k, _)| k == "authorization")
    {
        let _ = writeln!(
            out,
            "  (the agent sent `{name}: Bearer sk-demo-secret`; the journal keeps `{value}`)"
        );
    }
}

#[allow(clippy::disallowed_methods)] // a unique folder name, not a time anything waits on
fn tempfile_dir() -> Result<PathBuf, DemoError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("flakestorm-demo-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(DemoError::from("creating a temp folder"))?;
    Ok(dir)
}
