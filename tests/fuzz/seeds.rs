//! Seed corpora and dictionaries of the file formats flakestorm reads (tests/fuzz/files.rs):
//! HAR tapes, session files, saved reports, certificates, and `POST /v1/runs` bodies.
//! Seeds are files a run wrote (ports and paths made neutral) or hand-written to reach
//! what a run rarely writes (base64 bodies, refused calls, other tools' HAR fields), in
//! `tests/fuzz/seeds/`, plus the repository's report fixture cut down to a few cases.

use std::path::Path;

use serde_json::Value;

pub const HAR_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"null",
    b"-1",
    b"0",
    b"1e400",
    b"599999.9999",
    b"600000.1",
    b"-0",
    b"65535",
    b"99999999999999999999",
    b"\"1.2\"",
    b"\"base64\"",
    b"\"_encoding\":\"base64\",",
    b"\"encoding\":\"base64\",",
    b"\"_events\":[{\"offsetMs\":1,\"text\":\"data: x\\n\\n\"}],",
    b"\"offsetMs\":",
    b"\"postData\":{\"mimeType\":\"\",\"text\":\"=\"},",
    b"\"status\":0,",
    b"\"_target\":\"openai\",",
    b"\"_target\":\"embeddings:openai\",",
    b"\"_fault\":\"replay/replayed\",",
    b"\"url\":\"",
    b"http://",
    b"https://[::1]:443",
    b":0/",
    b"?a=1&b",
    b"%zz",
    b"\\u0000",
    b"\\ud800",
    "\u{1F600}".as_bytes(),
    b"AAAA",
    b"====",
];

pub const SESSION_TOKENS: &[&[u8]] = &[
    b"\n",
    b": ",
    b"- ",
    b"  ",
    b"{",
    b"}",
    b"[",
    b"]",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!binary ",
    b"!!str ",
    b"~",
    b"'",
    b"\"",
    b"\\x7f",
    b"\\u0085",
    b"\\uFEFF",
    b"\\0",
    b".nan",
    b".inf",
    b"1e309",
    b"-1",
    b"65536",
    b"18446744073709551616",
    b"600001",
    b"0x1F",
    b"tool_responses:\n",
    b"- {tool: t, status: 0}\n",
    b"latency_ms: ",
    b"status: ",
    b"response: ",
    b"context: ",
    b"tape: ",
    b"id: ",
    b"input: ",
    b"---\n",
    b"\t",
    b"#",
];

pub const REPORT_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"null",
    b"[]",
    b"{}",
    b"-1",
    b"0",
    b"1e308",
    b"-0.0",
    b"18446744073709551615",
    b"\"pass\"",
    b"\"fail\"",
    b"\"error\"",
    b"\"not_tested\"",
    b"\"schema\":\"flakestorm.ci/2\",",
    b"\"flakestorm.contract/2\"",
    b"\"flakestorm.replay/1\"",
    b"\"flakestorm.chaos/2\"",
    b"\"flakestorm.mutation/1\"",
    b"\"score\":",
    b"\"verdict\":",
    b"\"weight\":",
    b"\"min_score\":",
    b"\"cases\":",
    b"\"latency_ms\":",
    b"\"severity\":\"critical\"",
    b"<script>",
    b"</script>",
    b"{{",
    b"{%",
    b"]]>",
    b"&amp;",
    b"\\u0000",
    b"\\u001b[31m",
    "\u{202E}".as_bytes(),
    "\u{1F600}".as_bytes(),
];

pub const CERTIFICATE_TOKENS: &[&[u8]] = &[
    b"<script type=\"application/json\" id=\"flakestorm-certificate\">",
    b"</script>",
    b"<meta name=\"flakestorm-signature\" content=\"",
    b"\">",
    b"\"certificate\":\"flakestorm.certificate/1\"",
    b"\"public_key\":\"",
    b"\"report\":\"",
    b"\"report_sha256\":\"",
    b"\\u003c",
    b"=",
    b"==",
    b"A",
    b"/",
    b"{",
    b"}",
    b"\"",
    b"\n",
];

pub const BODY_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\n",
    b": ",
    b"- ",
    b"  ",
    b"null",
    b"\"kind\":\"chaos\",",
    b"\"kind\":\"ci\",",
    b"kind: replay\n",
    b"\"config\":",
    b"config: |\n  ",
    b"\"config_path\":\"/etc/passwd\",",
    b"\"seed\":18446744073709551616,",
    b"\"min_score\":-1,",
    b"\"profile\":\"",
    b"\"chaos\":true,",
    b"agent:\n  command: ",
    b"\\n",
    b"\\\"",
    b"${HOME}",
    b"&a ",
    b"*a",
    b".nan",
    b"1e400",
    b"probability: ",
    b"mode: ",
];

fn seed(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/seeds")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// HAR tapes: one a run wrote, an LLM stream with a retried and a refused call, another
/// tool's HAR 1.1 with fields flakestorm does not write.
pub fn tapes() -> Vec<Vec<u8>> {
    ["tool-503.har", "llm-stream.har", "ollama.har"]
        .into_iter()
        .map(seed)
        .collect()
}

/// Session files: YAML as people write them, JSON as `replay export` and the LangSmith
/// import write them.
pub fn sessions() -> Vec<Vec<u8>> {
    [
        "incident-504.yaml",
        "exported-session.json",
        "langsmith-session.json",
    ]
    .into_iter()
    .map(seed)
    .collect()
}

/// Saved reports of every kind: a contract and a replay report a run wrote, and the
/// repository's `ci` fixture (with its mutation, contract and chaos reports) cut down to
/// two items per list, so that an execution parses kilobytes, not the fixture's 280.
pub fn reports() -> Vec<Vec<u8>> {
    let mut out = vec![seed("contract-report.json"), seed("replay-report.json")];
    let ci = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports/ci.json");
    let ci: Value = serde_json::from_slice(&std::fs::read(&ci).unwrap()).unwrap();
    for part in ["mutation", "contract", "chaos"] {
        out.push(serde_json::to_vec_pretty(&trimmed(&ci[part])).unwrap());
    }
    out.push(serde_json::to_vec(&trimmed(&ci)).unwrap());
    out
}

/// `v` with every list but `phases` cut to its first two items.
fn trimmed(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().take(2).map(trimmed).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match k.as_str() {
                    "phases" => (k.clone(), v.clone()),
                    _ => (k.clone(), trimmed(v)),
                })
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => v.clone(),
    }
}

/// `POST /v1/runs` bodies: each shipped config (crate::corpus::configs) inline as YAML
/// text in a JSON body, as a JSON object, and in a YAML body, under each run kind.
pub fn run_bodies() -> Vec<Vec<u8>> {
    let kinds = ["contract", "chaos", "mutation", "replay", "ci"];
    let mut out = vec![];
    for (i, config) in crate::corpus::configs().into_iter().enumerate() {
        let text = String::from_utf8(config).unwrap();
        let kind = kinds[i % kinds.len()];
        let object: Value = figment::Figment::from(
            <flakestorm::config::Yaml as figment::providers::Format>::string(&text),
        )
        .extract()
        .unwrap_or(Value::Null);
        out.push(serde_json::json!({"kind": kind, "config": text, "seed": 7}).to_string());
        out.push(
            serde_json::json!({"kind": kind, "config": object, "chaos": true, "min_score": 50.5})
                .to_string(),
        );
        let indented: String = text.lines().map(|l| format!("  {l}\n")).collect();
        out.push(format!("kind: {kind}\nprofile: flaky\nconfig:\n{indented}"));
    }
    out.into_iter().map(String::into_bytes).collect()
}
