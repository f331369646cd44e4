//! The command line as clap reads it: `Cli`, its commands and subcommands, and the
//! argument groups several commands share (config, report, open proxy, show).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::{certificate, health, history, langsmith, report, runs};

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
    /// Bring a Flakestorm v2 config to the current form (docs/v2.md): unused v2 fields
    /// commented out, proxy-era fields added as comments to fill in; prints what changed.
    Migrate {
        /// The v2 file.
        file: std::path::PathBuf,
        /// Where to write the result (never over an existing file); standard output if not set.
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
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
    /// Put a stdio MCP server through the run's proxy: written in the agent's MCP client
    /// config in place of the server's command (docs/mcp.md, "stdio servers").
    Wrap {
        /// The tool's name in the config (`tools: [{name: NAME, protocol: mcp,
        /// transport: stdio}]`); the server command's file name if not given.
        #[arg(long)]
        tool: Option<String>,
        /// The server's command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Whether `agent.capture: netns` works on this machine, and which calls of the
    /// configured agent would bypass the proxy in `proxy` mode (docs/capture.md).
    Doctor {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Internal, started by flakestorm itself: runs `agent.command` in a process group it
    /// stops when its stdin (a socket from its flakestorm) closes (src/agent/supervise.rs).
    #[command(name = "__supervise-agent", hide = true)]
    SuperviseAgent {
        /// Set up the network namespace it was started in (`agent.capture: netns`) and run
        /// the command as this user: `root` or `UID:GID` (src/capture/namespace.rs).
        #[arg(long)]
        netns: Option<String>,
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

// Parsed once per process: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
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
    pub(super) fn show(&self) -> runs::Show {
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
    /// Run each case N times, each trial with its own seeded chaos (advanced.trials,
    /// 1..=100; docs/trials.md).
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// Run only trial I (1..=trials) of each case: re-run one trial of a flaky case.
    #[arg(long, value_name = "I")]
    pub trial: Option<u32>,
    /// Run only shard K of N of the cases (any run command; not mutations a model
    /// writes), or
    /// `auto/N` in a Kubernetes Indexed Job (K = JOB_COMPLETION_INDEX + 1); merge with
    /// `report merge` (docs/scale.md).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Points a score may drop below the baseline's (default 0).
    #[arg(long, value_name = "X", value_parser = score_arg, requires = "baseline")]
    pub max_drop: Option<f64>,
    /// The daemon's control.token (for --server; `ps` shows it: prefer --token-file).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "FLAKESTORM_API_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// A file holding the daemon's control.token (for --server).
    #[arg(
        long,
        value_name = "PATH",
        env = "FLAKESTORM_API_TOKEN_FILE",
        conflicts_with = "token"
    )]
    pub token_file: Option<std::path::PathBuf>,
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

/// `--min-score`: a number from 0 to 100.
fn score_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a score from 0 to 100")),
    }
}
