//! A run store of many runs, written by the store's own code (`Store::begin_run`,
//! `planned`, `finish_run`: what a run of the daemon or the CLI writes, without its cases),
//! for the web view's runs page under load (tests/web/test_web_views.py,
//! scripts/bench_web.py).
//!
//! `cargo run --example seed_runs -- DATA_DIR N` (the store is made if it is not there).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use flakestorm::run::RunKind;
use flakestorm::store::{NewRun, RunStatus, Store};

const KINDS: [RunKind; 5] = [
    RunKind::Contract,
    RunKind::Chaos,
    RunKind::Ci,
    RunKind::Mutation,
    RunKind::Replay,
];
const ENDS: [RunStatus; 4] = [
    RunStatus::Passed,
    RunStatus::Failed,
    RunStatus::NotTested,
    RunStatus::Cancelled,
];

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(Ok(n))) = (args.first(), args.get(1).map(|n| n.parse::<usize>())) else {
        eprintln!("usage: seed_runs DATA_DIR N");
        return ExitCode::from(2);
    };
    let store = match Store::open(&PathBuf::from(dir)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("seed_runs: {e}");
            return ExitCode::from(1);
        }
    };
    for i in 0..n {
        let kind = KINDS[i % KINDS.len()];
        let id = store.begin_run(NewRun {
            kind,
            config_digest: Some(format!("sha256:{i:064x}")),
            seed: Some(i as u64),
            status: RunStatus::Running,
        });
        store.planned(&id, 12);
        let status = ENDS[i % ENDS.len()];
        let scores = BTreeMap::from([("overall".to_string(), (i % 101) as f64)]);
        let reason = (status != RunStatus::Passed).then(|| format!("seeded run {i}"));
        store.finish_run(&id, status, scores, reason);
    }
    match store.flush().await {
        Ok(()) => {
            println!("seed_runs: {n} runs in {dir}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("seed_runs: {e}");
            ExitCode::from(1)
        }
    }
}
