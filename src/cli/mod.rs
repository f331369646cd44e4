//! Command-line commands. Output meant for people and scripts goes to stdout; logs go to
//! stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::{Loaded, Overrides};
use crate::run::{RunKind, RunRequest};

mod args;
mod baseline;
mod certificate;
mod commands;
mod daemon_client;
mod doctor;
mod health;
mod history;
mod langsmith;
mod load;
mod merge;
mod migrate;
mod progress;
mod remote;
mod report;
mod report_path;
mod runs;
mod session;

pub use args::*;
use commands::{StopSignal, ca, init, on_signals, profiles};
use load::{load, validate};

/// Default config file looked for in the working directory when `-c` is not given.
const DEFAULT_CONFIG: &str = "flakestorm.yaml";

pub async fn run(cli: Cli) -> ExitCode {
    // The agents this process starts are supervised by its own binary.
    if let Some(me) = crate::agent::own_binary() {
        crate::agent::supervise_with(me);
    }
    let result = match cli.command {
        Command::Serve {
            config,
            listen,
            control_listen,
            chaos_profile,
            record,
            open,
        } => {
            let listens = (listen, control_listen);
            return commands::serve_command(&config, listens, &open, chaos_profile, record).await;
        }
        Command::Record {
            config,
            output,
            listen,
            control_listen,
            open,
        } => return commands::record(&config, (listen, control_listen), &open, output).await,
        Command::Profiles { command } => return profiles(command),
        Command::Contract { command } => return contract(command).await,
        Command::Run {
            config,
            chaos_only,
            chaos,
            chaos_profile,
            report,
            show,
            open,
        } => {
            let show = show.show();
            if chaos_only && chaos {
                eprintln!("flakestorm: --chaos-only and --chaos exclude each other");
                return ExitCode::from(2);
            }
            let req = match chaos_only {
                true => request(RunKind::Chaos, false, chaos_profile),
                false => request(RunKind::Mutation, chaos, chaos_profile),
            };
            return dispatch(&config, open, req, report, show).await;
        }
        Command::Ci {
            config,
            report,
            show,
            open,
        } => {
            let req = request(RunKind::Ci, false, None);
            return dispatch_importing(&config, open, req, report, show.show()).await;
        }
        Command::Replay { command } => return replay(command).await,
        Command::Init { force } => init(force),
        Command::Validate { config } => return validate(&config, false),
        Command::Migrate { file, output } => return migrate::migrate(&file, output.as_deref()),
        Command::Demo { print_config: true } => {
            print!("{}", crate::demo::DEMO_CONFIG);
            Ok(())
        }
        Command::Demo {
            print_config: false,
        } => crate::demo::run()
            .await
            .map(|text| print!("{text}"))
            .map_err(Into::into),
        Command::Ca { command } => ca(command),
        Command::Health(args) => return health::run(args).await,
        Command::Runs { command } => return history::run(command).await,
        Command::Report(args) => return report::run(args).await,
        Command::Certificate(args) => return certificate::run(args),
        Command::Doctor { config } => return doctor::run(&config).await,
        Command::SuperviseAgent { netns, command } => return supervise(&command, netns).await,
        Command::Wrap { tool, command } => return crate::wrap::run(tool, command).await,
    };
    result.map_or_else(failed, |()| ExitCode::SUCCESS)
}

/// The hidden `__supervise-agent` (src/agent/supervise.rs).
async fn supervise(command: &str, netns: Option<String>) -> ExitCode {
    crate::agent::supervise(command, netns.as_deref()).await
}

/// `contract validate`, `contract run`, `contract score`.
async fn contract(command: ContractCommand) -> ExitCode {
    match command {
        ContractCommand::Validate { config } => validate(&config, true),
        ContractCommand::Run {
            config,
            report,
            show,
            open,
        } => {
            let req = request(RunKind::Contract, false, None);
            dispatch(&config, open, req, report, show.show()).await
        }
        ContractCommand::Score {
            config,
            report,
            open,
        } => {
            let req = request(RunKind::Contract, false, None);
            dispatch(&config, open, req, report, runs::Show::SCORE_ONLY).await
        }
    }
}

/// `replay run` (session files, or a LangSmith trace with `--from`) and `replay export`.
async fn replay(command: ReplayCommand) -> ExitCode {
    match command {
        ReplayCommand::Run {
            sessions,
            from,
            config,
            report,
            show,
            open,
        } => {
            if from.given() {
                return langsmith::replay(from, &config, open, report, show.show()).await;
            }
            replay_run(sessions, &config, open, report, show.show()).await
        }
        ReplayCommand::Export {
            from_report,
            output,
        } => replay_export(&from_report, &output),
    }
}

/// `replay export`: 0 when every failed case was exported, 2 when one could not be (each
/// named) or the report could not be read.
fn replay_export(report: &std::path::Path, out: &std::path::Path) -> ExitCode {
    match crate::run::export::export(report, out) {
        Ok(done) => {
            for f in &done.sessions {
                println!("session: {}", f.display());
            }
            for why in &done.skipped {
                eprintln!("flakestorm: not exported: {why}");
            }
            if done.sessions.is_empty() && done.skipped.is_empty() {
                println!("no failed case in {}: nothing to export", report.display());
            }
            if done.skipped.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
        Err(e) => {
            eprintln!("flakestorm: {e}");
            ExitCode::from(2)
        }
    }
}

/// An error the command could not recover from: printed, exit 1.
fn failed(e: anyhow::Error) -> ExitCode {
    eprintln!("flakestorm: error: {e:#}");
    ExitCode::from(1)
}

/// A run command: on the daemon at `--server`, else here.
async fn dispatch(
    config: &ConfigArg,
    open: OpenProxyArg,
    req: RunRequest,
    report: ReportArgs,
    show: runs::Show,
) -> ExitCode {
    let Some(url) = report.server.clone() else {
        return job(config, open, |l| runs::run(l, req, report, show)).await;
    };
    if report.shard.is_some() {
        eprintln!(
            "flakestorm: --shard runs here, not on --server: run each shard beside its agent"
        );
        return ExitCode::from(2);
    }
    let loaded = match load(config, Overrides::default()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if matches!(req.kind, RunKind::Replay | RunKind::Ci) {
        langsmith::warn_remote(&loaded);
    }
    let server = remote::Server::new(&url, report.token.clone())
        .and_then(|s| s.token_file(report.token_file.as_deref()));
    let server = match server {
        Ok(s) => s.token_from(&loaded.config.data_dir),
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return ExitCode::from(2);
        }
    };
    remote::run(server, &loaded, &req, &report, show).await
}

/// `dispatch`, importing `replays.sources` first for a local run (`langsmith::sources`):
/// a source that cannot be imported stops the run, exit 2. A `--server` run does not
/// import them (said on stderr): the daemon's runs replay the config's sessions.
async fn dispatch_importing(
    config: &ConfigArg,
    open: OpenProxyArg,
    req: RunRequest,
    report: ReportArgs,
    show: runs::Show,
) -> ExitCode {
    if report.server.is_some() {
        return dispatch(config, open, req, report, show).await;
    }
    job(config, open, |loaded| async move {
        match langsmith::sources(loaded).await {
            Ok(loaded) => runs::run(loaded, req, report, show).await,
            Err(code) => Ok(code),
        }
    })
    .await
}

/// `replay run [FILE|DIR]`: the files given replace `replays.sessions`.
async fn replay_run(
    sessions: Option<PathBuf>,
    config: &ConfigArg,
    open: OpenProxyArg,
    report: ReportArgs,
    show: runs::Show,
) -> ExitCode {
    let req = request(RunKind::Replay, false, None);
    let Some(path) = sessions else {
        return dispatch_importing(config, open, req, report, show).await;
    };
    if report.server.is_some() {
        eprintln!(
            "flakestorm: session files on the command line cannot be sent to --server: list them \
             under replays.sessions in the config"
        );
        return ExitCode::from(2);
    }
    let files = match crate::run::session_files(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("flakestorm: {e}");
            return ExitCode::from(2);
        }
    };
    job(config, open, |mut loaded| {
        loaded.config.replays.sessions = files;
        runs::run(loaded, req, report, show)
    })
    .await
}

/// Loads the config and runs a run command on it: load errors exit 2 (printed by `load`),
/// the run decides its own code, and an error it could not recover from exits 1. SIGINT,
/// SIGTERM and SIGHUP stop the run, its agent with it, and exit 128 + the signal's number.
async fn job<F, Fut>(config: &ConfigArg, open: OpenProxyArg, run: F) -> ExitCode
where
    F: FnOnce(Loaded) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    let mut loaded = match load(config, Overrides::default()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    loaded.config.allow_open_proxy = open.allow_open_proxy;
    // Installed before the run starts anything: no signal meets its default action after.
    let signals = on_signals(&[StopSignal::Int, StopSignal::Term, StopSignal::Hup]);
    let stopped = async {
        match signals {
            Ok(signal) => signal.await,
            Err(e) => {
                // The supervisor still stops the agent when a signal ends flakestorm.
                eprintln!("flakestorm: warning: {e:#}");
                std::future::pending().await
            }
        }
    };
    // Dropping an interrupted run stops the agent it started, on the blocking pool, which
    // the runtime waits for before flakestorm exits.
    tokio::select! {
        // A signal that arrived wins over more of the run (whose output may go to a
        // terminal that hung up).
        biased;
        signal = stopped => {
            // Not `eprintln!`: stderr may be that terminal, and a failed write panics.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "flakestorm: interrupted ({}): the run was stopped, its agent with it, and no \
                 report was written",
                signal.name()
            );
            ExitCode::from(signal.exit_code())
        }
        result = run(loaded) => result.unwrap_or_else(failed),
    }
}

fn request(kind: RunKind, under_chaos: bool, profile: Option<String>) -> RunRequest {
    RunRequest {
        kind,
        under_chaos,
        profile,
    }
}
