//! `/v1/runs` submissions as a control API off loopback or a hostile body sees them: no
//! daemon environment expanded, no file opened or echoed, no command started, daemon-only
//! sections set aside, and refusals that stay small.

use super::*;

#[tokio::test]
async fn a_body_of_many_long_duplicate_keys_gets_a_short_answer() {
    // 300 keys of 1,000 characters, each twice: quoted whole in its path and message, the
    // answer was ten times the body (found by the run_bodies fuzz target).
    let key = "k".repeat(1_000);
    let entries: Vec<String> = (0..600)
        .map(|i| format!("\"{}{key}\": {i}", i / 2))
        .collect();
    let body = format!(
        r#"{{"kind": "chaos", "config": {{{}}}}}"#,
        entries.join(", ")
    );
    let r = a_post(&body).await;
    let (code, message) = r.error(400);
    assert_eq!(code, "bad_body");
    assert!(
        r.text.len() < 64 * 1024,
        "{} bytes for a {}-byte body",
        r.text.len(),
        body.len()
    );
    assert!(message.contains("duplicate key `0kkk"), "{message}");
    assert!(message.contains("(lines 1 and 1)"), "{message}");
    assert!(
        message.ends_with("; … and 250 more, not listed"),
        "{message}"
    );
}

async fn a_post(body: &str) -> Reply {
    app().post(body).await
}

#[tokio::test]
async fn off_loopback_no_config_file_is_read_and_no_command_started() {
    let a = app_with(None, false);
    let path = a.dir_path().join("run.yaml");
    std::fs::write(&path, config(closed_port()).as_str().unwrap()).unwrap();
    let (code, message) = a
        .post(&json!({"kind": "chaos", "config_path": path}).to_string())
        .await
        .error(400);
    assert_eq!(code, "not_runnable");
    assert!(message.starts_with("config_path:"), "{message}");

    let cfg = format!(
        "{}agent: {{endpoint: 'http://127.0.0.1:1/invoke', command: 'touch pwned'}}\n",
        "golden_prompts: [hi]\ninvariants: [{type: output_not_empty}]\n\
         chaos: {tool_faults: [{tool: '*', mode: error, error_code: 503}]}\n"
    );
    let (code, message) = a
        .post(&json!({"kind": "chaos", "config": cfg}).to_string())
        .await
        .error(400);
    assert_eq!(code, "not_runnable");
    assert!(message.contains("agent.command"), "{message}");
    let list = a.get("/v1/runs").await;
    assert_eq!(list.json()["runs"], json!([]), "nothing was queued");
}

/// An endpoint-only config whose agent header is `value` (a `${…}` to expand).
fn with_header(value: &str) -> String {
    format!(
        "{}agent: {{endpoint: 'http://127.0.0.1:{}/invoke', headers: {{x-key: '{value}'}}}}\n",
        "golden_prompts: [hi]\ninvariants: [{type: output_not_empty}]\n\
         chaos: {tool_faults: [{tool: '*', mode: error, error_code: 503}]}\n",
        closed_port()
    )
}

#[tokio::test]
async fn a_submitted_config_never_expands_the_daemons_environment() {
    // PATH is set in every test process: the daemon's own environment.
    let a = app();
    let r = a
        .post(&json!({"kind": "chaos", "config": with_header("${PATH}")}).to_string())
        .await;
    let (code, message) = r.error(400);
    assert_eq!(code, "invalid_config");
    let path = std::env::var("PATH").unwrap();
    assert!(
        !r.text.contains(&path),
        "the daemon's PATH leaked: {}",
        r.text
    );
    let errors = r.json()["error"]["errors"].to_string();
    assert!(
        errors.contains("agent.headers.x-key") && errors.contains("the request's `env`"),
        "{message}: {errors}"
    );
    // The same through a file on a loopback daemon.
    let file = a.dir_path().join("run.yaml");
    std::fs::write(&file, with_header("${PATH}")).unwrap();
    let r = a
        .post(&json!({"kind": "chaos", "config_path": file}).to_string())
        .await;
    assert_eq!(r.error(400).0, "invalid_config");
    assert!(!r.text.contains(&path), "{}", r.text);
    // And no FLAKESTORM_* layering from the daemon's environment either: not tested by
    // setting one (tests share the process environment); the loader's policy test covers it.

    // The request's own `env` is what expands.
    let body = json!({"kind": "chaos", "config": with_header("${KEY}"), "env": {"KEY": "k1"}});
    let r = a.post(&body.to_string()).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let body = json!({"kind": "chaos", "config": with_header("x"), "env": {"1BAD": "v"}});
    let r = a.post(&body.to_string()).await;
    assert!(r.error(400).1.contains("env.1BAD"), "{}", r.text);
}

#[tokio::test]
async fn control_expose_env_lets_named_variables_through_and_only_those() {
    let mut a = app();
    a.state.expose_env = std::sync::Arc::from(vec!["PATH".to_string()]);
    let r = a
        .post(&json!({"kind": "chaos", "config": with_header("${PATH}")}).to_string())
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let r = a
        .post(&json!({"kind": "chaos", "config": with_header("${HOME}")}).to_string())
        .await;
    assert_eq!(r.error(400).0, "invalid_config");
}

#[tokio::test]
async fn off_loopback_no_session_tape_or_contract_file_is_opened_or_echoed() {
    let a = app_with(None, false);
    let dir = a.dir_path();
    let secret = dir.join("secret.yaml");
    std::fs::write(&secret, "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0\n").unwrap();
    let agent = format!(
        "agent: {{endpoint: 'http://127.0.0.1:{}/invoke'}}\ninvariants: [{{type: output_not_empty}}]\n",
        closed_port()
    );
    let inline =
        |extra: &str| format!("{agent}replays:\n  sessions:\n    - {{id: s, input: hi{extra}}}\n");
    let cases = [
        (
            format!(
                "{agent}replays: {{sessions: [{{file: '{}'}}]}}\n",
                secret.display()
            ),
            "replays.sessions[0]:",
        ),
        (
            format!("{agent}replays: {{sessions: [{{file: /etc/hostname}}]}}\n"),
            "replays.sessions[0]:",
        ),
        (
            format!(
                "{agent}replays: {{sessions: [{{file: '{}/nope.yaml'}}]}}\n",
                dir.display()
            ),
            "replays.sessions[0]:",
        ),
        (
            inline(&format!(", tape: '{}'", secret.display())),
            "replays.sessions[0].tape:",
        ),
        (
            inline(&format!(", contract: '{}'", secret.display())),
            "replays.sessions[0].contract:",
        ),
    ];
    let mut messages = vec![];
    for (cfg, at) in cases {
        let r = a
            .post(&json!({"kind": "replay", "config": cfg}).to_string())
            .await;
        let (code, message) = r.error(400);
        assert_eq!(code, "not_runnable", "{cfg}: {}", r.text);
        assert!(message.starts_with(at), "{message}");
        assert!(
            !r.text.contains("eyJ") && !r.text.contains("c2VjcmV0"),
            "{}",
            r.text
        );
        if at == "replays.sessions[0]:" {
            messages.push(message);
        }
    }
    messages.dedup();
    assert_eq!(
        messages.len(),
        1,
        "a file that exists and one that does not look alike"
    );
    let list = a.get("/v1/runs").await;
    assert_eq!(list.json()["runs"], json!([]), "nothing was queued");
}

#[tokio::test]
async fn a_submitted_proxy_section_is_set_aside_unread() {
    // `proxy.upstream_ca_file` is read when a config loads; on the daemon the run's proxy
    // section is not used, so a FIFO there must not be opened (it would block forever).
    let a = app_with(None, false);
    let fifo = a.dir_path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let cfg = format!(
        "proxy: {{upstream_ca_file: '{}'}}\n{}",
        fifo.display(),
        config(closed_port()).as_str().unwrap()
    );
    let body = json!({"kind": "chaos", "config": cfg}).to_string();
    let post = a.post(&body);
    let r = tokio::time::timeout(std::time::Duration::from_secs(10), post)
        .await
        .expect("the FIFO was not opened");
    assert_eq!(r.status, 202, "{}", r.text);
    assert!(r.json()["warnings"].to_string().contains("proxy: not used"));
}
