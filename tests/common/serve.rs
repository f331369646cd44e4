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
    /// The control API's token, from the file `serve` says it keeps it in (none when the
    /// config sets `control.token`).
    pub token: Option<String>,
    /// With `stderr: true`.
    pub stderr: Option<Lines<BufReader<ChildStderr>>>,
    _stdout: Lines<BufReader<ChildStdout>>,
}

/// `flakestorm serve ARGS` in `dir` at log level `log`, once it listens.
pub async fn serve(dir: &std::path::Path, args: &[&str], log: &str, stderr: bool) -> Serve {
    serve_with_env(dir, args, log, stderr, &[]).await
}

/// `serve` with `env` added to the daemon's environment.
pub async fn serve_with_env(
    dir: &std::path::Path,
    args: &[&str],
    log: &str,
    stderr: bool,
    env: &[(&str, &str)],
) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakestorm"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", log)
        .envs(env.iter().copied())
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
    let (proxy, control, token) = within("serve prints where it listens", async {
        let (mut proxy, mut control, mut token) = (None, None, None);
        // The last line of the announcement says where the agent goes.
        loop {
            let line = out.next_line().await.unwrap().expect("serve exited early");
            if let Some(a) = line.strip_prefix("flakestorm: proxy listening on ") {
                proxy = Some(a.to_string());
            } else if let Some(a) = line.strip_prefix("flakestorm: control listening on ") {
                control = Some(a.to_string());
            } else if let Some(rest) = line.strip_prefix("flakestorm: control API token in ") {
                let file = rest.split(" (").next().unwrap();
                token = Some(std::fs::read_to_string(dir.join(file)).unwrap());
            } else if line.starts_with("flakestorm: point the agent at it") {
                break;
            }
        }
        (proxy.unwrap(), control.unwrap(), token)
    })
    .await;
    Serve {
        stderr: stderr.then(|| BufReader::new(child.stderr.take().unwrap()).lines()),
        child,
        proxy,
        control,
        token,
        _stdout: out,
    }
}

impl Serve {
    /// `http://CONTROL{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.control)
    }

    /// A client for its control API, with its token.
    pub fn client(&self) -> reqwest::Client {
        super::control_client(self.token.as_deref().unwrap_or_default())
    }

    /// `POST /v1/runs` a `kind` run of `config` (YAML text); its id, after checking the 202.
    pub async fn submit(&self, kind: &str, config: &str) -> String {
        let body = serde_json::json!({"kind": kind, "config": config});
        let r = self
            .client()
            .post(self.url("/v1/runs"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        assert_eq!(status, 202, "{text}");
        let run: serde_json::Value = serde_json::from_str(&text).unwrap();
        run["id"].as_str().unwrap().to_string()
    }

    /// Follows run `id`'s events until one of kind `event` has come; the stream, to read on.
    pub async fn until_event(&self, id: &str, event: &str) -> reqwest::Response {
        let url = self.url(&format!("/v1/runs/{id}/events"));
        let mut events = self.client().get(url).send().await.unwrap();
        let needle = format!("event: {event}\n");
        within(&format!("a {event} event"), async {
            let mut seen = String::new();
            while !seen.contains(&needle) {
                let chunk = events
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream ended early");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        events
    }
}

/// A chaos run of three prompts, one case at a time, against `agent` (with a held agent,
/// a run that stays in flight).
pub fn one_at_a_time(agent: &super::origin::Origin) -> String {
    format!(
        "agent: {{endpoint: '{}'}}\ngolden_prompts: [one, two, three]\n\
         invariants: [{{type: output_not_empty}}]\n\
         chaos: {{tool_faults: [{{tool: '*', mode: error, error_code: 503}}]}}\n\
         advanced: {{concurrency: 1}}\n",
        agent.http_url("/invoke")
    )
}
