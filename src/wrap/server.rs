//! The wrapped MCP server's process: started with piped stdin and stdout (its stderr is
//! the wrap's), its stdout read line by line, answers matched to the requests waiting for
//! them, every other line handed to the client as it came. Owns writing to its stdin.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

use super::out::Out;
use crate::mcp::stdio::{Line, id_key};

/// A server's stdout line that is not an answer anyone waits for: what the caller does
/// with it besides handing it to the client (journal a line that is not JSON-RPC).
pub type OnOther = Arc<dyn Fn(Bytes, &Line) + Send + Sync>;

/// The running server: its stdin, and the requests waiting for its answers.
pub struct Server {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    waiting: Mutex<Option<HashMap<String, oneshot::Sender<Bytes>>>>,
}

/// Why an answer did not come.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error("the MCP server closed its stdout before answering")]
    Exited,
    #[error("writing to the MCP server's stdin failed: {0}")]
    Write(std::io::Error),
}

impl Server {
    /// Starts `command` with `args`; its stdout is read until it closes, answers going to
    /// their requests and other lines to `out` (and `other`).
    pub fn start(
        command: &str,
        args: &[String],
        out: Out,
        other: OnOther,
    ) -> std::io::Result<(Arc<Server>, Child, tokio::task::JoinHandle<()>)> {
        let mut child = Command::new(command)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let server = Arc::new(Server {
            stdin: tokio::sync::Mutex::new(stdin),
            waiting: Mutex::new(Some(HashMap::new())),
        });
        let reading = match stdout {
            Some(stdout) => tokio::spawn(server.clone().read(stdout, out, other)),
            None => tokio::spawn(async {}),
        };
        Ok((server, child, reading))
    }

    /// Writes `line` (and its newline) to the server's stdin.
    pub async fn write(&self, line: &[u8]) -> Result<(), Unanswered> {
        let mut stdin = self.stdin.lock().await;
        let Some(w) = stdin.as_mut() else {
            return Err(Unanswered::Exited);
        };
        let mut framed = Vec::with_capacity(line.len() + 1);
        framed.extend_from_slice(line);
        framed.push(b'\n');
        w.write_all(&framed).await.map_err(Unanswered::Write)?;
        w.flush().await.map_err(Unanswered::Write)
    }

    /// Writes request `line` (id `id`) and waits for the server's answer to it.
    pub async fn ask(&self, line: &[u8], id: &Value) -> Result<Bytes, Unanswered> {
        let (tx, rx) = oneshot::channel();
        match self.lock_waiting().as_mut() {
            Some(waiting) => waiting.insert(id_key(id), tx),
            None => return Err(Unanswered::Exited),
        };
        if let Err(e) = self.write(line).await {
            if let Some(w) = self.lock_waiting().as_mut() {
                w.remove(&id_key(id));
            }
            return Err(e);
        }
        rx.await.map_err(|_| Unanswered::Exited)
    }

    /// Closes the server's stdin: the stdio transport's way to ask it to exit.
    pub async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    fn lock_waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<HashMap<String, oneshot::Sender<Bytes>>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn read(self: Arc<Self>, stdout: ChildStdout, out: Out, other: OnOther) {
        let mut lines = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match lines.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = trim_newline(&buf);
            let read = Line::read(line);
            if let Line::Response { id } = &read {
                let waiter = self
                    .lock_waiting()
                    .as_mut()
                    .and_then(|w| w.remove(&id_key(id)));
                if let Some(tx) = waiter {
                    let _ = tx.send(Bytes::copy_from_slice(line));
                    continue;
                }
            }
            let line = Bytes::copy_from_slice(line);
            out.line(&line).await;
            other(line, &read);
        }
        // Every request still waiting is told: its answer will never come.
        self.lock_waiting().take();
    }
}

/// A line without its `\n` (or `\r\n`).
pub fn trim_newline(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}
