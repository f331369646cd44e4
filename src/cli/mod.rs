//! Command-line commands. Output meant for people and scripts goes to stdout; logs go to
//! stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, Loaded, Overrides};
use crate::run::{RunKind, RunRequest};

mod baseline;
mod certificate;
mod commands;
mod health;
mod history;
mod langsmith;
mod progress;
mod remote;
mod report;
mod report_path;
mod runs;
mod session;

use commands::{StopSignal, ca, init, on_signals, profiles, serve};

/// Default config file looked for in the working directory when `-c` is not given.
const DEFAULT_CONFIG: &str = "flakestorm.yaml";

#[derive(Debug, Parser)]
#[command(
    name = "flakestorm",
    version,
    about = "Chaos-engineering proxy for AI agents"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How log lines on stderr are written: `text`, or `json` (one object per line, for
    /// log shippers).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "FLAKESTORM_LOG_FORMAT",
        value_name = "FORMAT"
    )]
    pub log_format: crate::telemetry::LogFormat,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxy and the control API until SIGINT/SIGTERM.
    Serve {
        #[command(flatten)]
        config: ConfigArg,
        /// Proxy listen address (overrides proxy.listen).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Control API listen address (overrides control.listen).
        #[arg(long, value_name = "ADDR")]
        control_listen: Option<String>,
        /// Start with a built-in chaos profile instead of the config's `chaos:` rules.
        #[arg(long, value_name = "NAME")]
        chaos_profile: Option<String>,
        /// Also write the proxied traffic as a HAR tape in DIR (docs/replay.md).
        #[arg(long, value_name = "DIR")]
        record: Option<PathBuf>,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Run the proxy without chaos and write a working agent's live traffic as a HAR tape
    /// in DIR, until SIGINT/SIGTERM (docs/replay.md).
    Record {
        #[command(flatten)]
        config: ConfigArg,
        /// The folder the tape is written to.
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: PathBuf,
        /// Proxy listen address (overrides proxy.listen).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Control API listen address (overrides control.listen).
        #[arg(long, value_name = "ADDR")]
        control_listen: Option<String>,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Mutations of the golden prompts against the agent, checked with `invariants:`
    /// (`--chaos`: under the configured chaos or a profile); `--chaos-only` runs the prompts
    /// themselves under chaos.
    Run {
        #[command(flatten)]
        config: ConfigArg,
        /// Only the chaos run (no mutations).
        #[arg(long)]
        chaos_only: bool,
        /// Mutations under the `chaos:` rules (or `--chaos-profile`).
        #[arg(long)]
        chaos: bool,
        /// A built-in profile instead of the config's `chaos:` section.
        #[arg(long, value_name = "NAME")]
        chaos_profile: Option<String>,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        show: ShowArgs,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Every phase this build can run (mutation, contract, chaos, replay), once each, one
    /// weighted score.
    Ci {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        show: ShowArgs,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Write a commented starter flakestorm.yaml in the current folder.
    Init {
        /// Replace an existing flakestorm.yaml.
        #[arg(long)]
        force: bool,
    },
    /// Contract runs: invariants × chaos scenarios, scored.
    Contract {
        #[command(subcommand)]
        command: ContractCommand,
    },
    /// Replay recorded incidents: the proxy answers the agent's tool calls from each
    /// session (docs/replay.md).
    Replay {
        #[command(subcommand)]
        command: ReplayCommand,
    },
    /// List or show the built-in chaos profiles.
    Profiles {
        #[command(subcommand)]
        command: ProfilesCommand,
    },
    /// Manage the CA that signs intercepted connections.
    Ca {
        #[command(subcommand)]
        command: CaCommand,
    },
    /// Run the embedded demo offline: mock tool + LLM, an agent calling them through the proxy.
    Demo {
        /// Print the demo's flakestorm.yaml (its agent, tools, faults and contract) and exit.
        #[arg(long)]
        print_config: bool,
    },
    /// Ask a daemon whether it is alive (`/healthz`) or ready (`--ready`: `/readyz`); exit 0
    /// when it is, 1 when not (container health checks; no curl needed).
    Health(health::HealthArgs),
    /// Check a config file and list every problem in it.
    Validate {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Issue a signed resilience certificate for a saved report, or `verify` one
    /// (docs/reports.md).
    Certificate(certificate::CertificateArgs),
    /// Render a saved report (a JSON report or a stored run's id) as HTML, JUnit XML or
    /// Markdown (docs/reports.md).
    Report(report::ReportArgs),
    /// The run history: list, show and compare stored runs (docs/runs.md).
    Runs {
        #[command(subcommand)]
        command: history::RunsCommand,
    },
    /// Internal, started by flakestorm itself: runs `agent.command` in a process group it
    /// stops when its stdin (a socket from its flakestorm) closes (src/agent/supervise.rs).
    #[command(name = "__supervise-agent", hide = true)]
    SuperviseAgent {
        /// The command, run with `sh -c`.
        #[arg(last = true)]
        command: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Run the contract matrix against the agent and write the JSON report.
    Run {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        show: ShowArgs,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Run the contract and print only its score (0–100): a CI gate. Exit codes as `run`.
    Score {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Check the config (contract included) and list every problem.
    Validate {
        #[command(flatten)]
        config: ConfigArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    /// Replay each session and judge it with its contract; writes the JSON report.
    Run {
        /// A session file, or a folder of them (.yaml, .yml, .json), instead of the config's
        /// `replays.sessions`.
        #[arg(value_name = "FILE|DIR")]
        sessions: Option<PathBuf>,
        #[command(flatten)]
        from: Box<langsmith::FromLangsmith>,
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        show: ShowArgs,
        #[command(flatten)]
        open: OpenProxyArg,
    },
    /// Turn each failed case of a saved report into a session file plus its tape
    /// (written by `output.tapes`), ready to commit as a regression test.
    Export {
        /// The JSON report of a run (its `<name>.tapes/` folder beside it).
        #[arg(long, value_name = "REPORT.json")]
        from_report: PathBuf,
        /// The folder the sessions and tapes are written to.
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// Names and descriptions.
    List,
    /// A profile's rules, as YAML you can paste under `chaos:`.
    Show { name: String },
}

#[derive(Debug, Subcommand)]
pub enum CaCommand {
    /// Create the CA (certificate + private key, mode 0600) in ca.dir.
    Init {
        #[command(flatten)]
        config: ConfigArg,
        /// Replace an existing CA (clients must then trust the new one).
        #[arg(long)]
        force: bool,
    },
    /// Print the CA certificate (PEM), for SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, ….
    Export {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Print the path of the CA certificate.
    Path {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Write the system's root certificates plus the CA as one PEM bundle: what
    /// SSL_CERT_FILE and REQUESTS_CA_BUNDLE must name so passthrough hosts keep working.
    Bundle {
        #[command(flatten)]
        config: ConfigArg,
        /// The bundle file to write.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: PathBuf,
        /// The CA certificate (default: ca.cert_file, or ca.pem in ca.dir); no key needed.
        #[arg(long, value_name = "FILE")]
        cert: Option<PathBuf>,
        /// The system root bundle (default: the first of /etc/ssl/certs/ca-certificates.crt
        /// and the other distributions' usual paths that exists).
        #[arg(long, value_name = "FILE")]
        system_roots: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Print only the verdict line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the JSON report on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
}

impl ShowArgs {
    fn show(&self) -> runs::Show {
        runs::Show {
            quiet: self.quiet,
            json: self.json,
            score_only: false,
        }
    }
}

/// Where a run's report goes and the score it must reach.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report file (default: output.path/<contract|chaos|ci>.json).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// The pass mark (0–100): below it the run fails (default: scoring.min_score, 70).
    #[arg(long, value_name = "SCORE", value_parser = score_arg)]
    pub min_score: Option<f64>,
    /// Run on the daemon at URL (a `flakestorm serve`'s control address, e.g.
    /// http://127.0.0.1:8081) instead of here; progress and exit codes are the same.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Fail when a score drops more than --max-drop below this run's: `last-pass` (the
    /// newest passing run of the same kind) or a run id.
    #[arg(long, value_name = "last-pass|ID")]
    pub baseline: Option<String>,
    /// Points a score may drop below the baseline's (default 0).
    #[arg(long, value_name = "X", value_parser = score_arg, requires = "baseline")]
    pub max_drop: Option<f64>,
    /// The daemon's control.token (for --server).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "FLAKESTORM_API_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

/// For commands that start a proxy.
#[derive(Debug, Args)]
pub struct OpenProxyArg {
    /// Start even though proxy.listen is not loopback and proxy.users is empty (an open
    /// proxy: every client that can reach it may use it). See docs/security.md.
    #[arg(long)]
    pub allow_open_proxy: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArg {
    /// Config file (default: ./flakestorm.yaml if present, else built-in defaults).
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// CA folder (overrides ca.dir).
    #[arg(long, value_name = "DIR", global = true)]
    pub ca_dir: Option<PathBuf>,
}

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
            let mut loaded = match load_daemon(&config, listen, control_listen, &open) {
                Ok(loaded) => loaded,
                Err(code) => return code,
            };
            if let Some(name) = chaos_profile {
                match crate::chaos::profiles::load(&name) {
                    Ok(spec) => {
                        let mark = loaded.config.chaos.mark_responses;
                        loaded.config.chaos = spec.with_mark_responses(mark);
                    }
                    Err(e) => {
                        eprintln!("flakestorm: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            serve(loaded, record).await
        }
        Command::Record {
            config,
            output,
            listen,
            control_listen,
            open,
        } => {
            let mut loaded = match load_daemon(&config, listen, control_listen, &open) {
                Ok(loaded) => loaded,
                Err(code) => return code,
            };
            // A recording is of the agent's real traffic: no configured fault fires.
            let mark = loaded.config.chaos.mark_responses;
            loaded.config.chaos =
                crate::config::chaos::CompiledChaos::default().with_mark_responses(mark);
            serve(loaded, Some(output)).await
        }
        Command::Profiles { command } => return profiles(command),
        Command::Contract {
            command: ContractCommand::Validate { config },
        } => return validate(&config, true),
        Command::Contract {
            command:
                ContractCommand::Run {
                    config,
                    report,
                    show,
                    open,
                },
        } => {
            let req = request(RunKind::Contract, false, None);
            return dispatch(&config, open, req, report, show.show()).await;
        }
        Command::Contract {
            command:
                ContractCommand::Score {
                    config,
                    report,
                    open,
                },
        } => {
            let show = runs::Show {
                quiet: true,
                json: false,
                score_only: true,
            };
            let req = request(RunKind::Contract, false, None);
            return dispatch(&config, open, req, report, show).await;
        }
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
        Command::Replay {
            command:
                ReplayCommand::Run {
                    sessions,
                    from,
                    config,
                    report,
                    show,
                    open,
                },
        } => {
            if from.given() {
                return langsmith::replay(from, &config, open, report, show.show()).await;
            }
            return replay_run(sessions, &config, open, report, show.show()).await;
        }
        Command::Replay {
            command:
                ReplayCommand::Export {
                    from_report,
                    output,
                },
        } => return replay_export(&from_report, &output),
        Command::Init { force } => init(force),
        Command::Validate { config } => return validate(&config, false),
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
        Command::Runs { command } => return history::run(command),
        Command::Report(args) => return report::run(args),
        Command::Certificate(args) => return certificate::run(args),
        Command::SuperviseAgent { command } => return crate::agent::supervise(&command).await,
    };
    result.map_or_else(failed, |()| ExitCode::SUCCESS)
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

/// `--min-score`: a number from 0 to 100.
fn score_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a score from 0 to 100")),
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
    let loaded = match load(config, Overrides::default()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if matches!(req.kind, RunKind::Replay | RunKind::Ci) {
        langsmith::warn_remote(&loaded);
    }
    let server = match remote::Server::new(&url, report.token.clone()) {
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
    // Dropping an interrupted run stops the agent it started, and waits until it is gone.
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

/// Loads the config, printing warnings; errors are printed and become exit code 2.
fn load(arg: &ConfigArg, mut overrides: Overrides) -> Result<Loaded, ExitCode> {
    overrides.ca_dir = overrides.ca_dir.or_else(|| arg.ca_dir.clone());
    let file = arg.config.clone().or_else(|| {
        Path::new(DEFAULT_CONFIG)
            .exists()
            .then(|| DEFAULT_CONFIG.into())
    });
    match config::load(file.as_deref(), &overrides) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprintln!("flakestorm: warning: {w}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprint!("flakestorm: {errors}");
            Err(ExitCode::from(2))
        }
    }
}

/// `load` for a command that runs the daemon (`serve`, `record`): its listen addresses
/// and whether it may listen off loopback.
fn load_daemon(
    arg: &ConfigArg,
    proxy_listen: Option<String>,
    control_listen: Option<String>,
    open: &OpenProxyArg,
) -> Result<Loaded, ExitCode> {
    let overrides = Overrides {
        proxy_listen,
        control_listen,
        ca_dir: arg.ca_dir.clone(),
    };
    let mut loaded = load(arg, overrides)?;
    loaded.config.allow_open_proxy = open.allow_open_proxy;
    Ok(loaded)
}

/// `contract`: the file must also have a `contract:` section (`contract validate`).
fn validate(arg: &ConfigArg, contract: bool) -> ExitCode {
    match load(arg, Overrides::default()) {
        Ok(loaded) if contract && loaded.config.contract.is_none() => {
            eprintln!("flakestorm: no `contract:` section to validate");
            ExitCode::from(2)
        }
        Ok(loaded) => {
            // Valid YAML that `serve` would still refuse: said now, not at start-up.
            if let Err(e) = crate::daemon::open_proxy_rule(&loaded.config) {
                eprintln!("flakestorm: warning: serve and runs will refuse this config: {e}");
            }
            let name = loaded
                .file
                .map_or_else(|| "built-in defaults".into(), |f| f.display().to_string());
            println!("{name}: ok");
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn request(kind: RunKind, under_chaos: bool, profile: Option<String>) -> RunRequest {
    RunRequest {
        kind,
        under_chaos,
        profile,
    }
}
