//! The `flakestorm` binary: parse the command line, set up logging, run the command.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = flakestorm::cli::Cli::parse();
    flakestorm::telemetry::init_tracing("flakestorm=info,warn");
    flakestorm::cli::run(cli).await
}
