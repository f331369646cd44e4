//! `flakestorm wrap` against a daemon (docs/mcp.md, "stdio servers"): the binary started
//! as an MCP client starts it, with the daemon's wrap variables, in front of a plain stdio
//! server (a shell script): each message becomes an exchange of the declared stdio tool
//! (`transport: stdio`), a line the server writes that is not JSON-RPC is journaled as
//! `(not json-rpc)`, a server that dies mid-call leaves the waiting request's exchange
//! with the bridge's error, a server that never starts leaves the client's first message
//! journaled with why, and signals reach the server.

mod common;

use common::*;
use flakestorm::exchange::{Exchange, Outcome};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const WRAP: &str = env!("CARGO_BIN_EXE_flakestorm");

/// Answers `{"echo": METHOD}` to each request after writing a non-JSON line; the second
/// request kills it (exit 3) before any answer, after a word on stderr.
const ODD_SERVER: &str = r#"
echo 'server: up' >&2
echo 'not json-rpc at all'
n=0
while IFS= read -r line; do
  case "$line" in *'"id"'*) ;; *) continue ;; esac
  n=$((n+1))
  if [ "$n" -eq 2 ]; then echo 'server: dying' >&2; exit 3; fi
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  method=$(printf '%s' "$line" | sed 's/.*"method":"\([^"]*\)".*/\1/')
  printf '{"jsonrpc":"2.0","id":%s,"result":{"echo":"%s"}}\n' "$id" "$method"
done
"#;

fn wrap(p: &TestProxy, server: &[&str]) -> Child {
    let dir = p
        .daemon
        .wrap_dir
        .as_ref()
        .expect("the daemon has a wrap directory");
    Command::new(WRAP)
        .args(["wrap", "--tool", "files", "--"])
        .args(server)
        .env("FLAKESTORM_WRAP_PROXY", p.url())
        .env("FLAKESTORM_WRAP_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

fn rpc(id: u64, method: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"}}\n")
}

fn stdio_exchanges(p: &TestProxy) -> Vec<std::sync::Arc<Exchange>> {
    let all = p.daemon.journal.all();
    let stdio = all.iter().filter(|e| {
        e.mcp
            .as_ref()
            .is_some_and(|m| m.transport.as_deref() == Some("stdio"))
    });
    stdio.cloned().collect()
}

fn config() -> &'static str {
    "tools:\n  - {name: files, protocol: mcp, transport: stdio}\n"
}

#[tokio::test]
async fn each_message_is_an_exchange_and_a_dying_server_is_journaled_not_hung() {
    let p = start_proxy(config()).await;
    let mut w = wrap(&p, &["sh", "-c", ODD_SERVER]);
    let mut stdin = w.stdin.take().unwrap();
    let mut out = BufReader::new(w.stdout.take().unwrap()).lines();
    stdin.write_all(rpc(1, "ping").as_bytes()).await.unwrap();
    let first = within("the odd line", out.next_line()).await.unwrap();
    assert_eq!(first.as_deref(), Some("not json-rpc at all"));
    let answer = within("the answer", out.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        r#"{"jsonrpc":"2.0","id":1,"result":{"echo":"ping"}}"#
    );
    stdin
        .write_all(rpc(2, "tools/list").as_bytes())
        .await
        .unwrap();
    let end = within("stdout closing", out.next_line()).await.unwrap();
    assert_eq!(end, None, "the server died: no answer is invented");
    let status = within("the wrap's exit", w.wait()).await.unwrap();
    assert_eq!(status.code(), Some(3), "the server's exit code");
    let mut err = String::new();
    let mut stderr = w.stderr.take().unwrap();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err)
        .await
        .unwrap();
    assert!(
        err.contains("server: up") && err.contains("server: dying"),
        "{err}"
    );

    // ping, the odd line and tools/list: the last is recorded as its answer ends.
    within("the journal", p.daemon.journal.wait_for(3)).await;
    let ex = stdio_exchanges(&p);
    let methods: Vec<&str> = ex
        .iter()
        .map(|e| e.mcp.as_ref().unwrap().method.as_str())
        .collect();
    assert!(
        methods.contains(&"ping") && methods.contains(&"tools/list"),
        "{methods:?}"
    );
    let odd = ex
        .iter()
        .find(|e| e.mcp.as_ref().unwrap().method == "(not json-rpc)")
        .expect("the odd line journaled");
    let note = odd.mcp.as_ref().unwrap().note.clone().unwrap_or_default();
    assert!(note.contains("not JSON-RPC on stdout"), "{note}");
    assert!(ex.iter().all(|e| matches!(
        &e.target,
        flakestorm::exchange::Target::Tool { name } if name == "files"
    )));
    let died = ex
        .iter()
        .find(|e| e.mcp.as_ref().unwrap().method == "tools/list")
        .unwrap();
    let Outcome::Response { response, .. } = &died.outcome else {
        panic!("{:?}", died.outcome)
    };
    assert_eq!(
        response.status, 502,
        "the bridge's answer for a dead server"
    );
    p.stop().await;
}

#[tokio::test]
async fn a_server_that_never_starts_is_journaled_and_exits_127() {
    let p = start_proxy(config()).await;
    let mut w = wrap(&p, &["/nonexistent/mcp-server"]);
    let mut stdin = w.stdin.take().unwrap();
    stdin
        .write_all(rpc(1, "initialize").as_bytes())
        .await
        .unwrap();
    let status = within("the wrap's exit", w.wait()).await.unwrap();
    assert_eq!(status.code(), Some(127));
    within("the journal", p.daemon.journal.wait_for(1)).await;
    let ex = stdio_exchanges(&p);
    assert_eq!(ex.len(), 1, "{ex:?}");
    assert_eq!(ex[0].mcp.as_ref().unwrap().method, "initialize");
    let Outcome::Response { response, .. } = &ex[0].outcome else {
        panic!("{:?}", ex[0].outcome)
    };
    assert_eq!(response.status, 502);
    let dir = p.daemon.wrap_dir.clone().unwrap();
    p.stop().await;
    assert!(!dir.exists(), "the wrap directory goes with the daemon");
}

#[tokio::test]
async fn signals_are_passed_on_to_the_server() {
    let p = start_proxy(config()).await;
    let server = "trap 'echo server: got TERM >&2; exit 42' TERM; echo ready; \
                  while :; do sleep 0.05; done";
    let mut w = wrap(&p, &["sh", "-c", server]);
    let mut out = BufReader::new(w.stdout.take().unwrap()).lines();
    let ready = within("the server up", out.next_line()).await.unwrap();
    assert_eq!(ready.as_deref(), Some("ready"));
    let pid = rustix::process::Pid::from_raw(w.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = within("the wrap's exit", w.wait()).await.unwrap();
    assert_eq!(
        status.code(),
        Some(42),
        "the server's own exit after its trap"
    );
    p.stop().await;
}
