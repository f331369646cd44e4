//! The agent pool and cases that settle (design.md §6), as a user runs them: `flakestorm
//! contract run` starts `agent.command` with `{port}` once per instance, each behind a proxy
//! listener of its own, and the agent sends no `traceparent`. Every exchange is its case's,
//! including an email the agent sends from a background task after answering; the same seed
//! gives the same faults on the same cases whatever the concurrency, pool size or mode.

mod common;

use std::collections::BTreeMap;

use common::cli::agent_port;
use common::pool::{
    LATE, Origins, POOLED, PROMPTS, config, config_env, origins, run, tool_of, url_quote,
};
use serde_json::Value;

/// Per case (scenario, prompt): the faults it met and whether it was judged.
fn per_case(report: &Value) -> BTreeMap<(String, String), (Vec<String>, bool)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let faults = c["faults"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| format!("{}:{}", f["rule"], f["applied"]))
                .collect();
            let key = (
                c["scenario"].as_str().unwrap().to_string(),
                c["prompt"].as_str().unwrap().to_string(),
            );
            (key, (faults, c["not_judged"].is_null()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_email_belongs_to_the_case_that_sent_it() {
    let o = origins().await;
    for concurrency in [1, 4] {
        let advanced = format!("{{concurrency: {concurrency}, seed: 7}}");
        background_emails(&o, &advanced, concurrency).await;
    }
    assert_eq!(
        o.email.log.len(),
        12,
        "three emails per scenario, the last case's included, in each run"
    );
}

/// One run of `a_background_email_belongs_to_the_case_that_sent_it`.
async fn background_emails(o: &Origins, advanced: &str, concurrency: u64) {
    let (code, out, r, html) = run(config(o, POOLED, advanced)).await;
    assert_eq!(code, 1, "the emails fail `no-email`: {out}");
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2 * PROMPTS.len(), "{out}");
    let mut instances = std::collections::BTreeSet::new();
    for c in cases {
        let prompt = c["prompt"].as_str().unwrap();
        instances.insert(
            c["instance"]
                .as_u64()
                .expect("every case names its instance"),
        );
        let traffic = c["exchanges"]
            .as_array()
            .expect("every case has its exchanges");
        let emails: Vec<&Value> = traffic
            .iter()
            .filter(|e| tool_of(e) == Some("email"))
            .collect();
        let quoted: String = url_quote(prompt);
        if prompt.contains("report") {
            assert_eq!(emails.len(), 1, "{prompt}: {traffic:#?}");
            let url = emails[0]["request"]["url"].as_str().unwrap();
            assert!(
                url.ends_with(&format!("for={quoted}")),
                "{prompt} got {url}"
            );
            let after: Vec<u64> = serde_json::from_value(c["after_answer"].clone()).unwrap();
            assert_eq!(after, vec![emails[0]["id"].as_u64().unwrap()], "{prompt}");
        } else {
            assert!(emails.is_empty(), "{prompt} is blamed for {emails:#?}");
        }
        let searches = traffic
            .iter()
            .filter(|e| tool_of(e) == Some("search"))
            .count();
        assert_eq!(searches, 1, "{prompt}: its own search only");
    }
    // `concurrency` running and spares to settle on (never more instances than cases):
    // the cases spread over more instances than run at once.
    assert!(
        instances.len() as u64 > concurrency
            && instances
                .iter()
                .all(|&i| i >= 1 && i as usize <= cases.len()),
        "{instances:?}"
    );
    let outside: u64 = r["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["outside_cases"].as_u64().unwrap())
        .sum();
    assert_eq!(outside, 0, "{:#}", r["coverage"]);
    assert!(!html.contains("no timeline"), "every case has a timeline");
    assert!(html.contains("began after it answered"));
}

/// A journal whose byte budget holds a single exchange: the run still keeps every exchange
/// of every case until it ends (the budget is for an idle sidecar, never a run's loss).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_keeps_its_exchanges_past_the_journal_byte_budget() {
    let o = origins().await;
    let yaml = config(&o, POOLED, "{concurrency: 4, seed: 7}") + "journal: {max_bytes: 1}\n";
    let (code, out, r, _) = run(yaml).await;
    assert_eq!(code, 1, "the emails fail `no-email`: {out}");
    for c in r["cases"].as_array().unwrap() {
        let prompt = c["prompt"].as_str().unwrap();
        let traffic = c["exchanges"].as_array().unwrap();
        let count = |tool| traffic.iter().filter(|e| tool_of(e) == Some(tool)).count();
        assert_eq!(count("search"), 1, "{prompt}: {traffic:#?}");
        assert_eq!(
            count("email"),
            usize::from(prompt.contains("report")),
            "{prompt}"
        );
    }
    assert_eq!(o.email.log.len(), 6);
}

/// The same seed, run at concurrency 1, 4 (twice) and 10 with a pool, and with one agent
/// process under exclusive attribution: the same faults on the same cases every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_faults_on_the_same_cases() {
    let o = origins().await;
    // Emails are not what this is about: they go out at once.
    let mut runs = vec![];
    for concurrency in [1, 4, 10, 4] {
        let advanced = format!("{{concurrency: {concurrency}, seed: 7}}");
        runs.push((
            format!("pool of {concurrency}"),
            config(&o, POOLED, &advanced),
        ));
    }
    let port = agent_port();
    let single = format!(
        "  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'exec python3 AGENT {port}'\n  ready_url: 'http://127.0.0.1:{port}/health'"
    );
    runs.push((
        "one process, exclusive".into(),
        config(&o, &single, "{concurrency: 10, seed: 7}"),
    ));
    let mut first: Option<(String, BTreeMap<_, _>)> = None;
    for (name, yaml) in runs {
        let (_, out, r, html) = run(yaml).await;
        let cases = per_case(&r);
        let fired = cases.values().filter(|(f, _)| !f.is_empty()).count();
        assert!(
            (1..PROMPTS.len()).contains(&fired),
            "{name}: {fired} faults: {out}"
        );
        assert!(cases.values().all(|(_, judged)| *judged), "{name}: {out}");
        assert!(
            !html.contains("no timeline"),
            "{name}: every case has a timeline"
        );
        match &first {
            None => first = Some((name, cases)),
            Some((n, c)) => assert_eq!(&cases, c, "{name} differs from {n}"),
        }
    }
}

/// An instance that exits during a case: that case is not judged, with the exit status as
/// the reason; the instance restarts and the cases after it run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_exits_is_restarted_and_its_case_not_judged() {
    let o = origins().await;
    let yaml = config(&o, POOLED, "{concurrency: 1, seed: 7}").replace(
        "golden_prompts: [",
        "golden_prompts: [\"crash after this\", ",
    );
    let (_, out, r, _) = run(yaml).await;
    let cases = r["cases"].as_array().unwrap();
    let crashed: Vec<&Value> = cases
        .iter()
        .filter(|c| c["prompt"] == "crash after this")
        .collect();
    assert_eq!(crashed.len(), 2, "{out}");
    for c in crashed {
        let why = c["not_judged"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("agent instance ")
                && why.contains("exited (exit status: 3) during this case"),
            "{why}"
        );
    }
    let answered = cases
        .iter()
        .filter(|c| c["prompt"] != "crash after this" && c["answer"].is_string())
        .count();
    assert_eq!(
        answered,
        2 * PROMPTS.len(),
        "the restarted instance ran the rest: {out}"
    );
}

/// An agent that serves one case per process (it exits cleanly after each answer) and
/// calls its search tool as it starts: each restart's start-up call is in no case, not in
/// the case the instance ran before (whose tail the lane still served) nor the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_instances_start_up_calls_are_in_no_case() {
    let o = origins().await;
    let agent = format!("{POOLED}\n  instances: 2");
    let env = ", EMAIL_DELAY: '-1', ONE_CASE: '1', STARTUP_CALL: '1'";
    let (code, out, r, _) = run(config_env(&o, &agent, "{concurrency: 1, seed: 7}", env)).await;
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2 * PROMPTS.len(), "{out}");
    for c in cases {
        let prompt = c["prompt"].as_str().unwrap();
        assert!(c["not_judged"].is_null(), "{prompt}: {}", c["not_judged"]);
        let searches: Vec<&str> = c["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| tool_of(e) == Some("search"))
            .map(|e| e["request"]["url"].as_str().unwrap())
            .collect();
        assert_eq!(
            searches.len(),
            1,
            "{prompt}: its own search only: {searches:?}"
        );
        assert!(!searches[0].contains("q=startup"), "{prompt}: {searches:?}");
    }
    let startups = o
        .search
        .log
        .all()
        .iter()
        .filter(|s| s.uri.contains("q=startup"))
        .count();
    assert!(
        startups > 2,
        "the instances restarted, calling at each start ({startups}; code {code}): {out}"
    );
}

/// An instance that never becomes ready is left out, saying which and why (its log's
/// tail); the run goes on with the others and judges nothing on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_never_starts_is_left_out_saying_why() {
    let o = origins().await;
    // Only the first instance to claim the folder starts; the other fails at once.
    let agent = "  endpoint: 'http://127.0.0.1:{port}/invoke'\n  command: 'mkdir claimed 2>/dev/null && exec python3 AGENT {port}; echo no GPU left for this one >&2; exit 4'\n  ready_url: 'http://127.0.0.1:{port}/health'\n  instances: 2";
    let (_, out, r, _) = run(config(&o, agent, "{concurrency: 2, seed: 7}")).await;
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let left_out = warnings
        .iter()
        .find(|w| w.contains("never became ready, so no case ran on it"))
        .unwrap_or_else(|| panic!("{warnings:#?}\n{out}"));
    assert!(
        left_out.contains("no GPU left for this one"),
        "its log's tail: {left_out}"
    );
    let cases = r["cases"].as_array().unwrap();
    let instances: std::collections::BTreeSet<u64> = cases
        .iter()
        .filter_map(|c| c["instance"].as_u64())
        .collect();
    assert_eq!(instances.len(), 1, "every case ran on the one that started");
    assert!(cases.iter().all(|c| c["not_judged"].is_null()), "{out}");
}

/// Each email with its case: no case has an email but its own, and a prompt that asks for
/// a report has its own, after its answer (by at least its 0.8 s). The run ends one window
/// after its last answer, so the emails of its last cases (`missing_at_most`) go out after
/// it ended: they are in no case, never in a wrong one.
fn emails_in_their_own_cases(r: &Value, out: &str, missing_at_most: usize) {
    let mut missing = 0;
    for c in r["cases"].as_array().unwrap() {
        let prompt = c["prompt"].as_str().unwrap();
        let traffic = c["exchanges"].as_array().unwrap();
        let emails: Vec<&Value> = traffic
            .iter()
            .filter(|e| tool_of(e) == Some("email"))
            .collect();
        if !prompt.contains("report") {
            assert!(
                emails.is_empty(),
                "{prompt} is blamed for {emails:#?}\n{out}"
            );
            continue;
        }
        if emails.is_empty() {
            missing += 1;
            continue;
        }
        assert_eq!(emails.len(), 1, "{prompt}: {traffic:#?}\n{out}");
        let url = emails[0]["request"]["url"].as_str().unwrap();
        assert!(
            url.ends_with(&format!("for={}", url_quote(prompt))),
            "{url}"
        );
        let after: Vec<u64> = serde_json::from_value(c["after_answer"].clone()).unwrap();
        let delays: Vec<u64> = serde_json::from_value(c["after_answer_ms"].clone()).unwrap();
        assert_eq!(after, vec![emails[0]["id"].as_u64().unwrap()], "{prompt}");
        assert!(
            delays[0] >= 750,
            "{prompt}: its email came {delays:?} ms after"
        );
    }
    assert!(
        missing <= missing_at_most,
        "{missing} emails missing\n{out}"
    );
}

/// An email 800 ms after the answer, with the default 500 ms window: the instance's idle
/// gap follows it into its own case, at concurrency 1 and 4 (spares the run settles on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_later_than_the_window_is_followed_by_the_idle_gap() {
    let o = origins().await;
    for (concurrency, instances) in [(1, 6), (4, 16)] {
        let agent = format!("{POOLED}\n  instances: {instances}");
        let advanced = format!("{{concurrency: {concurrency}, seed: 7}}");
        let (code, out, r, _) = run(config_env(&o, &agent, &advanced, LATE)).await;
        assert_eq!(
            code, 1,
            "the emails fail `no-email`, each its own case's: {out}"
        );
        emails_in_their_own_cases(&r, &out, concurrency);
        let warnings = r["warnings"].to_string();
        assert!(
            warnings.contains("calls after the answer: the latest began"),
            "the run says how late: {warnings}"
        );
        assert!(!warnings.contains("no idle spare"), "{warnings}");
    }
}

/// The same agent on a pool without a spare instance (as many as the concurrency): each
/// instance takes its next case as soon as the window ends, so an email later than the
/// window lands in that next case, where nothing on the wire tells it from the case's own
/// calls. The run warns of that by construction, whatever it saw: never a silent verdict on
/// the wrong case. An email it did see in its own case later than the window is named, with
/// the `settle_ms` that would have caught it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_spare_an_email_later_than_the_window_is_warned_of() {
    let o = origins().await;
    for concurrency in [1, 4] {
        let agent = format!("{POOLED}\n  instances: {concurrency}");
        let advanced = format!("{{concurrency: {concurrency}, seed: 7}}");
        let (_, out, r, _) = run(config_env(&o, &agent, &advanced, LATE)).await;
        let warnings: Vec<&str> = r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let warned = warnings
            .iter()
            .find(|w| w.contains("had no idle spare instance"))
            .unwrap_or_else(|| panic!("concurrency {concurrency}: {warnings:#?}\n{out}"));
        assert!(warned.contains("was counted in that next case"), "{warned}");
        // A late email seen in its own case is the one named.
        let seen_late = r["cases"].as_array().unwrap().iter().any(|c| {
            let delays: Vec<u64> =
                serde_json::from_value(c["after_answer_ms"].clone()).unwrap_or_default();
            delays.iter().any(|&d| d > 500)
        });
        if seen_late {
            assert!(
                warned.contains("/send?for=") && warned.contains("case `"),
                "names the exchange and its case: {warned}"
            );
            assert!(warned.contains("would catch it"), "{warned}");
        }
    }
}
