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
            eprintln!("flakestorm: {e}");
            ExitCode::from(2)
        }
    }
}

/// A scheduler thread for each CPU the process may use (its affinity and cgroup quota, or
/// `TOKIO_WORKER_THREADS`). Given one CPU, as a sidecar with a CPU limit below 2 is, the
/// current-thread scheduler: the same single thread, without the multi-thread scheduler's
/// clock reads and statistics on every batch of tasks (docs/benchmarks.md, "Sidecar cost,
/// second pass").
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    const VAR: &str = "TOKIO_WORKER_THREADS";
    // Read here, not by tokio, which panics on a bad value.
    let workers = match std::env::var_os(VAR) {
        None => std::thread::available_parallelism().map_or(1, usize::from),
        Some(n) => {
            let w = n.to_str().and_then(|t| t.trim().parse::<usize>().ok());
            match w.filter(|&w| w > 0) {
                Some(w) => w,
                None => {
                    let n = n.to_string_lossy();
                    return Err(format!(
                        "{VAR} must be a number of threads above 0, not `{n}`"
                    ));
                }
            }
        }
    };
    let mut builder = match workers {
        1 => {
            tracing::debug!("scheduler: current-thread, for one CPU");
            tokio::runtime::Builder::new_current_thread()
        }
        n => {
            tracing::debug!("scheduler: {n} worker threads");
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}
