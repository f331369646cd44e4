//! The `flakestorm` binary: parse the command line, set up logging, run the command.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

// jemalloc with its background purging threads: a daemon that served a burst of
// connections gives the freed memory back to the system while idle, where glibc's malloc
// keeps it (docs/benchmarks.md, "Memory after load").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = flakestorm::cli::Cli::parse();
    flakestorm::telemetry::init_tracing("flakestorm=info,warn", cli.log_format);
    flakestorm::cli::run(cli).await
}
