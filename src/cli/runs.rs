//! The run commands: `contract run|score`, `run` (`--chaos`, `--chaos-only`) and `ci`.
//! Each checks that the config can make the run (`run::prepare`) and where its report
//! goes, starts a session (proxy, agent, pre-flight), runs (`run::execute`), writes its
//! JSON report and prints it. The exit code is the verdict's: 0 pass, 1 fail (the agent),
//! 2 not tested or error (the run could not judge the agent), and 2 for bad config or an
//! unreachable agent before any case.

use std::path::PathBuf;
use std::process::ExitCode;

use super::ReportArgs;
use super::baseline::{Baseline, none_found, same_as};
use super::report_path;
use super::session::{Options, Run};
use crate::config::Loaded;
use crate::run::{Report, RunKind, RunRequest, RunVerdict, Shard, prepare};
pub use crate::session::Show;
use crate::session::{Ended, Session};
use crate::store::RunStatus;

/// The report path (checked before anything starts) and a session for the run.
async fn begin(
    loaded: &Loaded,
    args: &ReportArgs,
    file: &str,
    show: Show,
    shard: Option<Shard>,
    cases: Option<usize>,
) -> Result<(Run, PathBuf), ExitCode> {
    let path = report_path::resolve(args.output.as_deref(), &loaded.config.output.path, file)
        .map_err(|e| {
            eprintln!("flakestorm: {e}");
            ExitCode::from(2)
        })?;
    let opts = Options {
        progress: show.summary(),
        agent_log: report_path::agent_log(&path),
        min_score: args.min_score.unwrap_or(loaded.config.scoring.min_score),
        trial: args.trial,
        shard,
        cases,
    };
    let run = super::session::start(loaded, opts).await?;
    Ok((run, path))
}

/// Runs `req` against the agent: checks the config can make it, starts the session, runs,
/// writes the report and prints it as `show` says.
pub async fn run(
    mut loaded: Loaded,
    req: RunRequest,
    args: ReportArgs,
    show: Show,
) -> anyhow::Result<ExitCode> {
    let flags = ("--trials", "--trial");
    if let Err(e) =
        crate::config::override_trials(&mut loaded.config, args.trials, args.trial, flags)
    {
        eprintln!("flakestorm: {}", crate::config::one_line(e));
        return Ok(ExitCode::from(2));
    }
    let shard = match shard_arg(&args, req.kind, &loaded.config) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let prepared = match prepare(&loaded.config, &req) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("flakestorm: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    let cases = prepared.cases(&loaded.config, args.trial);
    let file = report_file(req.kind, shard);
    let (mut run, path) = match begin(&loaded, &args, &file, show, shard, cases).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let baseline = match baseline_of(&loaded, &args, req.kind, &run.session, show) {
        Ok(b) => b,
        Err(code) => {
            run.stop().await;
            return Ok(code);
        }
    };
    // A shard is a part of a run: its merge is the run (docs/scale.md).
    if shard.is_none() {
        run.session.record_new(req.kind);
    }
    let result = run.session.execute(&prepared).await;
    if let Some(d) = &run.display {
        d.finish();
    }
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            // The store's error, if any, matters less than the run's.
            let _ = run
                .session
                .fail(RunStatus::Error, Some(e.to_string()))
                .await;
            run.stop().await;
            return Ok(ExitCode::from(2));
        }
    };
    // What `report merge` needs, so that it needs no config file (credentials out).
    if shard.is_some() {
        crate::run::carry_config(&mut report, &loaded.carried);
    }
    let ended = run.session.finish(report, &path).await;
    run.stop().await;
    let report = match shown_end(ended, show)? {
        Ok(report) => report,
        Err(code) => return Ok(code),
    };
    let max_drop = args.max_drop.unwrap_or(0.0);
    let measure = report.info().and_then(|i| i.trials.as_ref());
    let dropped = super::baseline::dropped(baseline, &report.scores(), measure, max_drop);
    let code = match shard {
        Some(s) => shard_end(&report, s),
        None => exit(report.verdict()),
    };
    Ok(gate(code, report.verdict(), &dropped))
}

/// Prints the ended run (its report, the files written, its tapes) and what could not be
/// kept; the report, or exit 2 when the run store could not record it (`Err`: no JSON
/// report was written).
fn shown_end(ended: Ended, show: Show) -> anyhow::Result<Result<Report, ExitCode>> {
    ended.told(show, None).print();
    if ended.written.json().is_none() {
        anyhow::bail!("the run's JSON report was not written");
    }
    if let Err(e) = ended.stored {
        eprintln!(
            "flakestorm: error: the run store could not record this run ({e}); its report is \
             {}",
            ended.json.display()
        );
        return Ok(Err(ExitCode::from(2)));
    }
    Ok(Ok(ended.report))
}

/// The baseline's scores (`--baseline`), when asked for and found; exit 2 when the store
/// cannot say.
fn baseline_of(
    loaded: &Loaded,
    args: &ReportArgs,
    kind: RunKind,
    session: &Session,
    show: Show,
) -> Result<Option<super::baseline::Scored>, ExitCode> {
    let Some(b) = &args.baseline else {
        return Ok(None);
    };
    let same = same_as(loaded, kind, (args.trials, args.trial));
    match Baseline::parse(b).scores_in(&session.proxy().store, kind, &same) {
        Ok(found) => {
            if found.is_none() && !show.quiet {
                eprintln!("flakestorm: {}", none_found(kind, &same));
            }
            Ok(found)
        }
        Err(e) => {
            eprintln!("flakestorm: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// `--shard`, if given, checked (exit 2 saying why it cannot be).
fn shard_arg(
    args: &ReportArgs,
    kind: RunKind,
    config: &crate::config::Config,
) -> Result<Option<Shard>, ExitCode> {
    let Some(text) = args.shard.as_deref() else {
        return Ok(None);
    };
    shard_of(text, kind, args, config).map(Some).map_err(|why| {
        eprintln!("flakestorm: {why}");
        ExitCode::from(2)
    })
}

/// How a shard's run ends: said when it held nothing or its part is not tested on its
/// own (the merge judges the run), and its exit code (`shard_exit`).
fn shard_end(report: &Report, shard: Shard) -> ExitCode {
    if let Report::Contract(crate::run::ContractReport {
        shard: Some(part), ..
    }) = report
        && part.units.is_empty()
    {
        // Nothing of the run fell to this shard: not a verdict, and no reason to retry it.
        println!(
            "shard {} holds none of the run's {} prompts: nothing to run; `report merge` decides",
            part.shard, part.units_total
        );
        return ExitCode::SUCCESS;
    }
    if report.verdict() == RunVerdict::NotTested {
        println!("shard {shard}: its part is not tested on its own; `report merge` judges the run");
    }
    shard_exit(report.verdict())
}

/// A shard's exit code, for a Kubernetes Job's `podFailurePolicy` (docs/scale.md): 1 the
/// agent failed its part (the report stands: `FailIndex`), 3 an environment error (worth
/// another try: `backoffLimitPerIndex`), apart from 2, bad usage (`FailJob`). Whether the
/// run tested what it claims (chaos that fired somewhere, traffic) is the whole run's to
/// say: a part not tested on its own exits 0 and the merge decides.
fn shard_exit(verdict: RunVerdict) -> ExitCode {
    match verdict {
        RunVerdict::Error => ExitCode::from(3),
        RunVerdict::NotTested => ExitCode::SUCCESS,
        RunVerdict::Pass | RunVerdict::Fail => exit(verdict),
    }
}

/// The exit code once the baseline has had its say: a pass whose scores dropped too far
/// fails (1); other verdicts keep their code. The drops are printed either way.
pub(super) fn gate(code: ExitCode, verdict: RunVerdict, dropped: &[String]) -> ExitCode {
    if dropped.is_empty() {
        return code;
    }
    println!("regressions against the baseline:");
    for d in dropped {
        println!("  - {d}");
    }
    match verdict {
        RunVerdict::Pass => ExitCode::from(1),
        RunVerdict::Fail | RunVerdict::NotTested | RunVerdict::Error => code,
    }
}

fn exit(verdict: RunVerdict) -> ExitCode {
    ExitCode::from(verdict.exit_code())
}

/// `--shard` as the run may take it: any run but a mutation run whose variants a model
/// writes, and without
/// `--baseline` (a shard's scores are a part's; compare the merged report's).
fn shard_of(
    text: &str,
    kind: RunKind,
    args: &ReportArgs,
    config: &crate::config::Config,
) -> Result<Shard, String> {
    let index = std::env::var("JOB_COMPLETION_INDEX").ok();
    let shard = Shard::parse(text, index.as_deref()).map_err(|e| e.to_string())?;
    let spec = &config.mutations;
    let model = spec
        .types
        .iter()
        .find(|k| k.family() == crate::mutate::kind::Family::Model || spec.model_writes(**k));
    if let (RunKind::Mutation, Some(k)) = (kind, model) {
        return Err(format!(
            "--shard: a mutation run whose variants a model writes ({k}) is not sharded: each \
             shard would get other variants (a sharded `ci` runs its mutations whole on shard 1; \
             docs/scale.md)"
        ));
    }
    if args.baseline.is_some() {
        return Err(
            "--shard cannot be used with --baseline: compare the merged report's scores".into(),
        );
    }
    Ok(shard)
}

/// A shard's report is named for its part, so shards writing to one folder never collide.
fn report_file(kind: RunKind, shard: Option<Shard>) -> String {
    match shard {
        Some(s) => format!("{kind}.shard-{}-of-{}.json", s.k, s.n),
        None => kind.report_file(),
    }
}
