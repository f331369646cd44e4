//! The control API of a real `flakestorm serve`, attacked as the tester did: what a
//! web page's cross-site request, a DNS-rebinding page and another local user without the
//! token file get; and that a config sent to it never reads the daemon's environment.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::serve::{Serve, serve_with_env};
use common::within;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SERVE: &str = "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\n";
/// A value in the daemon's environment that no answer may carry.
const CANARY: &str = "canary-4f1d2a9e";

async fn daemon(dir: &std::path::Path) -> Serve {
    std::fs::write(dir.join("flakestorm.yaml"), SERVE).unwrap();
    let env = [("FS_TEST_CANARY", CANARY)];
    serve_with_env(dir, &["-c", "flakestorm.yaml"], "warn", false, &env).await
}

/// Sends `head` (CRLF lines, without the blank line) and `body` as one HTTP/1.1 request;
/// the status and the body of the answer.
async fn raw(addr: &str, head: &str, body: &str) -> (u16, String) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    within("the answer", tcp.read_to_string(&mut answer))
        .await
        .unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

/// A run whose agent is a command that leaves `marker` behind.
fn pwn(marker: &std::path::Path) -> String {
    json!({"kind": "contract", "config": format!(
        "agent: {{endpoint: 'http://127.0.0.1:9/invoke', command: 'touch {}'}}\n\
         golden_prompts: [hi]\n\
         contract: {{name: c, invariants: [{{id: a, type: output_not_empty}}]}}\n",
        marker.display()
    )})
    .to_string()
}

#[tokio::test]
async fn a_web_page_cannot_start_a_run_or_read_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path()).await;
    let marker = dir.path().join("PWNED");
    let addr = &d.control;
    // `fetch("http://127.0.0.1:PORT/v1/runs", {method: "POST", mode: "no-cors", body})`
    // from a page on another site: a simple request, no preflight.
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\n\
         Sec-Fetch-Site: cross-site\r\nContent-Type: text/plain;charset=UTF-8"
    );
    let (status, body) = raw(addr, &head, &pwn(&marker)).await;
    assert_eq!(status, 403, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], "forbidden_origin");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Origin http://evil.example is not allowed"),
        "{v}"
    );
    // The same body without the browser's headers but as text: 415.
    let head = format!("POST /v1/runs HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain");
    let (status, body) = raw(addr, &head, &pwn(&marker)).await;
    assert_eq!(status, 415, "{body}");
    // A DNS-rebinding page: its own name in Host, same origin as far as the browser knows.
    let head = "GET /v1/runs HTTP/1.1\r\nHost: rebind.evil.example:8081";
    let (status, body) = raw(addr, head, "").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("forbidden_host"), "{body}");
    // Another local user: no token, nothing.
    let head = format!("GET /v1/runs HTTP/1.1\r\nHost: {addr}");
    let (status, _) = raw(addr, &head, "").await;
    assert_eq!(status, 401);
    // The probes stay open.
    let head = format!("GET /healthz HTTP/1.1\r\nHost: {addr}");
    assert_eq!(raw(addr, &head, "").await.0, 200);

    let listed = d.client().get(d.url("/v1/runs")).send().await.unwrap();
    let listed: Value = serde_json::from_str(&listed.text().await.unwrap()).unwrap();
    assert_eq!(listed["runs"], json!([]), "no run was queued");
    assert!(!marker.exists(), "no command ran");
}

#[tokio::test]
async fn the_token_is_made_private_and_kept_across_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path()).await;
    let file = dir.path().join(".flakestorm/control.token");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only its owner may read it");
    let data_dir = std::fs::metadata(dir.path().join(".flakestorm")).unwrap();
    assert_eq!(
        data_dir.permissions().mode() & 0o777,
        0o700,
        "nor the run history"
    );
    let token = d.token.clone().unwrap();
    assert_eq!(token, std::fs::read_to_string(&file).unwrap());
    let r = d.client().get(d.url("/v1/ca.pem")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    drop(d);
    let again = daemon(dir.path()).await;
    assert_eq!(
        again.token.as_deref(),
        Some(token.as_str()),
        "the same token"
    );
}

#[tokio::test]
async fn a_config_sent_to_the_daemon_does_not_read_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path()).await;
    let config = "agent: {endpoint: 'http://127.0.0.1:9/invoke', headers: {x-leak: '${FS_TEST_CANARY}'}}\n\
                  golden_prompts: [hi]\ninvariants: [{type: output_not_empty}]\n\
                  chaos: {tool_faults: [{tool: '*', mode: error, error_code: 503}]}\n";
    let r = d
        .client()
        .post(d.url("/v1/runs"))
        .header("content-type", "application/json")
        .body(json!({"kind": "chaos", "config": config}).to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(
        !text.contains(CANARY),
        "the daemon's environment leaked: {text}"
    );
    assert!(text.contains("`${FS_TEST_CANARY}` has no value"), "{text}");
}
