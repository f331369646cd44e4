//! How big an agent pool is, as a user sees it (issue #50): the run's header line says
//! what it holds (`pool: 2 running + 2 settling`), it starts no more instances than the
//! run has cases, it grows while cases wait for an instance, and an instance whose port
//! another process took as it started starts again on another port, saying so.

mod common;

use std::collections::BTreeSet;

use common::cli::{flakestorm, write_config};
use common::pool::{Origins, POOLED, config, config_env, origins, run};
use serde_json::Value;

/// The instances the report's cases ran on.
fn instances(r: &Value) -> BTreeSet<u64> {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["instance"].as_u64())
        .collect()
}

/// The report's warnings.
fn warnings(r: &Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect()
}

/// The header line as the run printed it: 16 cases (8 prompts, 2 scenarios), the default
/// window. At concurrency 2, four times as many instances as run at once, growing up to one per
/// case; at concurrency 10, never more instances than cases (16, not 20), all started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_line_says_the_pool_the_run_holds() {
    let o = origins().await;
    let said = [
        (
            2,
            "flakestorm: pool: 2 running + 6 settling (8 agent instances started; up to 16 \
             if cases wait for one",
        ),
        (
            10,
            "flakestorm: pool: 10 running + 6 settling (16 agent instances, all started; \
             agent.instances sets how many)",
        ),
    ];
    for (concurrency, line) in said {
        let advanced = format!("{{concurrency: {concurrency}, seed: 7}}");
        let (_, out, r, _) = run(config(&o, POOLED, &advanced)).await;
        assert!(out.contains(line), "concurrency {concurrency}: {out}");
        assert_eq!(r["cases"].as_array().unwrap().len(), 16, "{out}");
        assert!(instances(&r).iter().all(|&i| i <= 16), "{out}");
    }
    // A pool of exactly `agent.instances`, with no spare: said as such.
    let agent = format!("{POOLED}\n  instances: 2");
    let (_, out, _, _) = run(config(&o, &agent, "{concurrency: 2, seed: 7}")).await;
    assert!(
        out.contains("flakestorm: pool: 2 running + 0 settling: no spare instance"),
        "{out}"
    );
}

/// Cases of 0.1 s at concurrency 1 with a 500 ms window: the four instances the pool starts
/// with are soon all settling, a case waits, and the pool grows toward what the measured
/// case time asks for (eleven at most: `(0.1 + 2 × 0.5) / 0.1`), each new instance taking
/// cases once ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_whose_cases_wait_grows_while_the_run_goes() {
    let o = origins().await;
    let advanced = "{concurrency: 1, seed: 7}";
    let (_, out, r, _) = run(config_env(&o, POOLED, advanced, ", AGENT_DELAY: '0.1'")).await;
    assert!(
        out.contains("pool: 1 running + 3 settling (4 agent instances started; up to 16"),
        "{out}"
    );
    let used = instances(&r);
    assert!(
        used.iter().any(|&i| i > 4) && used.iter().all(|&i| i <= 11),
        "cases ran on instances started as the run went, at most the eleven wanted: {used:?}\n{out}"
    );
    let said = warnings(&r);
    assert!(
        !said.iter().any(|w| w.contains("never became ready")),
        "{said:#?}"
    );
    assert!(
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["not_judged"].is_null()),
        "{out}"
    );
}

/// Another process takes instance's port between flakestorm choosing it and the agent
/// binding it (a real thief, in a session of its own, listening there): the agent fails
/// with "address in use", and the instance starts again on another port, saying which was
/// taken. The run goes on with both instances; the thief keeps its port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_whose_port_is_stolen_starts_again_on_another() {
    let o: Origins = origins().await;
    let thief =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent/port_thief.py");
    // The first instance to claim the folder has its port stolen before its agent binds.
    let agent = format!(
        "  endpoint: 'http://127.0.0.1:{{port}}/invoke'\n  command: 'mkdir stolen 2>/dev/null \
         && python3 {} {{port}} thief.pid; exec python3 AGENT {{port}}'\n  ready_url: \
         'http://127.0.0.1:{{port}}/health'\n  instances: 2",
        thief.display()
    );
    let yaml = config(&o, &agent, "{concurrency: 2, seed: 7}");
    let (out, r, thief_pid) = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &yaml);
        let (_, out, err) = flakestorm(&["contract", "run"], dir.path());
        let json = std::fs::read_to_string(dir.path().join("reports/contract.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
        let pid = std::fs::read_to_string(dir.path().join("thief.pid"))
            .unwrap_or_else(|e| panic!("the thief never ran ({e}): {out}\n{err}"));
        let r: Value = serde_json::from_str(&json).unwrap();
        (format!("{out}\n{err}"), r, pid)
    })
    .await
    .unwrap();
    let said = warnings(&r);
    let moved = said
        .iter()
        .find(|w| w.contains("was taken by another process as it started (address in use)"))
        .unwrap_or_else(|| panic!("{said:#?}\n{out}"));
    let stolen: u16 = moved
        .split("port ")
        .nth(1)
        .and_then(|p| p.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{moved}"));
    assert!(moved.contains("so it started again on port"), "{moved}");
    let held = std::net::TcpListener::bind(("127.0.0.1", stolen)).is_err();
    let _ = std::process::Command::new("kill")
        .arg(thief_pid.trim())
        .status();
    assert!(held, "the thief held port {stolen} to the end");
    assert!(
        !said.iter().any(|w| w.contains("never became ready")),
        "{said:#?}"
    );
    assert_eq!(instances(&r), BTreeSet::from([1, 2]), "{out}");
    assert!(
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["not_judged"].is_null()),
        "{out}"
    );
}
