//! The starter `init` writes fires its chaos on any agent that calls an LLM: an agent that
//! calls its LLM once per prompt (the common case) meets the starter's LLM fault in every
//! case, so `run --chaos-only` on the starter tests it rather than ending NOT TESTED.

mod common;

use common::cli::{flakestorm, write_config};
use common::origin;
use serde_json::Value;

/// An OpenAI-compatible chat completion answering every request.
async fn llm() -> origin::Origin {
    origin::json(
        r#"{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ACME's Q3 revenue was $4.1B."},"finish_reason":"stop"}]}"#,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_starters_llm_fault_fires_on_an_agent_that_calls_its_llm_once() {
    let (search, llm) = (origin::search_tool().await, llm().await);
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = flakestorm(&["init"], dir.path());
    assert_eq!(code, 0, "{err}");
    let starter = std::fs::read_to_string(dir.path().join("flakestorm.yaml")).unwrap();
    // The user's edits: their agent (a script calling its LLM once) and their tool's URL.
    let agent = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent/llm_once_agent.py");
    let (head, rest) = starter.split_once("\nagent:\n").unwrap();
    let rest = rest.split_once("\n\n").unwrap().1;
    let yaml = format!(
        "{head}\nagent:\n  command: 'exec python3 {} {{prompt}}'\n  env: {{TOOL_URL: \
         'http://{}/q', LLM_URL: 'http://{}/v1/chat/completions'}}\n\n{rest}",
        agent.display(),
        search.addr,
        llm.addr
    )
    .replace(
        "https://api.search.example/*",
        &format!("http://{}/*", search.addr),
    )
    .replace("version: \"2.0\"\n", "");
    let dir2 = dir.path().to_path_buf();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        write_config(&dir2, &yaml);
        flakestorm(&["run", "--chaos-only"], &dir2)
    })
    .await
    .unwrap();
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/chaos.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}")),
    )
    .unwrap();
    let rules = report["coverage"][0]["rules"].as_array().unwrap();
    let llm_rule = rules
        .iter()
        .find(|r| r["kind"] == "llm_fault")
        .unwrap_or_else(|| panic!("{report}"));
    // Every case met it: once each, its first LLM call.
    let prompts = report["cases"].as_array().unwrap().len() as u64;
    assert_eq!(llm_rule["applied"].as_u64(), Some(prompts), "{llm_rule}");
    assert!(llm_rule["why_not"].is_null(), "{llm_rule}");
    assert_ne!(code, 2, "tested, not NOT TESTED:\n{out}\n{err}");
}
