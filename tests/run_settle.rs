//! How a case's settle ends and in which order cases reach the agent (issues #50 and #53),
//! as a user runs them: `flakestorm contract run` on the pool agent of tests/run_pool.rs.
//! The agent can end a settle early, with `flakestorm-settle: done` on its answer or by
//! answering `agent.settle_url` once its background work is over; what it says wrong is
//! warned of. At concurrency 1 the cases reach the agent in the config's order, run after
//! run.

mod common;

use common::pool::{POOLED, PROMPTS, config_env, origins, run, tool_of, url_quote};
use serde_json::Value;

/// The run's warnings.
fn warnings(r: &Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str().map(String::from))
        .collect()
}

/// A window of 20 s that one instance (no spare) would pay after each of the 16 cases: the
/// run ends well within one window only if the agent's word ended every settle.
const LONG: &str = "{concurrency: 1, seed: 7, settle_ms: 20000}";

/// `run` as it ends within one `LONG` window, else a failure then, not 16 windows later
/// (the time a settle the agent ended saves is measured in benches/run.rs).
async fn within_one_window<T>(run: impl std::future::Future<Output = T>) -> T {
    let window = std::time::Duration::from_secs(20);
    tokio::time::timeout(window, run)
        .await
        .expect("the run outlasted one 20 s window: the agent's word did not end its settles")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settle_header_ends_each_case_at_its_answer() {
    let o = origins().await;
    let agent = format!("{POOLED}\n  instances: 1");
    let env = ", EMAIL_DELAY: '-1', SETTLE_HEADER: 'done'";
    // Ignored, the header would leave 16 windows of 20 s to pay.
    let (code, out, r, _) = within_one_window(run(config_env(&o, &agent, LONG, env))).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(r["cases"].as_array().unwrap().len(), 16, "{out}");
    no_reuse_warning(&r);
}

/// Every settle ended because the agent said nothing more would come: an instance used
/// again at once met no late call, so the run does not warn of reuse, spare or no spare.
fn no_reuse_warning(r: &Value) {
    let warnings = r["warnings"].to_string();
    for never in ["no idle spare", "cases waited for an instance"] {
        assert!(!warnings.contains(never), "{never}: {warnings}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settle_url_ends_a_case_once_its_email_is_sent() {
    let o = origins().await;
    let agent =
        format!("{POOLED}\n  instances: 1\n  settle_url: 'http://127.0.0.1:{{port}}/settle'");
    let (code, out, r, _) = within_one_window(run(config_env(&o, &agent, LONG, ""))).await;
    assert_eq!(code, 1, "the emails fail `no-email`: {out}");
    // No spare instance, yet every email is its own case's: the settle lasted until the
    // agent said its email was sent.
    for c in r["cases"].as_array().unwrap() {
        let prompt = c["prompt"].as_str().unwrap();
        let emails: Vec<&str> = c["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| tool_of(e) == Some("email"))
            .map(|e| e["request"]["url"].as_str().unwrap())
            .collect();
        match prompt.contains("report") {
            true => assert_eq!(emails.len(), 1, "{prompt}: {emails:?}"),
            false => assert!(emails.is_empty(), "{prompt} is blamed for {emails:?}"),
        }
        for url in emails {
            assert!(
                url.ends_with(&format!("for={}", url_quote(prompt))),
                "{url}"
            );
        }
    }
    assert_eq!(
        o.email.log.len(),
        6,
        "three per scenario, the last case's included"
    );
    no_reuse_warning(&r);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_says_wrong_of_its_settle_is_warned_of() {
    let o = origins().await;
    let agent = format!("{POOLED}\n  settle_url: 'http://127.0.0.1:{{port}}/settle'");
    let env = ", EMAIL_DELAY: '-1', SETTLE_HEADER: 'later', SETTLE_STATUS: '404'";
    let (code, out, r, _) = run(config_env(&o, &agent, "{concurrency: 2, seed: 7}", env)).await;
    assert_eq!(code, 0, "{out}");
    let said = warnings(&r);
    assert!(
        said.iter()
            .any(|w| w.contains("`flakestorm-settle: later`; the one value is `done`")),
        "{said:#?}"
    );
    let url = said
        .iter()
        .find(|w| w.contains("agent.settle_url `http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("{said:#?}"));
    assert!(
        url.contains("answered HTTP 404") && url.contains("settle_ms instead"),
        "{url}"
    );
}

/// Issue #53: a stateful agent without `reset_endpoint` sees the same history each run:
/// at concurrency 1 the cases reach it in the config's order (scenario by scenario, each
/// in prompt order), in every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_concurrency_1_cases_reach_the_agent_in_the_configs_order() {
    let o = origins().await;
    let dir = tempfile::tempdir().unwrap();
    let expected: Vec<&str> = PROMPTS.iter().chain(PROMPTS.iter()).copied().collect();
    for n in 1..=2 {
        let log = dir.path().join(format!("order-{n}.log"));
        let env = format!(", EMAIL_DELAY: '-1', ORDER_LOG: '{}'", log.display());
        let (_, out, _, _) = run(config_env(&o, POOLED, "{concurrency: 1, seed: 7}", &env)).await;
        let seen = std::fs::read_to_string(&log).unwrap();
        let seen: Vec<&str> = seen.lines().collect();
        assert_eq!(seen, expected, "run {n}: {out}");
    }
}

/// A late call still in flight when the run ends (an email the mail server never answers,
/// sent after its case ended on an instance no later case took): its case is not judged,
/// as a case whose own settle ended with calls in flight, rather than judged on a part of
/// what its agent did (it would pass `no-email` without the email it is sending).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_call_still_in_flight_at_the_runs_end_leaves_its_case_not_judged() {
    let o = common::pool::Origins {
        search: common::origin::search_tool().await,
        email: common::origin::start(None, |_req| std::future::pending()).await,
    };
    // One instance per case, each case over at its answer, the email 0.3 s after it; each
    // case thinks 0.1 s, so a run of 16 outlasts the first scenario's emails' start.
    let agent = format!("{POOLED}\n  instances: 16");
    let env = ", SETTLE_HEADER: 'done', AGENT_DELAY: '0.1', EMAIL_TIMEOUT: '60'";
    let advanced = "{concurrency: 1, seed: 7, settle_ms: 100, settle_max_ms: 300}";
    let (_, out, r, _) = run(config_env(&o, &agent, advanced, env)).await;
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 16, "{out}");
    // The first scenario's report cases had many cases after them: their emails began and
    // hung before the run ended.
    for c in cases.iter().filter(|c| c["scenario"] == "no-chaos") {
        let prompt = c["prompt"].as_str().unwrap();
        let why = c["not_judged"].as_str().unwrap_or_default();
        match prompt.contains("report") {
            true => assert!(
                why.contains("1 of its calls were still in flight 300 ms")
                    && why.contains("its traffic is incomplete"),
                "{prompt}: {why:?}, after answer {}\n{out}",
                c["after_answer_ms"]
            ),
            false => assert!(why.is_empty(), "{prompt}: {why}"),
        }
    }
}

/// A fault fired on a late call (the email a report case sends after its case ended, on an
/// instance no later case took) is counted as fired in its scenario's coverage, as it is
/// in the case's faults: the rules' counters are read once the late calls are gathered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_on_a_late_call_counts_as_fired() {
    let o = origins().await;
    let agent = format!("{POOLED}\n  instances: 16");
    let env = ", SETTLE_HEADER: 'done', AGENT_DELAY: '0.1'";
    let yaml = config_env(&o, &agent, "{concurrency: 1, seed: 7}", env).replace(
        "{tool: search, mode: error, error_code: 503, probability: 0.5}",
        "{tool: email, mode: error, error_code: 503}",
    );
    let (_, out, r, _) = run(yaml).await;
    let faulted = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scenario"] == "flaky-search")
        .filter(|c| !c["faults"].as_array().unwrap().is_empty())
        .count();
    assert!(faulted >= 2, "the emails met their fault: {out}");
    let coverage = r["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == "flaky-search")
        .unwrap();
    let rule = &coverage["rules"][0];
    assert_eq!(
        rule["applied"].as_u64(),
        Some(faulted as u64),
        "{coverage:#}"
    );
    assert_eq!(rule["fired"], rule["applied"], "{coverage:#}");
}
