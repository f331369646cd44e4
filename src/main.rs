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

fn main() -> ExitCode {
    let cli = flakestorm::cli::Cli::parse();
    flakestorm::telemetry::init_tracing("flakestorm=info,warn", cli.log_format);
    match runtime() {
        Ok(runtime) => runtime.block_on(flakestorm::cli::run(cli)),
        Err(e) => {
            eprintln!("flakestorm: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A scheduler thread for each CPU the process may use (its affinity and cgroup quota, or
/// `TOKIO_WORKER_THREADS`). Given one CPU, as a sidecar with a CPU limit of 1 is, the
/// current-thread scheduler: the same single thread, without the work-stealing scheduler's
/// cross-thread wake-ups and per-batch bookkeeping on every request
/// (docs/benchmarks.md, "One CPU, one thread").
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let workers = std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1);
    let mut builder = match workers {
        1 => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder.enable_all().build()?;
    match runtime.handle().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => {
            tracing::debug!("scheduler: current-thread, for one CPU");
        }
        _ => tracing::debug!("scheduler: {workers} worker threads"),
    }
    Ok(runtime)
}
