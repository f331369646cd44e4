//! `flakestorm contract run`: start the proxy, start the agent if `agent.command` says
//! how, check it answers, run the contract matrix, write the JSON report, print the matrix.
//! Exit codes: 0 passed, 1 failed (a critical cell, or below `--min-score`), 2 bad config or
//! unreachable agent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::agent::{Agent, AgentProcess, proxy_env};
use crate::checks::Verdict;
use crate::config::Loaded;
use crate::daemon::Daemon;
use crate::run::{ContractReport, RunContext, run_contract};

pub async fn run(
    loaded: Loaded,
    out: Option<PathBuf>,
    min_score: Option<f64>,
) -> anyhow::Result<ExitCode> {
    let config = &loaded.config;
    let (Some(agent_spec), Some(contract)) = (&config.agent, &config.contract) else {
        eprintln!("flakestorm: a contract run needs `agent:` and `contract:` sections");
        return Ok(ExitCode::from(2));
    };
    let daemon = Daemon::start(config).await?;
    eprintln!(
        "flakestorm: proxy on {} for the agent's traffic",
        daemon.proxy_addr
    );
    let process = match &agent_spec.command {
        Some(cmd) => {
            let env = proxy_env(daemon.proxy_addr, &daemon.ca_cert_path);
            let wait = Duration::from_millis(agent_spec.timeout.max(30_000));
            match AgentProcess::start(cmd, &env, agent_spec.ready_url.as_deref(), wait).await {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("flakestorm: {e}");
                    daemon.stop().await;
                    return Ok(ExitCode::from(2));
                }
            }
        }
        None => None,
    };
    let agent = Agent::new(agent_spec, config.advanced.retries)?;
    if let Err(e) = agent.preflight().await {
        eprintln!("flakestorm: {e}");
        stop(process, daemon).await;
        return Ok(ExitCode::from(2));
    }
    let ctx = RunContext {
        engine: daemon.chaos.clone(),
        journal: daemon.journal.clone(),
        agent,
        concurrency: config.advanced.concurrency as usize,
    };
    let result = run_contract(&ctx, contract, &config.golden_prompts).await;
    stop(process, daemon).await;
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let path = out.unwrap_or_else(|| config.output.path.join("contract.json"));
    write_report(&report, &path)?;
    print!("{}", summary(&report));
    println!("report: {}", path.display());
    let below = min_score.is_some_and(|m| report.score.value < m);
    Ok(if report.score.passed && !below {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn stop(process: Option<AgentProcess>, daemon: Daemon) {
    if let Some(p) = process {
        p.stop(Duration::from_secs(5)).await;
    }
    daemon.stop().await;
}

fn write_report(report: &ContractReport, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}

/// The matrix, one row per invariant, one column per scenario: ✓ pass, ✗ fail, · n/a.
pub fn summary(r: &ContractReport) -> String {
    let mut out = format!(
        "contract {:?}: {} agent calls\n\n",
        r.contract, r.agent_calls
    );
    let width = r
        .cells
        .iter()
        .map(|c| c.invariant.len())
        .max()
        .unwrap_or(9)
        .max(9);
    out.push_str(&format!("  {:<width$}", "invariant"));
    for s in &r.scenarios {
        out.push_str(&format!("  {s}"));
    }
    out.push('\n');
    let mut ids: Vec<&str> = vec![];
    for c in &r.cells {
        if !ids.contains(&c.invariant.as_str()) {
            ids.push(&c.invariant);
        }
    }
    for id in ids {
        out.push_str(&format!("  {id:<width$}"));
        for s in &r.scenarios {
            let mark = match r
                .cells
                .iter()
                .find(|c| c.invariant == id && &c.scenario == s)
                .map(|c| &c.verdict)
            {
                Some(Verdict::Pass(_)) => "✓",
                Some(Verdict::Fail(_)) => "✗",
                _ => "·",
            };
            out.push_str(&format!("  {mark:<w$}", w = s.chars().count()));
        }
        out.push('\n');
    }
    for c in r
        .cells
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail(_)))
    {
        if let Verdict::Fail(reason) = &c.verdict {
            out.push_str(&format!(
                "\n✗ {} under {} ({:?}): {reason}",
                c.invariant, c.scenario, c.severity
            ));
        }
    }
    for w in &r.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    let verdict = if r.score.passed {
        "PASS"
    } else {
        "FAIL (a critical invariant failed)"
    };
    out.push_str(&format!("\n\nscore {:.1}/100: {verdict}\n", r.score.value));
    out
}
