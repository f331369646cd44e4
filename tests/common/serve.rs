//! `flakestorm serve` as a child process: started in a folder with some arguments, its proxy
//! and control addresses read from the lines it prints when it listens. Its stdout stays
//! open (a closed pipe would end serve at its next line); its stderr is piped for tests that
//! read it, else discarded so an unread pipe can never fill and block it.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use super::within;

pub struct Serve {
    pub child: Child,
    pub proxy: String,
    pub control: String,
    /// With `stderr: true`.
    pub stderr: Option<Lines<BufReader<ChildStderr>>>,
    _stdout: Lines<BufReader<ChildStdout>>,
}

/// `flakestorm serve ARGS` in `dir` at log level `log`, once it listens.
pub async fn serve(dir: &std::path::Path, args: &[&str], log: &str, stderr: bool) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(if stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let (proxy, control) = within("serve prints where it listens", async {
        let (mut proxy, mut control) = (None, None);
        while proxy.is_none() || control.is_none() {
            let line = out.next_line().await.unwrap().expect("serve exited early");
            if let Some(a) = line.strip_prefix("flakestorm: proxy listening on ") {
                proxy = Some(a.to_string());
            } else if let Some(a) = line.strip_prefix("flakestorm: control listening on ") {
                control = Some(a.to_string());
            }
        }
        (proxy.unwrap(), control.unwrap())
    })
    .await;
    Serve {
        stderr: stderr.then(|| BufReader::new(child.stderr.take().unwrap()).lines()),
        child,
        proxy,
        control,
        _stdout: out,
    }
}

impl Serve {
    /// `http://CONTROL{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.control)
    }
}
