use serde_json::{Value, json};

use super::{REDACTED, carry};

/// `carry` of `written`, with `${VAR}`s expanded from `vars`.
fn carried(written: Value, vars: &[(&str, &str)]) -> Value {
    let env = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
            .ok_or_else(|| format!("{name} unset"))
    };
    let mut expanded = written.clone();
    super::super::expand::expand_value(&mut expanded, "", &env, &mut vec![]);
    carry(written.as_object().unwrap(), &expanded)
}

#[test]
fn credentials_never_travel_but_what_is_judged_does() {
    let written = json!({
        "control": {"token": "t0ps3cret-control", "listen": "0.0.0.0:8080"},
        "proxy": {"users": [{"name": "a", "password": "hunter2"}], "max_rewrite_bytes": 1024},
        "ca": {"dir": "/secrets/ca"},
        "telemetry": {"otlp": {"headers": {"authorization": "Bearer otlp-key"}}},
        "agent": {
            "endpoint": "http://user:pa55word@127.0.0.1:9/invoke?api_key=sk-live-123&lang=en",
            "command": "python3 agent.py --key sk-abcdef0123456789 --model=ghp_0123456789abcdefABCD",
            "headers": {"Authorization": "Bearer ${TOKEN}", "X-Trace": "run-1"},
            "env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}", "NO_PROXY": "localhost", "MODE": "fast"},
        },
        "advanced": {"seed": 7, "embeddings": {"url": "http://e/v1", "model": "m",
            "api_key": "${EMBEDDINGS_KEY}"}},
        "model": {"api_key": "sk-literal-in-file", "base_url": "https://u:p@llm.example/v1"},
        "golden_prompts": ["What costs $$5 at ${SHOP}?", "Is CANARY-8f3k2j4h5g6d7s8a in it?"],
        "invariants": [{"type": "excludes", "value": "CANARY-8f3k2j4h5g6d7s8a"}],
        "output": {"path": "reports/run2024abcdef01"},
    });
    let vars = [
        ("TOKEN", "tok-from-env-0123456789"),
        ("OPENAI_API_KEY", "sk-env-0123456789abcdef"),
        ("EMBEDDINGS_KEY", "emb-0123456789abcdef"),
        ("SHOP", "ACME"),
    ];
    let c = carried(written, &vars);
    let text = c.to_string();
    for secret in [
        "t0ps3cret",
        "hunter2",
        "/secrets/ca",
        "otlp-key",
        "pa55word",
        "sk-live-123",
        "sk-abcdef",
        "ghp_0123",
        "tok-from-env",
        "sk-env",
        "emb-0123",
        "sk-literal",
        "u:p@",
    ] {
        assert!(!text.contains(secret), "{secret} carried: {text}");
    }
    for dropped in ["control", "ca", "telemetry"] {
        assert!(c.get(dropped).is_none(), "{dropped}: {text}");
    }
    assert_eq!(c["proxy"], json!({"max_rewrite_bytes": 1024}));
    let agent = &c["agent"];
    assert_eq!(
        agent["endpoint"],
        format!("http://{REDACTED}@127.0.0.1:9/invoke?api_key={REDACTED}&lang=en")
    );
    assert_eq!(
        agent["command"],
        format!("python3 agent.py --key {REDACTED} --model={REDACTED}")
    );
    assert_eq!(agent["headers"]["X-Trace"], REDACTED);
    // The proxy variables are what the verdict reads of `agent.env`; the rest is not.
    assert_eq!(
        agent["env"],
        json!({"OPENAI_API_KEY": REDACTED, "NO_PROXY": "localhost", "MODE": REDACTED})
    );
    // A bare reference is kept (the merge expands it); a literal key is not.
    assert_eq!(c["advanced"]["embeddings"]["api_key"], "${EMBEDDINGS_KEY}");
    assert!(c["model"].get("api_key").is_none(), "{text}");
    assert_eq!(
        c["model"]["base_url"],
        format!("https://{REDACTED}@llm.example/v1")
    );
    // What the report judges is kept as it ran, a literal `$` escaped for the next load.
    assert_eq!(c["golden_prompts"][0], "What costs $$5 at ACME?");
    assert_eq!(c["golden_prompts"][1], "Is CANARY-8f3k2j4h5g6d7s8a in it?");
    assert_eq!(c["invariants"][0]["value"], "CANARY-8f3k2j4h5g6d7s8a");
    assert_eq!(c["output"]["path"], "reports/run2024abcdef01");
    assert_eq!(c["advanced"]["seed"], 7);
}
