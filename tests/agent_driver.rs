//! The driver's calls to the agent under test: template, headers, response path, retries,
//! timeouts, reset, pre-flight, and starting the agent with the proxy environment.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::origin::{self, text};
use flakestorm::agent::{Agent, AgentProcess, InvokeError, proxy_env, wait_ready, with_user_env};
use flakestorm::config::AgentSpec;
use http_body_util::BodyExt;

fn spec(endpoint: String) -> AgentSpec {
    serde_json::from_value(serde_json::json!({"endpoint": endpoint})).unwrap()
}

#[tokio::test]
async fn invokes_with_the_template_headers_and_path() {
    let o = origin::start(None, |req: http::Request<hyper::body::Incoming>| async move {
        let auth = req.headers().get("x-team").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&req.into_body().collect().await.unwrap().to_bytes()).unwrap();
        text(&serde_json::json!({"data": {"reply": format!("{auth}:{}", body["q"].as_str().unwrap())}}).to_string())
    })
    .await;
    let mut s = spec(o.http_url("/invoke"));
    s.request_template = r#"{"q": "{prompt}"}"#.into();
    s.response_path = "$.data.reply".into();
    s.headers.insert("x-team".into(), "red".into());
    let agent = Agent::new(&s.compile().unwrap(), 0).unwrap();
    agent.preflight().await.unwrap();
    let reply = agent
        .invoke("what is \"2+2\"?\n", &Default::default())
        .await;
    assert_eq!(reply.answer.unwrap(), "red:what is \"2+2\"?\n");
    assert_eq!((reply.status, reply.attempts), (Some(200), 1));
}

/// An HTTP 5xx is the agent's answer (none), judged as it is: never re-invoked, whatever
/// `advanced.retries` says, so the traffic checks see the agent's own behaviour only.
#[tokio::test]
async fn server_errors_are_answers_and_never_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let o = origin::start(None, move |_req| {
        c.fetch_add(1, Ordering::SeqCst);
        async move {
            let mut r = text("busy");
            *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            r
        }
    })
    .await;
    let reply = Agent::new(&spec(o.http_url("/")).compile().unwrap(), 2)
        .unwrap()
        .invoke("hi", &Default::default())
        .await;
    assert_eq!(
        reply.answer.unwrap_err().to_string(),
        "agent answered HTTP 503: busy"
    );
    assert_eq!((reply.status, reply.attempts), (Some(503), 1));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "invoked once");
    assert!(reply.retried.is_empty());
}

/// A connection closed before any response byte is retried, on a fresh connection, and
/// every attempt is reported; `mark` tells a run where each attempt's traffic starts.
#[tokio::test]
async fn failures_before_any_response_byte_are_retried_on_a_fresh_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let conns = Arc::new(AtomicU32::new(0));
    let seen = conns.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = listener.accept().await {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            if n > 0 {
                let body = r#"{"result": "ok"}"#;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            }
            // The first connection is closed without a byte of response.
        }
    });
    let mut marks = vec![];
    let reply = Agent::new(&spec(format!("http://{addr}/")).compile().unwrap(), 2)
        .unwrap()
        .invoke_marked("hi", &Default::default(), |n| marks.push(n))
        .await;
    assert_eq!((reply.answer.unwrap().as_str(), reply.attempts), ("ok", 2));
    assert_eq!(marks, [1, 2]);
    assert_eq!(reply.retried.len(), 1);
    assert!(reply.retried[0].error.before_response());
    assert_eq!(
        conns.load(Ordering::SeqCst),
        2,
        "each attempt on its own connection"
    );
}

#[tokio::test]
async fn a_missing_path_says_where_it_looked() {
    let o = origin::fixed(None, r#"{"output": "x"}"#).await;
    let reply = Agent::new(&spec(o.http_url("/")).compile().unwrap(), 0)
        .unwrap()
        .invoke("hi", &Default::default())
        .await;
    assert_eq!(
        reply.answer.unwrap_err().to_string(),
        r#"path `result` not found in response: {"output": "x"}"#
    );
}

/// Paused time: a hanging agent times out after `agent.timeout` and the run goes on.
#[tokio::test(start_paused = true)]
async fn a_hanging_agent_times_out() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let mut s = spec(format!("http://{addr}/"));
    s.timeout = 5000;
    let reply = Agent::new(&s.compile().unwrap(), 1)
        .unwrap()
        .invoke("hi", &Default::default())
        .await;
    assert_eq!(reply.answer, Err(InvokeError::Timeout { ms: 5000 }));
    assert_eq!(
        reply.attempts, 1,
        "a timeout is the agent's answer: the agent may still be working on it"
    );
}

#[tokio::test]
async fn an_unreachable_agent_fails_preflight_with_url_and_os_error() {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], common::ports::closed_port()));
    let agent = Agent::new(&spec(format!("http://{addr}/invoke")).compile().unwrap(), 0).unwrap();
    let err = agent.preflight().await.unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("agent at http://{addr}/invoke is unreachable: ")),
        "{err}"
    );
    assert!(err.to_lowercase().contains("refused"), "{err}");
}

#[tokio::test]
async fn reset_is_posted_before_a_case() {
    let o = origin::fixed(None, "ok").await;
    let mut s = spec(o.http_url("/invoke"));
    s.reset_endpoint = Some(o.http_url("/reset"));
    Agent::new(&s.compile().unwrap(), 0)
        .unwrap()
        .reset()
        .await
        .unwrap();
    let seen = &o.log.all()[0];
    assert_eq!(
        (seen.method.as_str(), seen.uri.as_str()),
        ("POST", "/reset")
    );
}

/// What `cmd`'s shell prints of the environment `env`.
async fn seen_env(env: &[(String, String)], vars: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env.txt");
    let tmp = dir.path().join("env.tmp");
    let cmd = format!(
        "echo \"{vars}\" > {0} && mv {0} {1} && sleep 30",
        tmp.display(),
        out.display()
    );
    let mut p = AgentProcess::start(&cmd, env, None).unwrap();
    let written = || {
        let out = out.clone();
        async move { out.exists() }
    };
    wait_ready(Some(&mut p), "env.txt", Duration::from_secs(10), written)
        .await
        .unwrap();
    p.stop(Duration::from_secs(5)).await;
    std::fs::read_to_string(&out).unwrap().trim().to_string()
}

#[tokio::test]
async fn the_agent_command_gets_the_proxy_environment() {
    let addr = "127.0.0.1:4567".parse().unwrap();
    let env = proxy_env(
        addr,
        std::path::Path::new("/tmp/ca.pem"),
        Some(("agent", "p@ss:w/rd")),
    );
    let got = seen_env(
        &env,
        "$HTTPS_PROXY|$SSL_CERT_FILE|$NODE_EXTRA_CA_CERTS|[$NO_PROXY][$no_proxy]|$NODE_USE_ENV_PROXY",
    )
    .await;
    assert_eq!(
        got, "http://agent:p%40ss%3Aw%2Frd@127.0.0.1:4567|/tmp/ca.pem|/tmp/ca.pem|[][]|1",
        "proxy.users credentials ride in the proxy URL, percent-encoded; Node reads the \
         proxy variables"
    );
}

#[tokio::test]
async fn the_ca_path_is_absolute_and_no_proxy_is_one_setting() {
    let addr = "127.0.0.1:4567".parse().unwrap();
    // A CA named relative to flakestorm's folder reaches an agent that changes its own.
    let env = proxy_env(addr, std::path::Path::new("certs/ca.pem"), None);
    let cwd = std::env::current_dir().unwrap();
    let want = cwd.join("certs/ca.pem").display().to_string();
    assert_eq!(
        seen_env(&env, "$SSL_CERT_FILE|$NODE_EXTRA_CA_CERTS").await,
        format!("{want}|{want}")
    );
    // `agent.env` sets NO_PROXY in either spelling: both carry it (undici reads the
    // lowercase one first, which flakestorm had left empty).
    for name in ["NO_PROXY", "no_proxy"] {
        let user = [(name.to_string(), "internal.example".to_string())];
        let env = with_user_env(
            proxy_env(addr, std::path::Path::new("/ca.pem"), None),
            &user,
        );
        let got = seen_env(&env, "[$NO_PROXY][$no_proxy]").await;
        assert_eq!(got, "[internal.example][internal.example]", "{name}");
    }
    // Other variables of agent.env still override the proxy's.
    let user = [("SSL_CERT_FILE".to_string(), "/mine.pem".to_string())];
    let env = with_user_env(
        proxy_env(addr, std::path::Path::new("/ca.pem"), None),
        &user,
    );
    assert_eq!(
        seen_env(&env, "$SSL_CERT_FILE|[$NO_PROXY]").await,
        "/mine.pem|[]"
    );
}

#[tokio::test]
async fn an_agent_that_dies_before_ready_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/agent.log");
    let cmd = "echo starting; echo 'ImportError: no module named agent' >&2; exit 3";
    let mut p = AgentProcess::start(cmd, &[], Some(&log)).unwrap();
    let never = || async { false };
    let err = wait_ready(Some(&mut p), "ready", Duration::from_secs(10), never)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("exited") && err.contains("exit status: 3"),
        "{err}"
    );
    assert!(
        err.contains("ImportError: no module named agent") && err.contains("agent.log"),
        "the end of the agent's log is shown: {err}"
    );
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(written, "starting\nImportError: no module named agent\n");
}

/// Dropping the handle (an interrupted run) stops what `sh -c` started, not just the shell.
#[tokio::test]
async fn dropping_the_agent_stops_its_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let cmd = format!(
        "sleep 300 & echo $! > {0}.tmp && mv {0}.tmp {0}; wait",
        pid_file.display()
    );
    let mut p = AgentProcess::start(&cmd, &[], None).unwrap();
    let started = || {
        let f = pid_file.clone();
        async move { f.exists() }
    };
    wait_ready(Some(&mut p), "child.pid", Duration::from_secs(10), started)
        .await
        .unwrap();
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    // Running, as opposed to gone or a zombie waiting to be reaped.
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(") ")
                .next()
                .is_some_and(|s| !s.starts_with('Z'))
        })
    };
    assert!(alive(&pid), "the grandchild runs");
    drop(p);
    let mut gone = false;
    for _ in 0..100 {
        if !alive(&pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the sleep in the agent's group was stopped");
}
