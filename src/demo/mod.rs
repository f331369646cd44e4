//! `flakestorm demo`: the embedded default, offline, in one process. A mock search tool and
//! a mock OpenAI-compatible LLM (HTTPS, throwaway CA), a small HTTP agent that calls both
//! through the proxy, and `ci` on `config/demo.yaml`: a contract under three faults (tool
//! outage, LLM rate limit, truncated LLM answers) with traffic invariants, and a chaos run.
//! Its working files (CAs, config) live in a temporary folder removed at the end; its
//! report goes to one stated place, `<temp>/flakestorm-demo/ci.json`, replaced each run.

mod agent;
mod origins;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::config::{self, Overrides, ReportFormat};
use crate::daemon::Daemon;
use crate::run::{
    Declared, RunContext, chaos_summary, combine, mutation_summary, run_chaos, run_contract,
    run_mutation, summary,
};

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

async fn run_in(dir: &std::path::Path) -> Result<String, DemoError> {
    let started_at_ms = crate::exchange::now_unix_ms();
    let clock = tokio::time::Instant::now();
    let mocks = origins::start(dir).await?;
    let agent_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(DemoError::from("binding the agent"))?;
    let agent_port = agent_listener
        .local_addr()
        .map_err(DemoError::from("binding the agent"))?
        .port();
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
    let loaded = config::load_with_env(Some(&file), &Overrides::default(), &env)
        .map_err(|e| DemoError(e.to_string()))?;
    let config_digest = loaded.digest;
    let mut cfg = loaded.config;
    cfg.proxy.listen = "127.0.0.1:0".into();
    cfg.control.listen = "127.0.0.1:0".into();
    cfg.proxy
        .trust_upstream_ca(mocks.ca_file.clone())
        .map_err(DemoError::from("trusting the mock tools' CA"))?;
    let daemon = Daemon::start(&cfg)
        .await
        .map_err(DemoError::from("starting the proxy"))?;
    let ca_pem = crate::files::read_to_string(&daemon.ca_cert_path, crate::files::Limit::Pem)
        .map_err(DemoError::from("reading the CA"))?;
    let tls = agent::client_config(&ca_pem).map_err(DemoError::from("trusting the CA"))?;
    agent::serve(agent_listener, daemon.proxy_addr, tls, &mocks);
    let spec = cfg
        .agent
        .as_ref()
        .ok_or_else(|| DemoError("demo config has no agent".into()))?;
    let ctx = RunContext {
        seed: daemon.chaos.seed(),
        engine: daemon.chaos.clone(),
        journal: daemon.journal.clone(),
        agent: crate::agent::Agent::new(spec, 0).map_err(DemoError::from("agent"))?,
        concurrency: 1,
        attribution: Default::default(),
        config_digest,
        progress: None,
        embedder: None,
        declared: Declared {
            tools: cfg.tools.clone(),
            llm: cfg.llm.clone(),
        },
        min_score: cfg.scoring.min_score,
    };
    let contract = cfg
        .contract
        .as_ref()
        .ok_or_else(|| DemoError("demo config has no contract".into()))?;
    let contract = run_contract(&ctx, contract, &cfg.golden_prompts)
        .await
        .map_err(DemoError::from("contract run"))?;
    let chaos = run_chaos(
        &ctx,
        "chaos",
        &cfg.chaos,
        &cfg.golden_prompts,
        &cfg.invariants,
    )
    .await
    .map_err(DemoError::from("chaos run"))?;
    let mutation = run_mutation(&ctx, None, &cfg)
        .await
        .map_err(DemoError::from("mutation run"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flakestorm demo: a research agent with a search tool and an LLM, in-process and offline."
    );
    let _ = writeln!(
        out,
        "Its tool and LLM calls cross the proxy on {}; its agent, tools, faults and contract:\n\
         `flakestorm demo --print-config`.\n",
        daemon.proxy_addr
    );
    out.push_str(&summary(&contract, false));
    let _ = writeln!(out, "\nmutation phase (seeded variants of the prompts):");
    out.push_str(&mutation_summary(&mutation));
    let _ = writeln!(out, "\nchaos phase (LLM answers cut to 4 tokens):");
    out.push_str(&chaos_summary(&chaos));
    let skipped = [(
        "replay",
        "the demo has no recorded sessions (replays.sessions)".to_string(),
    )];
    let mut ci = combine(
        &cfg.scoring,
        Some(mutation),
        Some(contract),
        Some(chaos),
        None,
        &skipped,
        cfg.scoring.min_score,
    );
    ci.run = Some(crate::run::RunInfo {
        flakestorm: env!("CARGO_PKG_VERSION").into(),
        started_at_ms,
        duration_ms: clock.elapsed().as_secs_f64() * 1000.0,
        agent: Some("the demo's research agent (in-process)".into()),
    });
    let _ = writeln!(out, "\nphases:");
    for p in &ci.phases {
        match (p.score, &p.skipped) {
            (Some(s), _) => writeln!(out, "  {:<9} {s:>5.1}", p.name),
            (_, Some(why)) => writeln!(out, "  {:<9} skipped: {why}", p.name),
            _ => Ok(()),
        }
        .ok();
    }
    let _ = writeln!(
        out,
        "overall {:.1}/100 (pass mark {}): {}",
        ci.overall,
        ci.min_score,
        ci.judgement.verdict.label()
    );
    for r in &ci.judgement.reasons {
        let _ = writeln!(out, "  - {r}");
    }
    traffic(&mut out, &daemon);
    let reports = write_reports(ci)?;
    let _ = writeln!(
        out,
        "\nreport: {} (only the latest demo's is kept)",
        reports.join("ci.json").display()
    );
    let _ = writeln!(out, "        {}", reports.join("ci.html").display());
    let _ = writeln!(
        out,
        "\nNext: `flakestorm init`, point agent.endpoint at your agent, then `flakestorm ci`\n\
         (README; every fault: docs/faults.md; every check: docs/invariants.md)."
    );
    daemon.stop().await;
    Ok(out)
}

/// What the proxy saw: exchanges, faults by rule, and a redacted secret.
fn traffic(out: &mut String, daemon: &Daemon) {
    let all = daemon.journal.all();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    for f in all.iter().filter_map(|e| e.fault.as_ref()) {
        *by_rule
            .entry(format!("{} ({})", f.rule, f.mode))
            .or_default() += 1;
    }
    let _ = writeln!(
        out,
        "\nwhat the proxy saw: {} exchanges of the agent's; faults injected:",
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

/// The JSON report and its HTML page.
fn write_reports(ci: crate::run::CiReport) -> Result<PathBuf, DemoError> {
    let reports = reports_dir();
    std::fs::create_dir_all(&reports).map_err(DemoError::from("creating the reports folder"))?;
    let report = crate::run::Report::Ci(Box::new(ci));
    for format in [ReportFormat::Json, ReportFormat::Html] {
        let text = crate::report::render(&report, format).map_err(DemoError)?;
        let path = crate::report::beside(&reports.join("ci.json"), format);
        std::fs::write(path, text).map_err(DemoError::from("writing the report"))?;
    }
    Ok(reports)
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
