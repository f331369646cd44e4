use serde_json::{Value, json};

use super::{REDACTED, carry, comparable};

/// `carry` of `written`, with `${VAR}`s expanded from `vars`.
fn carried(written: Value, vars: &[(&str, &str)]) -> Value {
    let env = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
            .ok_or_else(|| format!("{name} unset"))
    };
    let mut expanded = written;
    super::super::expand::expand_value(&mut expanded, "", &env, &mut vec![]);
    carry(&expanded)
}

#[test]
fn credentials_never_travel_but_what_is_judged_does() {
    let written = json!({
        "control": {"token": "t0ps3cret-control", "listen": "0.0.0.0:8080"},
        "proxy": {"users": [{"name": "a", "password": "hunter2"}], "max_rewrite_bytes": 1024},
        "ca": {"dir": "/secrets/ca"},
        "telemetry": {"otlp": {"headers": {"authorization": "Bearer otlp-key"}}},
        "agent": {
            "endpoint": "http://user:pa55word@127.0.0.1:9/invoke?api_key=live-123&lang=en",
            "command": "/usr/bin/python3 agent.py --key sk-abcdef0123456789 --password hunter3",
            "headers": {"Authorization": "Bearer ${TOKEN}", "X-Trace": "run-1"},
            "env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}", "NO_PROXY": "localhost,127.0.0.1",
                "HTTPS_PROXY": "http://me:pxpass@proxy:3128", "MODE": "fast"},
        },
        "advanced": {"seed": 7, "embeddings": {"url": "http://e/v1?key=emb", "model": "m",
            "api_key": "${EMBEDDINGS_KEY}"}},
        "model": {"api_key": "${OPENAI_API_KEY}", "base_url": "https://u:p@llm.example/v1"},
        "golden_prompts": ["What costs $$5 at ${SHOP}?",
            "Summarize https://x.org/s?q=python3+asyncio+tutorial2024"],
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
        "hunter",
        "/secrets/ca",
        "otlp-key",
        "pa55word",
        "live-123",
        "sk-abcdef",
        "tok-from-env",
        "sk-env",
        "emb-0123",
        "EMBEDDINGS_KEY",
        "u:p@",
        "pxpass",
        "key=emb",
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
    // The stack stays readable (`python3`): only the keys go.
    assert_eq!(
        agent["command"],
        format!("/usr/bin/python3 agent.py --key {REDACTED} --password {REDACTED}")
    );
    assert_eq!(agent["headers"]["X-Trace"], REDACTED);
    // The proxy variables are what the verdict reads of `agent.env`; the rest is not.
    assert_eq!(
        agent["env"],
        json!({"OPENAI_API_KEY": REDACTED, "NO_PROXY": "localhost,127.0.0.1",
            "HTTPS_PROXY": format!("http://{REDACTED}@proxy:3128"), "MODE": REDACTED})
    );
    // Credential fields are left out, as if unset: a placeholder would load as a key.
    assert!(c["model"].get("api_key").is_none(), "{text}");
    assert!(
        c["advanced"]["embeddings"].get("api_key").is_none(),
        "{text}"
    );
    assert_eq!(
        c["model"]["base_url"],
        format!("https://{REDACTED}@llm.example/v1")
    );
    // What the report judges is kept as it ran, a literal `$` escaped for the next load.
    assert_eq!(c["golden_prompts"][0], "What costs $$5 at ACME?");
    assert_eq!(
        c["golden_prompts"][1],
        "Summarize https://x.org/s?q=python3+asyncio+tutorial2024"
    );
    assert_eq!(c["invariants"][0]["value"], "CANARY-8f3k2j4h5g6d7s8a");
    assert_eq!(c["output"]["path"], "reports/run2024abcdef01");
    assert_eq!(c["advanced"]["seed"], 7);
}

#[test]
fn what_each_pod_has_its_own_is_not_compared() {
    let shard = |port: u16, dir: &str, seed: u64| {
        carry(&json!({
            "agent": {"endpoint": format!("http://127.0.0.1:{port}/invoke"), "command": "x"},
            "output": {"path": dir}, "data_dir": dir,
            "advanced": {"concurrency": port, "seed": seed},
        }))
    };
    assert_eq!(comparable(&shard(1, "a", 7)), comparable(&shard(2, "b", 7)));
    assert_ne!(comparable(&shard(1, "a", 7)), comparable(&shard(1, "a", 8)));
}

#[test]
fn a_path_that_leads_out_escapes() {
    use std::path::Path;
    assert!(super::escapes(Path::new("/etc/passwd")));
    assert!(super::escapes(Path::new("../x")));
    assert!(super::escapes(Path::new("a/../../x")));
    assert!(!super::escapes(Path::new("reports/not-yet-made/x.json")));
    assert!(!super::escapes(Path::new("./prices.yaml")));
}
