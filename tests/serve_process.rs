//! `flakestorm serve` as a process (issue #9): the open-proxy rule whichever layer named the
//! listen address, SIGHUP logged and ignored, a second SIGTERM during the drain exits at
//! once, and a password in a URL reaches no log line even at debug level.

mod common;

use std::process::Stdio;

use common::cli::{flakestorm_env, write_config};

use common::origin;
use common::serve::Serve;
use common::within;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// `flakestorm` with `args` and `env` in `dir`, killed (and the test failed) if it does not
/// exit by itself: an open proxy that starts would otherwise serve forever.
async fn exits(
    args: &[&str],
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output();
    let out = within(&format!("{args:?} exits"), out).await.unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

#[tokio::test]
async fn an_open_proxy_is_refused_from_file_env_or_flag_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "");
    let file = d.join("open.yaml");
    std::fs::write(
        &file,
        "proxy: {listen: '0.0.0.0:0'}\ncontrol: {listen: '127.0.0.1:0'}\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        (&["serve", "-c", file], &[]),
        (&["serve"], &[("FLAKESTORM_PROXY__LISTEN", "0.0.0.0:0")]),
        (&["serve", "--listen", "[::]:0"], &[]),
    ];
    for (args, env) in cases {
        let (code, out, err) = exits(args, d, env).await;
        assert_eq!(code, 1, "{args:?} {env:?}: {out}{err}");
        assert!(!out.contains("proxy listening"), "{out}");
        for needle in ["proxy.listen", "proxy.users", "--allow-open-proxy"] {
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
    // Run commands start a proxy too: same rule, same flag.
    let run = d.join("run.yaml");
    let port = common::cli::closed_port();
    std::fs::write(
        &run,
        format!(
            "proxy: {{listen: '0.0.0.0:0'}}\ncontrol: {{listen: '127.0.0.1:0'}}\n\
             agent: {{endpoint: 'http://127.0.0.1:{port}/invoke'}}\ngolden_prompts: [hi]\n\
             chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\ninvariants: [{{type: output_not_empty}}]\n"
        ),
    )
    .unwrap();
    let run = run.to_str().unwrap();
    let (code, out, err) = exits(&["run", "--chaos-only", "-c", run], d, &[]).await;
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("--allow-open-proxy"), "{err}");
    for cmd in [
        &["contract", "run"][..],
        &["contract", "score"],
        &["ci"],
        &["run"],
    ] {
        let (_, out, _) = flakestorm_env(&[cmd, &["--help"]].concat(), d, &[]);
        assert!(out.contains("--allow-open-proxy"), "{cmd:?}: {out}");
    }
}

async fn serve(dir: &std::path::Path, extra: &str, log: &str) -> Serve {
    write_config(dir, extra);
    common::serve::serve(dir, &[], log, true).await
}

/// What the tests here do with a running `serve`.
trait Signals {
    fn signal(&self, name: &str);
    /// Reads stderr until a line containing `needle`; panics if it ends first.
    async fn wait_for_line(&mut self, needle: &str) -> String;
}

impl Signals for Serve {
    fn signal(&self, name: &str) {
        let pid = self.child.id().unwrap().to_string();
        let ok = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name}");
    }

    async fn wait_for_line(&mut self, needle: &str) -> String {
        within(needle, async {
            loop {
                let stderr = self.stderr.as_mut().expect("serve's stderr is piped");
                match stderr.next_line().await.unwrap() {
                    Some(l) if l.contains(needle) => return l,
                    Some(_) => {}
                    None => panic!("stderr ended before `{needle}`"),
                }
            }
        })
        .await
    }
}

#[tokio::test]
async fn sighup_is_ignored_and_a_second_signal_forces_the_exit_during_a_drain() {
    let dir = tempfile::tempdir().unwrap();
    // An upstream that never answers keeps one exchange in flight for the drain.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let mut s = serve(dir.path(), "", "info").await;

    s.signal("HUP");
    s.wait_for_line("SIGHUP ignored").await;

    let mut client = tokio::net::TcpStream::connect(&s.proxy).await.unwrap();
    client
        .write_all(
            format!("GET http://{silent_addr}/ HTTP/1.1\r\nHost: {silent_addr}\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    // The request reached the upstream: the proxy is alive after SIGHUP, and busy.
    let (_held, _) = within("the request reaches the upstream", silent.accept())
        .await
        .unwrap();

    s.signal("TERM");
    s.wait_for_line("shutting down").await;
    // drain_timeout_ms defaults to 10 s and the response timeout to 600 s: only the
    // second signal ends this process within `within`'s bound.
    s.signal("TERM");
    let status = within("a forced exit", s.child.wait()).await.unwrap();
    assert!(!status.success(), "{status:?}");
    s.wait_for_line("second signal").await;
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest).await;
}

#[tokio::test]
async fn a_password_in_a_url_reaches_no_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = origin::fixed(None, "hi").await;
    let mut s = serve(dir.path(), "", "debug").await;
    let a = o.addr;
    let mut client = tokio::net::TcpStream::connect(&s.proxy).await.unwrap();
    client
        .write_all(
            format!(
                "GET http://agent:s3cret-pw@{a}/x HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut reply = String::new();
    within("the reply", client.read_to_string(&mut reply))
        .await
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    s.signal("TERM");
    within("exit", s.child.wait()).await.unwrap();
    let mut log = String::new();
    while let Some(l) = s.stderr.as_mut().unwrap().next_line().await.unwrap() {
        log.push_str(&l);
        log.push('\n');
    }
    // Debug logging was on (hyper's pool names the upstream), and no line has the secret.
    assert!(log.contains(&a.to_string()), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
}

/// A supervisor that closed serve's stdout: the address lines cannot be written, serve
/// says so on stderr and keeps serving (it used to panic in `println!`).
#[tokio::test]
async fn serve_keeps_serving_when_its_stdout_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let o = origin::fixed(None, "hi").await;
    let port = common::cli::agent_port();
    write_config(dir.path(), "");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = within("the stdout warning", async {
        loop {
            let l = stderr.next_line().await.unwrap().expect("serve exited");
            if l.contains("cannot write to stdout") {
                return l;
            }
        }
    })
    .await;
    assert!(line.contains("serving anyway"), "{line}");
    let a = o.addr;
    let mut client = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    client
        .write_all(
            format!("GET http://{a}/x HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut reply = String::new();
    within("the reply", client.read_to_string(&mut reply))
        .await
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

/// On one CPU (a sidecar's CPU limit, or `TOKIO_WORKER_THREADS=1`) the daemon runs on the
/// current-thread scheduler: everything shares the one thread, so any wait that blocks it
/// would hang the proxy, a run or the exit. The proxy forwards and intercepts, a run drives
/// its agent to the end and is stored, and SIGTERM exits 0.
#[tokio::test]
async fn one_scheduler_thread_proxies_intercepts_runs_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let plain = origin::fixed(None, "plain").await;
    let tls = origin::fixed(Some(common::H1), "secure").await;
    let agent = origin::fixed(None, "an answer").await;
    let ca = common::fixture("test-ca.pem");
    let yaml = format!(
        "proxy: {{listen: '127.0.0.1:0', upstream_ca_file: '{}'}}\n\
         control: {{listen: '127.0.0.1:0'}}\n",
        ca.display()
    );
    std::fs::write(dir.path().join("flakestorm.yaml"), yaml).unwrap();
    let one = [("TOKIO_WORKER_THREADS", "1")];
    let mut s =
        common::serve::serve_with_env(dir.path(), &[], "flakestorm=debug", true, &one).await;
    s.wait_for_line("scheduler: current-thread").await;
    let pem = std::fs::read_to_string(dir.path().join("certs/ca.pem")).unwrap();
    let via = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{}", s.proxy)).unwrap())
        .use_preconfigured_tls(common::tls_client(&pem, common::H1))
        .build()
        .unwrap();
    for (url, body) in [
        (plain.http_url("/x"), "plain"),
        (tls.https_url("/x"), "secure"),
    ] {
        let r = within(&url, via.get(&url).send()).await.unwrap();
        assert_eq!(r.status(), 200, "{url}");
        assert_eq!(r.text().await.unwrap(), body, "{url}");
    }
    let id = s
        .submit("chaos", &common::serve::one_at_a_time(&agent))
        .await;
    drop(s.until_event(&id, "done").await);
    let runs = s.client().get(s.url("/v1/runs")).send().await.unwrap();
    let runs: serde_json::Value = serde_json::from_str(&runs.text().await.unwrap()).unwrap();
    assert_eq!(runs["runs"][0]["id"], id.as_str(), "{runs}");
    assert_eq!(runs["runs"][0]["done"], 3, "{runs}");
    assert_ne!(runs["runs"][0]["status"], "running", "{runs}");
    s.signal("TERM");
    let status = within("exit", s.child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
}

/// A thread count that is not a whole number above 0 is refused by name, with exit status 2
/// (tokio, left to read it, panics).
#[tokio::test]
async fn a_bad_worker_thread_count_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "");
    for bad in ["0", "two", "-1"] {
        let env = [("TOKIO_WORKER_THREADS", bad)];
        let (code, _, err) = exits(&["serve"], dir.path(), &env).await;
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains(&format!(
                "TOKIO_WORKER_THREADS must be a number of threads above 0, not `{bad}`"
            )),
            "{bad}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
