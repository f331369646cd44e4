//! `flakestorm wrap [--tool NAME] -- COMMAND [ARGS…]`: an MCP server that speaks the stdio
//! transport, put through the run's proxy. Written in the agent's MCP client config in
//! place of the server's command, it starts the server (`server`), serves it as a
//! Streamable HTTP bridge in the proxy's wrap directory (`bridge`), and POSTs each line the
//! client writes through the agent's lane to that bridge (`relay`), so the proxy's MCP
//! rules, checks and journal take stdio servers as they take HTTP ones (`mcp::stdio`).
//!
//! Started outside a run (no `FLAKESTORM_WRAP_PROXY` and `FLAKESTORM_WRAP_DIR` in its
//! environment or its ancestors': `inherit`), or with a proxy it cannot reach, it relays untouched and says so once on
//! stderr. The server's stderr is the wrap's; its exit code is the wrap's; SIGTERM, SIGINT,
//! SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to it.

mod bridge;
mod inherit;
mod out;
mod relay;
mod server;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::task::TaskTracker;

use self::bridge::{Behind, Bridge};
use self::out::Out;
use self::relay::{Posted, Through};
use self::server::{OnOther, Server, trim_newline};
use crate::mcp::MAX_MESSAGE;
use crate::mcp::stdio::{ENV_DIR, ENV_PROXY, Line, new_bridge_id, valid_tool_name};

/// How long the server's last lines, and the messages in flight, may take once it exited
/// (a child of its own that keeps the pipe open must not hold the wrap).
const LAST_LINES: Duration = Duration::from_secs(2);

/// The exit code of a server command that could not start (as a shell says it).
const NOT_STARTED: i32 = 127;

/// How long a wrap whose server could not start waits for the client's first message, to
/// journal it with why (clients write `initialize` at once).
const FIRST_MESSAGE: Duration = Duration::from_secs(10);

/// Runs the wrap until the server exits; its exit code.
pub async fn run(tool: Option<String>, command: Vec<String>) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        say("no server command: `flakestorm wrap [--tool NAME] -- COMMAND [ARGS…]`");
        return ExitCode::from(2);
    };
    let tool = tool.unwrap_or_else(|| default_tool(program));
    if !valid_tool_name(&tool) {
        say(&format!(
            "--tool `{tool}`: a tool name is letters, digits, `-`, `_` and `.` (at most 64), \
             as `tools[].name` in the config"
        ));
        return ExitCode::from(2);
    }
    let out = Out::stdout();
    let id = new_bridge_id();
    let through = through(&id, &tool);
    let on_other: OnOther = {
        let through = through.clone();
        Arc::new(move |line: Bytes, read: &Line| {
            if let (Some((t, _)), Line::NotJson) = (&through, read) {
                let t = t.clone();
                tokio::spawn(async move { t.post(line, true).await });
            }
        })
    };
    let (server, child, reading) = match Server::start(program, args, out.clone(), on_other) {
        Ok(started) => started,
        Err(e) => {
            let why = format!("the MCP server command `{program}` could not start: {e}");
            say(&why);
            if let Some((t, dir)) = &through {
                let journaled = journal_not_started(t, dir, &id, why);
                let _ = tokio::time::timeout(FIRST_MESSAGE, journaled).await;
            }
            std::process::exit(NOT_STARTED);
        }
    };
    // The bridge lives as long as the wrap: dropped at the end, its socket goes.
    let mut _bridge = None;
    let through = through.and_then(|(t, dir)| {
        match Bridge::bind(&dir, &id, Behind::Server(server.clone())) {
            Ok(b) => {
                _bridge = Some(b);
                Some(t)
            }
            Err(e) => {
                say(&format!(
                    "cannot open the stdio bridge in {}: {e}; relaying untouched",
                    dir.display()
                ));
                None
            }
        }
    });
    let deliveries = TaskTracker::new();
    tokio::spawn(pump(server, through, out, deliveries.clone()));
    let status = forward_signals_until_exit(child).await;
    // The server's last lines, and the answers (or the bridge's word that it died) of the
    // messages in flight, so each is journaled as it ended, not as a client that left.
    deliveries.close();
    let last = async { tokio::join!(reading, deliveries.wait()) };
    let _ = tokio::time::timeout(LAST_LINES, last).await;
    drop(_bridge);
    // Exit now: a runtime shutting down waits for the blocking read of stdin, which the
    // client may keep open after the server is gone.
    std::process::exit(exit_code(status))
}

/// The proxy to go through, from what a run put in the agent's environment.
fn through(id: &str, tool: &str) -> Option<(Arc<Through>, PathBuf)> {
    let (Some(proxy), Some(dir)) = (inherit::var(ENV_PROXY), inherit::var(ENV_DIR)) else {
        say(&format!(
            "not started by a flakestorm run ({ENV_PROXY} and {ENV_DIR} are not set): \
             relaying untouched, no MCP rule applies"
        ));
        return None;
    };
    match Through::new(&proxy, id, tool) {
        Ok(t) => Some((Arc::new(t), PathBuf::from(dir))),
        Err(e) => {
            say(&format!("{ENV_PROXY}: {e}; relaying untouched"));
            None
        }
    }
}

/// A server that never started is still an exchange of the case: the client's first
/// message goes to a bridge that answers why, and the proxy journals it.
async fn journal_not_started(t: &Through, dir: &std::path::Path, id: &str, why: String) {
    let Ok(_bridge) = Bridge::bind(dir, id, Behind::NotStarted(why)) else {
        return;
    };
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut first = Vec::new();
    if let Ok(n) = stdin.read_until(b'\n', &mut first).await
        && n > 0
    {
        let line = Bytes::copy_from_slice(trim_newline(&first));
        let _ = t.post(line, false).await;
    }
}

/// Reads the client's lines until its stdin closes, each sent through the proxy (or to
/// the server directly), then closes the server's stdin once every message is delivered.
async fn pump(server: Arc<Server>, through: Option<Arc<Through>>, out: Out, inflight: TaskTracker) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let direct = Arc::new(AtomicBool::new(through.is_none()));
    let said_large = AtomicBool::new(false);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match stdin.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = Bytes::copy_from_slice(trim_newline(&buf));
        if line.is_empty() {
            continue;
        }
        if line.len() > MAX_MESSAGE && !said_large.swap(true, Ordering::Relaxed) {
            say(&format!(
                "a message over {MAX_MESSAGE} bytes: relayed, but the proxy does not read it \
                 (no MCP rule applies to it; journaled as `(unread)`)"
            ));
        }
        let (server, through, out, direct) =
            (server.clone(), through.clone(), out.clone(), direct.clone());
        inflight.spawn(async move { deliver(&server, through, &out, &direct, line).await });
    }
    inflight.close();
    inflight.wait().await;
    server.close_stdin().await;
}

/// One client message to the server: through the proxy, or straight when there is none.
async fn deliver(
    server: &Server,
    through: Option<Arc<Through>>,
    out: &Out,
    direct: &AtomicBool,
    line: Bytes,
) {
    let read = Line::read(&line);
    if let Some(t) = through.filter(|_| !direct.load(Ordering::Acquire)) {
        match t.post(line.clone(), false).await {
            Ok(Posted::Lines(lines)) => {
                for l in lines {
                    out.line(&l).await;
                }
                return;
            }
            Ok(Posted::Nothing | Posted::Exited) => return,
            Ok(Posted::Status(status, body)) => {
                if let Line::Request { id } = read {
                    out.line(&http_error(&id, status, &body)).await;
                }
                return;
            }
            Err(e) => {
                if !direct.swap(true, Ordering::AcqRel) {
                    say(&format!("{e}: relaying untouched from now on"));
                }
            }
        }
    }
    // Untouched: the server's answer reaches the client through its stdout reader.
    let _ = server.write(&line).await;
}

/// An HTTP error answered in place of a request's answer, as the JSON-RPC error a stdio
/// client can read (an MCP SDK's Streamable HTTP client raises on the status the same way).
fn http_error(id: &Value, status: http::StatusCode, body: &[u8]) -> Bytes {
    let text =
        crate::text::cut(String::from_utf8_lossy(body).trim(), 200).replace(['\n', '\r'], " ");
    let message = match text.is_empty() {
        true => format!("HTTP {status}"),
        false => format!("HTTP {status}: {text}"),
    };
    let e = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
    Bytes::from(e.to_string())
}

/// Waits for the server to exit, passing on the signals the wrap receives.
async fn forward_signals_until_exit(
    mut child: tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        (SignalKind::terminate(), rustix::process::Signal::TERM),
        (SignalKind::interrupt(), rustix::process::Signal::INT),
        (SignalKind::hangup(), rustix::process::Signal::HUP),
        (SignalKind::quit(), rustix::process::Signal::QUIT),
        (SignalKind::user_defined1(), rustix::process::Signal::USR1),
        (SignalKind::user_defined2(), rustix::process::Signal::USR2),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (kind, sig) in kinds {
        let Ok(mut s) = signal(kind) else { continue };
        let tx = tx.clone();
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                if tx.send(sig).is_err() {
                    break;
                }
            }
        });
    }
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    loop {
        tokio::select! {
            status = child.wait() => return status,
            Some(sig) = rx.recv() => {
                if let Some(pid) = pid {
                    let _ = rustix::process::kill_process(pid, sig);
                }
            }
        }
    }
}

/// The server's exit status as the wrap's exit code (128 + N for a signal, as shells say).
fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> i32 {
    match status {
        Ok(s) => s
            .code()
            .or_else(|| s.signal().map(|n| 128 + n))
            .unwrap_or(1),
        Err(e) => {
            say(&format!("waiting for the MCP server failed: {e}"));
            1
        }
    }
}

/// A tool name from the server's command when `--tool` is not given: its file name, with
/// what a tool name cannot hold dropped.
fn default_tool(program: &str) -> String {
    let base = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = base
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    match name.is_empty() {
        true => "stdio".into(),
        false => name,
    }
}

/// One line on stderr, the only place a wrap may speak (stdout is the client's).
fn say(what: &str) {
    eprintln!("flakestorm wrap: {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_error_is_a_json_rpc_error_of_the_same_request() {
        let e = http_error(
            &json!(7),
            http::StatusCode::SERVICE_UNAVAILABLE,
            b"{\"error\":\"overloaded\"}\n",
        );
        let v: Value = serde_json::from_slice(&e).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32603);
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.starts_with("HTTP 503 Service Unavailable: "), "{m}");
        assert!(!e.contains(&b'\n'));
    }

    #[test]
    fn a_default_tool_name_is_the_commands_file_name() {
        assert_eq!(
            default_tool("/usr/bin/mcp-server-files"),
            "mcp-server-files"
        );
        assert_eq!(default_tool("npx"), "npx");
        assert_eq!(default_tool("/x/✓"), "stdio");
    }
}
