//! One `flakestorm serve` shared by several users (issue #51), probed as the issue's
//! tester did: a crafted import of one case copied 8,000 times answers within seconds
//! while another run completes as it would alone; four large imports at once stay under
//! the memory bound docs/benchmarks.md gives; HTTP the control listener must refuse
//! (two Hosts, a foreign absolute-form target, a bad port); a keep-alive client after a
//! 413; a short token off loopback and a data_dir others may write refused at start; and
//! an agent that cannot read the daemon's token from its environment.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::serve::{Serve, serve_with_env};
use common::{control_client, within};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SERVE: &str = "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0'}\n";
const FIXTURE: &str = include_str!("fixtures/reports/ci.json");

async fn daemon(dir: &std::path::Path, yaml: &str, env: &[(&str, &str)]) -> Serve {
    std::fs::write(dir.join("flakestorm.yaml"), yaml).unwrap();
    serve_with_env(dir, &["-c", "flakestorm.yaml"], "warn", false, env).await
}

/// A chaos report of `n` copies of the fixture's first chaos case (`traffic`: with the
/// exchanges it recorded, else without).
fn copies(n: usize, traffic: bool) -> String {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut report = fixture["chaos"].clone();
    let mut case = report["cases"][0].clone();
    if !traffic {
        case["exchanges"] = Value::Null;
    }
    let prompt = report["prompts"][0].clone();
    report["cases"] = Value::Array(vec![case; n]);
    report["prompts"] = Value::Array(vec![prompt; n]);
    report.to_string()
}

/// `flakestorm serve -c flakestorm.yaml` in `dir`, expected to refuse to start: its exit
/// code and stderr (a test failure, not a hang, if it starts).
async fn refused_serve(dir: &std::path::Path) -> (i32, String) {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["serve", "-c", "flakestorm.yaml"])
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = within("serve refuses to start", child.wait_with_output())
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), err)
}

/// Sends `request` as it is on a new connection; the answer, read to the connection's
/// end (the server closes it).
async fn raw(addr: &str, request: &[u8]) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    within("the answer and the close", tcp.read_to_end(&mut answer))
        .await
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn two_hosts_a_bad_port_and_a_foreign_absolute_target_are_400_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path(), SERVE, &[]).await;
    let auth = format!("Authorization: Bearer {}", d.token.as_deref().unwrap());
    let control = &d.control;
    for (what, head) in [
        (
            "two Host headers",
            format!("GET /v1/runs HTTP/1.1\r\nHost: {control}\r\nHost: evil.example\r\n"),
        ),
        (
            "a port past 65535",
            "GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n".to_string(),
        ),
        (
            "an absolute-form target naming another server",
            format!("GET http://evil.example/v1/runs HTTP/1.1\r\nHost: {control}\r\n"),
        ),
    ] {
        let answer = raw(control, format!("{head}{auth}\r\n\r\n").as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{what}: {answer}");
        assert!(answer.contains("\"bad_request\""), "{what}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{what}: {answer}"
        );
    }
    // The same request, well formed, is answered.
    let head = format!("GET http://{control}/v1/runs HTTP/1.1\r\nHost: {control}\r\n");
    let answer = raw(
        control,
        format!("{head}{auth}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn after_a_413_a_keep_alive_client_is_told_to_reconnect_and_its_next_request_works() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path(), SERVE, &[]).await;
    let token = d.token.clone().unwrap();
    let big = vec![b' '; (1 << 20) + 64];
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        d.control,
        big.len()
    );
    let answer = raw(&d.control, &[head.as_bytes(), &big].concat()).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    // A pooled client: the 413's connection is not reused for the next request.
    let client = reqwest::Client::builder()
        .no_proxy()
        .use_preconfigured_tls(common::tls_client("", common::H1))
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let auth = format!("Bearer {token}");
    for _ in 0..3 {
        let r = client
            .post(d.url("/v1/runs"))
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413);
        let next = client
            .get(d.url("/v1/runs"))
            .header("authorization", &auth)
            .send()
            .await
            .expect("the next request on the pool");
        assert_eq!(next.status(), 200);
    }
}

#[tokio::test]
async fn a_short_token_off_loopback_is_refused_naming_its_length_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flakestorm.yaml"),
        "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '0.0.0.0:0', token: x}\n",
    )
    .unwrap();
    let (code, err) = refused_serve(dir.path()).await;
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("control.token: 1 characters, too short") && err.contains("at least 32"),
        "{err}"
    );
}

#[tokio::test]
async fn a_data_dir_others_may_write_is_refused_unless_shared_on_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("shared");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let yaml = format!("{SERVE}data_dir: shared\n");
    std::fs::write(dir.path().join("flakestorm.yaml"), &yaml).unwrap();
    let (code, err) = refused_serve(dir.path()).await;
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("other users may write it (mode 777)") && err.contains("chmod go-w"),
        "{err}"
    );
    assert!(
        !data.join("flakestorm.db").exists(),
        "nothing written there"
    );
    let shared = "proxy: {listen: '127.0.0.1:0'}\n\
                  control: {listen: '127.0.0.1:0', allow_shared_data_dir: true}\n\
                  data_dir: shared\n";
    let d = daemon(dir.path(), shared, &[]).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data.join("flakestorm.db")), 0o600);
    drop(d);
}

#[tokio::test]
async fn the_agent_does_not_inherit_the_daemons_token() {
    let dir = tempfile::tempdir().unwrap();
    let token = "a-token-of-the-daemon-0123456789abcdef";
    let yaml = "proxy: {listen: '127.0.0.1:0'}\n\
                control: {listen: '127.0.0.1:0', token: '${MY_CONTROL_TOKEN}'}\n";
    let env = [
        ("MY_CONTROL_TOKEN", token),
        ("FLAKESTORM_API_TOKEN", "another-token-0123456789abcdef0123"),
        ("FS_TEST_KEPT", "kept"),
    ];
    let mut d = daemon(dir.path(), yaml, &env).await;
    let seen = dir.path().join("agent.env");
    let config = format!(
        "agent: {{endpoint: 'http://127.0.0.1:9/invoke', command: 'env > {}'}}\n\
         golden_prompts: [hi]\ninvariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n",
        seen.display()
    );
    // Its token comes from the environment, not a file `serve` names.
    d.token = Some(token.to_string());
    // The run ends (its agent exits without answering); the command has run by then.
    let id = d.submit("chaos", &config).await;
    d.until_event(&id, "done").await;
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(env.contains("FS_TEST_KEPT=kept"), "the rest is inherited");
    assert!(env.contains("HTTPS_PROXY="), "with the proxy's variables");
    for name in ["MY_CONTROL_TOKEN", "FLAKESTORM_API_TOKEN"] {
        assert!(!env.contains(name), "{name} reached the agent");
    }
    assert!(!env.contains(token), "the token's value reached the agent");
}

// Durations compared as ratios within the test (house rules: no absolute wall-time bound).
#[allow(clippy::disallowed_methods)]
fn now() -> std::time::Instant {
    std::time::Instant::now()
}

/// A chaos run of three prompts submitted to `d` and followed to its end; its duration.
async fn one_run(d: &Serve, agent: &str) -> Duration {
    let config = format!(
        "agent: {{endpoint: '{agent}'}}\ngolden_prompts: [one, two, three]\n\
         invariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n"
    );
    let start = now();
    let id = d.submit("chaos", &config).await;
    d.until_event(&id, "done").await;
    start.elapsed()
}

/// Issue #51's stall: 8,000 copies of one case (a 4 MiB report) held every other run
/// `queued` for 100 s, and the read deadline cut the import off without an answer. Now
/// it is answered (201, or 202 while it goes on), and a run started meanwhile takes about
/// as long as alone.
#[tokio::test(flavor = "multi_thread")]
async fn an_import_of_8000_copies_of_one_case_stalls_no_other_run() {
    let dir = tempfile::tempdir().unwrap();
    // A read deadline shorter than the import: it must not cut it.
    let yaml = "proxy: {listen: '127.0.0.1:0', header_timeout_ms: 300}\n\
                control: {listen: '127.0.0.1:0'}\n";
    let d = daemon(dir.path(), yaml, &[]).await;
    let client = control_client(d.token.as_deref().unwrap());
    let agent = common::origin::json(r#"{"result": "an answer"}"#).await;
    let agent = agent.http_url("/invoke");
    let mut alone = Duration::ZERO;
    for _ in 0..3 {
        alone = alone.max(one_run(&d, &agent).await);
    }
    let body = copies(8_000, false);
    let import = {
        let (client, url) = (client.clone(), d.url("/v1/runs/import"));
        tokio::spawn(async move {
            let start = now();
            let r = client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("an answer, not a cut connection");
            (
                r.status().as_u16(),
                r.text().await.unwrap(),
                start.elapsed(),
            )
        })
    };
    let during = within("a run during the import", one_run(&d, &agent)).await;
    let (status, text, took) = within("the import's answer", import).await.unwrap();
    assert!(status == 201 || status == 202, "{status}: {text}");
    let ratio = during.as_secs_f64() / alone.as_secs_f64();
    eprintln!(
        "import of 8,000 copies answered {status} in {took:?}; a run alone {alone:?}, \
         during it {during:?} ({ratio:.1}x)"
    );
    assert!(
        ratio < 20.0,
        "a run took {ratio:.1}x its time alone during the import"
    );
}

/// The most memory `pid` has held (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// How much a burst of imports may grow the daemon's peak RSS, as a multiple of one body
/// (docs/api.md, docs/benchmarks.md): one import peaks near 4× its body (the text and the
/// typed report); they run one at a time, but the allocator keeps a finished one's pages
/// for a few seconds in its own arena, so four in a row can add up to about 4 × 4×.
/// Before (issue #51) one took 11× its body and four ran at once: 36×.
const IMPORT_MEMORY_PER_BODY: u64 = 16;

#[tokio::test(flavor = "multi_thread")]
async fn four_large_imports_at_once_stay_under_the_documented_bound() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path(), SERVE, &[]).await;
    let client = control_client(d.token.as_deref().unwrap());
    // Just under the default control.max_import_bytes (16 MiB), with each case's traffic.
    let body = copies(5_500, true);
    let pid = d.child.id().unwrap();
    let before = peak_rss(pid);
    let imports: Vec<_> = (0..4)
        .map(|_| {
            let (client, url, body) = (client.clone(), d.url("/v1/runs/import"), body.clone());
            tokio::spawn(async move {
                let r = client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                (r.status().as_u16(), r.text().await.unwrap())
            })
        })
        .collect();
    for import in imports {
        let (status, text) = within("an import", import).await.unwrap();
        // 429: it waited its turn too long (a slow machine); nothing was stored for it.
        assert!([201, 202, 429].contains(&status), "{status}: {text}");
    }
    let grew = peak_rss(pid).saturating_sub(before);
    let bound = IMPORT_MEMORY_PER_BODY * body.len() as u64;
    eprintln!(
        "four imports of {} bytes at once: peak RSS grew {} MiB (bound {} MiB)",
        body.len(),
        grew >> 20,
        bound >> 20
    );
    assert!(grew < bound, "peak RSS grew {grew} bytes, over {bound}");
}
