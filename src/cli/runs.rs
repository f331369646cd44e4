//! The run commands: `contract run`, `run --chaos-only` and `ci`. Each starts a session
//! (proxy, agent, pre-flight), runs, writes its JSON report and prints a summary. Exit codes:
//! 0 passed, 1 failed (a critical cell, or below `--min-score`), 2 bad config or
//! unreachable agent.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::ReportArgs;
use super::session::Session;
use crate::checks::Verdict;
use crate::config::Loaded;
use crate::run::{combine, run_chaos, run_contract, summary};

/// How a run command prints: `--quiet` (the verdict line only) and `--json` (the report on
/// stdout instead of the summary).
#[derive(Debug, Clone, Copy, Default)]
pub struct Show {
    pub quiet: bool,
    pub json: bool,
    /// Only the score on stdout (`contract score`, a CI gate).
    pub score_only: bool,
}

impl Show {
    fn summary(self) -> bool {
        !self.quiet && !self.json && !self.score_only
    }
}

/// Exit 0 on a pass, 1 on a failure (2 is for bad config, returned where it is found).
fn exit(passed: bool) -> ExitCode {
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn verdict(passed: bool) -> &'static str {
    if passed { "PASS" } else { "FAIL" }
}

fn color() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

pub async fn contract(
    loaded: Loaded,
    report_args: ReportArgs,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let ReportArgs {
        output: out,
        min_score,
    } = report_args;
    let config = &loaded.config;
    let Some(contract) = &config.contract else {
        eprintln!("flakestorm: a contract run needs a `contract:` section");
        return Ok(ExitCode::from(2));
    };
    let session = match Session::start(&loaded, show.summary()).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let result = run_contract(&session.ctx, contract, &config.golden_prompts).await;
    session.stop().await;
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let path = out.unwrap_or_else(|| config.output.path.join("contract.json"));
    write_report(&report, &path)?;
    let passed = report.score.passed && min_score.is_none_or(|m| report.score.value >= m);
    if show.score_only {
        println!("{:.1}", report.score.value);
    } else if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if show.quiet {
        println!(
            "contract {}: {:.1}/100",
            verdict(passed),
            report.score.value
        );
    } else {
        print!("{}", summary(&report, color()));
        println!("report: {}", path.display());
    }
    Ok(exit(passed))
}

/// `run --chaos-only`: golden prompts under the `chaos:` section or `profile`, checked with
/// the top-level invariants.
pub async fn chaos_only(
    loaded: Loaded,
    profile: Option<String>,
    report_args: ReportArgs,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let ReportArgs {
        output: out,
        min_score,
    } = report_args;
    let config = &loaded.config;
    let (name, chaos) = match profile {
        Some(p) => match crate::chaos::profiles::load(&p) {
            Ok(spec) => (p, spec),
            Err(e) => {
                eprintln!("flakestorm: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => ("chaos".to_string(), config.chaos.clone()),
    };
    if chaos.is_empty() {
        eprintln!("flakestorm: nothing to inject: add a `chaos:` section or pass --chaos-profile");
        return Ok(ExitCode::from(2));
    }
    if config.invariants.is_empty() {
        eprintln!("flakestorm: a chaos run needs `invariants:` to check the answers with");
        return Ok(ExitCode::from(2));
    }
    let session = match Session::start(&loaded, show.summary()).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let result = run_chaos(
        &session.ctx,
        &name,
        &chaos,
        &config.golden_prompts,
        &config.invariants,
    )
    .await;
    session.stop().await;
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let path = out.unwrap_or_else(|| config.output.path.join("chaos.json"));
    write_report(&report, &path)?;
    let ok = min_score.is_none_or(|m| report.score >= m);
    if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(exit(ok));
    }
    if show.quiet {
        println!("chaos {}: {:.1}/100", verdict(ok), report.score);
        return Ok(exit(ok));
    }
    let passed = report.prompts.iter().filter(|p| p.passed).count();
    println!(
        "chaos run under {:?}: {passed} of {} prompts passed",
        report.chaos,
        report.prompts.len()
    );
    for p in report.prompts.iter().filter(|p| !p.passed) {
        let why = p.checks.iter().find_map(|v| {
            if let Verdict::Fail(r) = v {
                Some(r.as_str())
            } else {
                None
            }
        });
        let why = why.or_else(|| {
            p.checks.iter().find_map(|v| match v {
                Verdict::NotApplicable(r) => Some(r.as_str()),
                _ => None,
            })
        });
        println!("  ✗ {:?}: {}", p.prompt, why.unwrap_or("failed"));
    }
    for w in &report.warnings {
        println!("warning: {w}");
    }
    println!(
        "\nscore {:.1}/100\nreport: {}",
        report.score,
        path.display()
    );
    Ok(exit(ok))
}

/// `ci`: contract and chaos phases once each, one weighted score.
pub async fn ci(loaded: Loaded, report_args: ReportArgs, show: Show) -> anyhow::Result<ExitCode> {
    let ReportArgs {
        output: out,
        min_score,
    } = report_args;
    let config = &loaded.config;
    let mut skipped: Vec<(&'static str, String)> = vec![
        (
            "mutation",
            "mutation runs are not available in this build".into(),
        ),
        (
            "replay",
            "replay runs are not available in this build".into(),
        ),
    ];
    if config.contract.is_none() {
        skipped.push(("contract", "no `contract:` section".into()));
    }
    let chaos_runs = !config.chaos.is_empty() && !config.invariants.is_empty();
    if !chaos_runs {
        skipped.push(("chaos", "needs a `chaos:` section and `invariants:`".into()));
    }
    let session = match Session::start(&loaded, show.summary()).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let contract = match &config.contract {
        Some(c) => Some(run_contract(&session.ctx, c, &config.golden_prompts).await),
        None => None,
    };
    let chaos = match chaos_runs {
        true => Some(
            run_chaos(
                &session.ctx,
                "chaos",
                &config.chaos,
                &config.golden_prompts,
                &config.invariants,
            )
            .await,
        ),
        false => None,
    };
    session.stop().await;
    let (contract, chaos) = match (contract.transpose(), chaos.transpose()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(c) = contract.as_ref().filter(|_| show.summary()) {
        print!("{}", summary(c, color()));
    }
    let report = combine(&config.scoring, contract, chaos, &skipped, min_score);
    let path = out.unwrap_or_else(|| config.output.path.join("ci.json"));
    write_report(&report, &path)?;
    let code = exit(report.passed);
    if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(code);
    }
    if show.quiet {
        println!("ci {}: {:.1}/100", verdict(report.passed), report.overall);
        return Ok(code);
    }
    for w in report.chaos.iter().flat_map(|c| &c.warnings) {
        println!("warning (chaos phase): {w}");
    }
    println!("\nphases:");
    for p in &report.phases {
        match (p.score, &p.skipped) {
            (Some(s), _) => println!("  {:<9} {s:>5.1}  (weight {})", p.name, p.weight),
            (None, Some(why)) => println!("  {:<9} skipped: {why}", p.name),
            (None, None) => println!("  {:<9} -", p.name),
        }
    }
    println!(
        "\noverall {:.1}/100: {}\nreport: {}",
        report.overall,
        verdict(report.passed),
        path.display()
    );
    Ok(code)
}

fn write_report(report: &impl serde::Serialize, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}
