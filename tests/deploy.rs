//! What operators deploying flakestorm rely on (issue #26), against the real binary:
//! `health [--ready]` as a container health check, `/readyz`, `--log-format json`, start-up
//! lines with addresses a client can use, a CA given as files (a mounted Secret) used as it
//! is and refused when its key does not match or it expired, `ca bundle`, `ca.bundle_file`,
//! and rules with a `ttl` reverting on a live daemon.

mod common;

use common::cli::{flakestorm, flakestorm_env, write_config};
use common::serve::serve_with_env;
use common::within;

const TOKEN: &str = "deploy-test-token-0123456789abcdef";

/// A CA certificate and key, valid from `from` to `until` days from now.
fn ca_files(dir: &std::path::Path, name: &str, from: i64, until: i64) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now + time::Duration::days(from);
    p.not_after = now + time::Duration::days(until);
    let cert = p.self_signed(&key).unwrap();
    let (c, k) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c.display().to_string(), k.display().to_string())
}

#[tokio::test]
async fn json_logs_usable_addresses_health_and_readiness() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("flakestorm.yaml"),
        "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '0.0.0.0:0', token: '${FLAKESTORM_API_TOKEN}'}\n",
    )
    .unwrap();
    let env = [("FLAKESTORM_API_TOKEN", TOKEN)];
    let mut s = serve_with_env(d, &["--log-format", "json"], "info", true, &env).await;
    // Bound to 0.0.0.0, announced at an address a client can connect to.
    assert!(s.control.starts_with("127.0.0.1:"), "{}", s.control);
    let url = format!("http://{}", s.control);
    let (code, out, err) = flakestorm(&["health", &url], d);
    assert_eq!(
        (code, out.trim()),
        (0, format!("{url}/healthz: ok").as_str()),
        "{err}"
    );
    // The sidecar's environment names the proxy: the probe never goes through it.
    let proxied = [
        ("HTTP_PROXY", "http://127.0.0.1:1"),
        ("http_proxy", "http://127.0.0.1:1"),
    ];
    let (code, out, err) = flakestorm_env(&["health", "--ready", &url], d, &proxied);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("/readyz: ready"), "{out}");
    // The probe URL from the environment, as an image's HEALTHCHECK sets it.
    let (code, _, err) = flakestorm_env(
        &["health", "--ready"],
        d,
        &[("FLAKESTORM_HEALTH_URL", &url)],
    );
    assert_eq!(code, 0, "{err}");
    let ready = common::control_client("");
    let answer = ready.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(answer.status(), 200, "/readyz needs no token");
    // JSON lines on stderr: the listening event carries the usable addresses.
    let stderr = s.stderr.as_mut().unwrap();
    let line = within("the listening event", async {
        loop {
            let line = stderr.next_line().await.unwrap().expect("stderr ended");
            if line.contains("\"listening\"") {
                return line;
            }
        }
    })
    .await;
    let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(v["level"], "INFO", "{line}");
    assert_eq!(v["fields"]["control"], s.control.as_str(), "{line}");
    assert!(!line.contains(TOKEN));
    s.child.kill().await.unwrap();
}

#[tokio::test]
async fn every_interface_is_announced_with_loopback_and_the_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("flakestorm.yaml"),
        "proxy: {listen: '0.0.0.0:0'}\ncontrol: {listen: '127.0.0.1:0'}\n",
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["serve", "--allow-open-proxy"])
        .current_dir(d)
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let lines = within("the announcement", async {
        let mut lines = vec![];
        loop {
            let line = out.next_line().await.unwrap().expect("serve exited");
            let last = line.starts_with("flakestorm: point the agent at it");
            lines.push(line);
            if last {
                return lines;
            }
        }
    })
    .await;
    let text = lines.join("\n");
    assert!(
        !text.contains("0.0.0.0:") || text.contains("bound to every interface (0.0.0.0:"),
        "{text}"
    );
    assert!(
        lines[0].starts_with("flakestorm: proxy listening on 127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("HTTPS_PROXY=http://127.0.0.1:"), "{text}");
    assert!(
        text.contains("flakestorm: proxy bound to every interface (0.0.0.0:"),
        "{text}"
    );
    child.kill().await.unwrap();
}

#[test]
fn health_says_why_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::cli::closed_port();
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err) = flakestorm(&["health", "--ready", &url], dir.path());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("{url}/readyz")) && err.contains("flakestorm serve"),
        "{err}"
    );
    let (code, _, err) = flakestorm(&["health", "https://127.0.0.1:1"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an http:// URL"), "{err}");
}

#[tokio::test]
async fn readyz_is_503_with_the_reason_while_draining() {
    let p = common::start_proxy("").await;
    let url = format!("http://{}/readyz", p.daemon.control_addr);
    let client = common::control_client("");
    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), r#"{"status":"ready"}"#);
    p.daemon.ready.stopping();
    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let v: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["status"], "not_ready");
    assert!(
        v["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("shutting down"),
        "{v}"
    );
    let health = client
        .get(url.replace("readyz", "healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "liveness holds while draining");
    p.stop().await;
}

#[tokio::test]
async fn a_ca_given_as_files_is_used_as_it_is_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (cert, key) = ca_files(d, "good", -1, 30);
    let (_, other_key) = ca_files(d, "other", -1, 30);
    let (old_cert, old_key) = ca_files(d, "old", -30, -1);
    let ca_dir = d.join("certs");
    let configure = |c: &str, k: &str| {
        write_config(d, &format!("ca: {{cert_file: '{c}', key_file: '{k}'}}\n"));
        flakestorm(&["ca", "path"], d)
    };
    assert_eq!(
        configure(&cert, &key).1.trim(),
        cert,
        "ca path names the file"
    );
    let (code, _, err) = flakestorm(&["ca", "init"], d);
    assert_eq!(code, 1, "a CA given as files is never replaced");
    assert!(err.contains("used as it is"), "{err}");
    // A key that is not the certificate's: a start-up error naming both files.
    configure(&cert, &other_key);
    let (code, out, err) = within_exit(d).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("listening"), "{out}");
    assert!(
        err.contains("does not match") && err.contains(&cert) && err.contains(&other_key),
        "{err}"
    );
    // An expired CA: a start-up error saying when and what to do.
    configure(&old_cert, &old_key);
    let (code, _, err) = within_exit(d).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("expired on") && err.contains(&old_cert),
        "{err}"
    );
    // Only one of the pair: a config error naming the missing one.
    write_config(d, &format!("ca: {{cert_file: '{cert}'}}\n"));
    let (code, _, err) = flakestorm(&["validate"], d);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ca.key_file: required with ca.cert_file"),
        "{err}"
    );
    // The good pair: served as it is, the same after a restart, nothing made in ca.dir.
    configure(&cert, &key);
    let pem = std::fs::read_to_string(&cert).unwrap();
    for _ in 0..2 {
        let s = serve_with_env(d, &[], "warn", false, &[]).await;
        let got = common::get_text(&s.client(), s.url("/v1/ca.pem")).await;
        assert_eq!(got, pem);
        drop(s);
    }
    assert!(!ca_dir.exists(), "no CA was created in ca.dir");
}

/// `serve` in `d`, which must exit by itself (a refused start).
async fn within_exit(d: &std::path::Path) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .arg("serve")
        .current_dir(d)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output();
    let out = within("serve refuses to start", out).await.unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

#[tokio::test]
async fn the_bundle_holds_the_system_roots_and_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "ca: {dir: certs}\n");
    let (code, _, err) = flakestorm(&["ca", "bundle", "-o", "b.pem"], d);
    assert_eq!(code, 1, "no CA yet");
    assert!(err.contains("ca init"), "{err}");
    assert_eq!(flakestorm(&["ca", "init"], d).0, 0);
    let roots = common::fixture("test-ca.pem");
    let roots = roots.to_str().unwrap();
    let (code, out, err) = flakestorm(&["ca", "bundle", "-o", "b.pem", "--system-roots", roots], d);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 certificates"), "{out}");
    let bundle = std::fs::read_to_string(d.join("b.pem")).unwrap();
    let ca = std::fs::read_to_string(d.join("certs/ca.pem")).unwrap();
    let test_ca = std::fs::read_to_string(roots).unwrap();
    assert!(bundle.starts_with(ca.trim()), "the CA first");
    let body = |pem: &str| {
        pem.lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>()
    };
    assert!(body(&bundle).ends_with(&body(&test_ca)), "then the roots");
    assert!(!bundle.contains("PRIVATE KEY"));
    // `serve` writes it at each start when ca.bundle_file is set (the system's roots).
    if flakestorm::tls::system_roots().is_some() {
        write_config(d, "ca: {dir: certs, bundle_file: shared/bundle.pem}\n");
        std::fs::create_dir(d.join("shared")).unwrap();
        let s = serve_with_env(d, &[], "warn", false, &[]).await;
        let written = std::fs::read_to_string(d.join("shared/bundle.pem")).unwrap();
        assert!(written.starts_with(ca.trim()));
        assert!(
            written.matches("BEGIN CERTIFICATE").count() > 10,
            "the system roots too"
        );
        drop(s);
    }
}

#[tokio::test]
async fn rules_with_a_ttl_revert_on_a_live_daemon() {
    let p = common::start_proxy("").await;
    let control = p.control();
    let base = format!("http://{}", p.daemon.control_addr);
    let rules = r#"{"tool_faults": [{"tool": "*", "mode": "error", "error_code": 503}]}"#;
    let put = |uri: String| {
        control
            .put(uri)
            .header("content-type", "application/json")
            .body(rules)
            .send()
    };
    let r = put(format!("{base}/v1/chaos?ttl=1h1")).await.unwrap();
    assert_eq!(r.status(), 400);
    let v: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["error"]["errors"][0]["path"], "ttl", "{v}");
    let r = put(format!("{base}/v1/chaos?ttl=1s")).await.unwrap();
    assert_eq!(r.status(), 200);
    let metrics = format!("{base}/metrics");
    let text = common::get_text(&control, &metrics).await;
    assert!(text.contains("flakestorm_chaos_active 1\n"), "{text}");
    within("the rules revert after 1 s", async {
        loop {
            let text = common::get_text(&control, &metrics).await;
            if text.contains("flakestorm_chaos_expired_total 1\n") {
                assert!(text.contains("flakestorm_chaos_active 0\n"), "{text}");
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(p.daemon.chaos.rules().is_empty());
    p.stop().await;
}

/// Before any run, every kind's run series is exported at 0: the first failed run of a
/// sidecar is then an increase that `FlakestormRunFailed` and the dashboard's run
/// annotations see (a series that appears at 1 is no change to `increase()`).
#[tokio::test]
async fn run_series_are_exported_at_zero_before_any_run() {
    let p = common::start_proxy("").await;
    let metrics = format!("http://{}/metrics", p.daemon.control_addr);
    let text = common::get_text(&p.control(), &metrics).await;
    for want in [
        "flakestorm_runs_total{kind=\"ci\",status=\"failed\"} 0\n",
        "flakestorm_runs_total{kind=\"contract\",status=\"not_tested\"} 0\n",
        "flakestorm_runs_started_total{kind=\"ci\"} 0\n",
        "flakestorm_runs_running{kind=\"replay\"} 0\n",
    ] {
        assert!(text.contains(want), "missing {want} in {text}");
    }
    assert!(!text.contains("status=\"queued\""), "{text}");
    p.stop().await;
}

/// A sidecar's control API reached on loopback from another container of its pod (or
/// compose's `network_mode: service:…`): loopback, yet not the client's file system, and
/// listening off loopback, so it reads no config path. `--server` then sends the config
/// inline and the run goes ahead.
#[tokio::test]
async fn server_runs_reach_a_sidecar_listening_off_loopback_through_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    std::fs::write(
        d.join("serve.yaml"),
        "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '0.0.0.0:0', token: '${FLAKESTORM_API_TOKEN}'}\n",
    )
    .unwrap();
    let env = [("FLAKESTORM_API_TOKEN", TOKEN)];
    let s = serve_with_env(&d, &["-c", "serve.yaml"], "warn", false, &env).await;
    let agent = common::origin::json(r#"{"result": "an answer"}"#).await;
    std::fs::write(
        d.join("run.yaml"),
        format!(
            "agent: {{endpoint: '{}'}}\ngolden_prompts: [hi]\ncontract:\n  name: c\n  \
             invariants: [{{id: answers, type: output_not_empty}}]\n  chaos_matrix: [{{name: no-chaos}}]\n",
            agent.http_url("/invoke")
        ),
    )
    .unwrap();
    let url = format!("http://{}", s.control);
    let run = tokio::task::spawn_blocking(move || {
        flakestorm_env(
            &["contract", "run", "-c", "run.yaml", "--server", &url],
            &d,
            &[("FLAKESTORM_API_TOKEN", TOKEN)],
        )
    });
    let (code, out, err) = within("the run on the sidecar", run).await.unwrap();
    assert!(!err.contains("refused"), "{err}");
    assert!(err.contains("submitted to http://127.0.0.1:"), "{err}");
    assert!(out.contains("score"), "{out}\n{err}");
    assert_ne!(code, -1);
    drop(s);
}

/// The dead-man's switch says so in the daemon's log when it fires (a JSON line a log
/// shipper can alert on), not only in the metric.
#[tokio::test]
async fn an_expired_ttl_is_a_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "");
    let mut s = serve_with_env(d, &["--log-format", "json"], "info", true, &[]).await;
    let rules = r#"{"tool_faults": [{"tool": "*", "mode": "error", "error_code": 503}]}"#;
    let r = s
        .client()
        .put(s.url("/v1/chaos?ttl=1s"))
        .header("content-type", "application/json")
        .body(rules)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let stderr = s.stderr.as_mut().unwrap();
    let line = within("the expiry is logged", async {
        loop {
            let line = stderr.next_line().await.unwrap().expect("stderr ended");
            if line.contains("expired") {
                return line;
            }
        }
    })
    .await;
    let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(v["level"], "WARN", "{line}");
    assert_eq!(v["fields"]["ttl_s"], 1, "{line}");
    let message = v["fields"]["message"].as_str().unwrap();
    assert!(
        message.contains("ttl of 1s expired: reverted to the baseline rules (0 rules)"),
        "{message}"
    );
    s.child.kill().await.unwrap();
}

/// `health --wait`: a Job's init container started before the sidecar it waits for.
#[tokio::test]
async fn health_waits_for_a_daemon_that_starts_later() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let port = common::cli::agent_port();
    let url = format!("http://127.0.0.1:{port}");
    let waiting = tokio::process::Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["health", "--ready", "--wait", "20", &url])
        .kill_on_drop(true)
        .output();
    let waiting = tokio::spawn(waiting);
    std::fs::write(
        d.join("flakestorm.yaml"),
        format!("proxy: {{listen: '127.0.0.1:0'}}\ncontrol: {{listen: '127.0.0.1:{port}'}}\n"),
    )
    .unwrap();
    let s = serve_with_env(&d, &[], "warn", false, &[]).await;
    let out = within("health --wait sees it ready", waiting)
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("/readyz: ready"), "{text}");
    drop(s);
    // Nothing there: it gives up when the time is up, saying how long it waited.
    let (code, _, err) = flakestorm(&["health", "--wait", "1", &url], &d);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("(waited 1s)"), "{err}");
}
