//! The run commands: `contract run`, `run --chaos-only` and `ci`. Each checks where its
//! report goes, starts a session (proxy, agent, pre-flight), runs, writes its JSON report
//! and prints a summary. The exit code is the verdict's: 0 pass, 1 fail (the agent),
//! 2 not tested or error (the run could not judge the agent), and 2 for bad config or an
//! unreachable agent before any case.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::ReportArgs;
use super::report_path;
use super::session::{Options, Session};
use crate::config::Loaded;
use crate::run::{
    RunVerdict, chaos_summary, combine, mutation_summary, run_chaos, run_contract, run_mutation,
    summary, verdict_line,
};

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

fn color() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// The report path (checked before anything starts) and a session for the run.
async fn begin(
    loaded: &Loaded,
    args: &ReportArgs,
    file: &str,
    show: Show,
) -> Result<(Session, PathBuf), ExitCode> {
    let path = report_path::resolve(args.output.as_deref(), &loaded.config.output.path, file)
        .map_err(|e| {
            eprintln!("flakestorm: {e}");
            ExitCode::from(2)
        })?;
    let opts = Options {
        progress: show.summary(),
        agent_log: report_path::agent_log(&path),
        min_score: args.min_score.unwrap_or(loaded.config.scoring.min_score),
    };
    let session = Session::start(loaded, opts).await?;
    Ok((session, path))
}

pub async fn contract(loaded: Loaded, args: ReportArgs, show: Show) -> anyhow::Result<ExitCode> {
    let config = &loaded.config;
    let Some(contract) = &config.contract else {
        eprintln!("flakestorm: a contract run needs a `contract:` section");
        return Ok(ExitCode::from(2));
    };
    let (session, path) = match begin(&loaded, &args, "contract.json", show).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let result = run_contract(&session.ctx, contract, &config.golden_prompts).await;
    let crashed = session.stop().await;
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    report.warnings.extend(crashed);
    write_report(&report, &path)?;
    let verdict = report.judgement.verdict;
    if show.score_only {
        println!("{:.1}", report.score.value);
        if !verdict.passed() {
            eprint!(
                "{}",
                verdict_line(report.score.value, report.min_score, &report.judgement)
            );
        }
    } else if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if show.quiet {
        println!(
            "contract {}: {:.1}/100",
            verdict.label(),
            report.score.value
        );
    } else {
        print!("{}", summary(&report, color()));
        println!("report: {}", path.display());
    }
    Ok(exit(verdict))
}

/// The chaos a run injects: `profile`, else the config's `chaos:` section (named `chaos`).
/// Nothing to inject is a usage error (exit 2).
fn chaos_to_inject(
    loaded: &Loaded,
    profile: Option<String>,
) -> Result<(String, crate::config::chaos::CompiledChaos), ExitCode> {
    let (name, chaos) = match profile {
        Some(p) => match crate::chaos::profiles::load(&p) {
            Ok(spec) => (p, spec),
            Err(e) => {
                eprintln!("flakestorm: {e}");
                return Err(ExitCode::from(2));
            }
        },
        None => ("chaos".to_string(), loaded.config.chaos.clone()),
    };
    if chaos.is_empty() {
        eprintln!("flakestorm: nothing to inject: add a `chaos:` section or pass --chaos-profile");
        return Err(ExitCode::from(2));
    }
    Ok((name, chaos))
}

/// What `finish` needs of a single-phase run's report.
trait PhaseReport: serde::Serialize {
    fn warnings(&mut self) -> &mut Vec<String>;
    fn verdict(&self) -> RunVerdict;
    /// `--quiet`: one line.
    fn line(&self) -> String;
    fn summary(&self) -> String;
}

impl PhaseReport for crate::run::ChaosReport {
    fn warnings(&mut self) -> &mut Vec<String> {
        &mut self.warnings
    }
    fn verdict(&self) -> RunVerdict {
        self.judgement.verdict
    }
    fn line(&self) -> String {
        format!(
            "chaos {}: {:.1}/100",
            self.judgement.verdict.label(),
            self.score
        )
    }
    fn summary(&self) -> String {
        chaos_summary(self)
    }
}

impl PhaseReport for crate::run::MutationReport {
    fn warnings(&mut self) -> &mut Vec<String> {
        &mut self.warnings
    }
    fn verdict(&self) -> RunVerdict {
        self.judgement.verdict
    }
    fn line(&self) -> String {
        format!(
            "mutation {}: {:.1}/100",
            self.judgement.verdict.label(),
            self.score
        )
    }
    fn summary(&self) -> String {
        mutation_summary(self)
    }
}

/// Ends a single-phase run: stops the session (its warnings, e.g. a crashed agent, join
/// the report's), writes the report and prints it as `show` says.
async fn finish<R: PhaseReport>(
    session: Session,
    path: &Path,
    result: Result<R, crate::run::RunError>,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let crashed = session.stop().await;
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    report.warnings().extend(crashed);
    write_report(&report, path)?;
    if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if show.quiet {
        println!("{}", report.line());
    } else {
        print!("{}", report.summary());
        println!("report: {}", path.display());
    }
    Ok(exit(report.verdict()))
}

/// `run --chaos-only`: golden prompts under the `chaos:` section or `profile`, checked with
/// the top-level invariants.
pub async fn chaos_only(
    loaded: Loaded,
    profile: Option<String>,
    args: ReportArgs,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let config = &loaded.config;
    let (name, chaos) = match chaos_to_inject(&loaded, profile) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    if config.invariants.is_empty() {
        eprintln!("flakestorm: a chaos run needs `invariants:` to check the answers with");
        return Ok(ExitCode::from(2));
    }
    let (session, path) = match begin(&loaded, &args, "chaos.json", show).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let golden = &config.golden_prompts;
    let result = run_chaos(&session.ctx, &name, &chaos, golden, &config.invariants).await;
    finish(session, &path, result, show).await
}

/// `run` (mutations alone) and `run --chaos` (mutations under the `chaos:` rules or
/// `profile`): the variants of the golden prompts, checked with the top-level invariants.
pub async fn mutation(
    loaded: Loaded,
    under_chaos: bool,
    profile: Option<String>,
    args: ReportArgs,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let chaos = match under_chaos || profile.is_some() {
        true => match chaos_to_inject(&loaded, profile) {
            Ok(c) => Some(c),
            Err(code) => return Ok(code),
        },
        false => None,
    };
    if loaded.config.invariants.is_empty() {
        eprintln!("flakestorm: a mutation run needs `invariants:` to check the answers with");
        return Ok(ExitCode::from(2));
    }
    let (session, path) = match begin(&loaded, &args, "mutation.json", show).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let chaos = chaos.as_ref().map(|(n, c)| (n.as_str(), c));
    let result = run_mutation(&session.ctx, chaos, &loaded.config).await;
    finish(session, &path, result, show).await
}

/// `ci`: mutation, contract and chaos phases once each, one weighted score.
pub async fn ci(loaded: Loaded, args: ReportArgs, show: Show) -> anyhow::Result<ExitCode> {
    let config = &loaded.config;
    let mut skipped: Vec<(&'static str, String)> = vec![(
        "replay",
        "replay runs are not available in this build".into(),
    )];
    let mutations_run = !config.invariants.is_empty();
    if !mutations_run {
        skipped.push(("mutation", "needs `invariants:`".into()));
    }
    if config.contract.is_none() {
        skipped.push(("contract", "no `contract:` section".into()));
    }
    let chaos_runs = !config.chaos.is_empty() && !config.invariants.is_empty();
    if !chaos_runs {
        skipped.push(("chaos", "needs a `chaos:` section and `invariants:`".into()));
    }
    let (session, path) = match begin(&loaded, &args, "ci.json", show).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let golden = &config.golden_prompts;
    let mutation = match mutations_run {
        true => {
            let run = run_mutation(&session.ctx, None, config);
            Some(run.await)
        }
        false => None,
    };
    let contract = match &config.contract {
        Some(c) => Some(run_contract(&session.ctx, c, golden).await),
        None => None,
    };
    let chaos = match chaos_runs {
        true => {
            let run = run_chaos(
                &session.ctx,
                "chaos",
                &config.chaos,
                golden,
                &config.invariants,
            );
            Some(run.await)
        }
        false => None,
    };
    let min_score = session.ctx.min_score;
    let crashed = session.stop().await;
    let results = (
        mutation.transpose(),
        contract.transpose(),
        chaos.transpose(),
    );
    let (mutation, contract, chaos) = match results {
        (Ok(m), Ok(a), Ok(b)) => (m, a, b),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("flakestorm: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut report = combine(
        &config.scoring,
        mutation,
        contract,
        chaos,
        &skipped,
        min_score,
    );
    if let Some(c) = report.contract.as_mut() {
        c.warnings.extend(crashed);
    }
    write_report(&report, &path)?;
    let verdict = report.judgement.verdict;
    if show.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(exit(verdict));
    }
    if show.quiet {
        println!("ci {}: {:.1}/100", verdict.label(), report.overall);
        return Ok(exit(verdict));
    }
    if let Some(m) = &report.mutation {
        println!("{}", mutation_summary(m));
    }
    if let Some(c) = &report.contract {
        print!("{}", summary(c, color()));
    }
    if let Some(c) = &report.chaos {
        print!("\n{}", chaos_summary(c));
    }
    println!("\nphases:");
    for p in &report.phases {
        match (p.score, &p.skipped, p.verdict) {
            (Some(s), _, v) => println!(
                "  {:<9} {s:>5.1}  {}  (weight {})",
                p.name,
                v.map_or("", RunVerdict::label),
                p.weight
            ),
            (None, Some(why), _) => println!("  {:<9} skipped: {why}", p.name),
            (None, None, _) => println!("  {:<9} -", p.name),
        }
    }
    print!(
        "{}",
        verdict_line(report.overall, report.min_score, &report.judgement)
            .replacen("score", "overall", 1)
    );
    println!("report: {}", path.display());
    Ok(exit(verdict))
}

fn exit(verdict: RunVerdict) -> ExitCode {
    ExitCode::from(verdict.exit_code())
}

fn write_report(report: &impl serde::Serialize, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}
