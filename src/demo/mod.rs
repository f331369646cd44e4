//! `flakestorm demo`: the embedded default, offline, in one process. Starts a mock tool
//! API and a mock OpenAI-compatible LLM (HTTPS, with a throwaway CA), the proxy in front of
//! them, and a small agent that calls both through the proxy exactly as a real agent
//! would (CONNECT + TLS trusting the flakestorm CA). Then prints what the proxy saw.
//! The run engine will extend this into a full `ci` run over config/demo.yaml.

mod agent;
mod origins;

use std::fmt::Write as _;

use crate::config::{Config, OneOrMany, ToolSpec};
use crate::daemon::Daemon;
use crate::exchange::{BodyEnd, Exchange, Outcome};

#[derive(Debug, thiserror::Error)]
#[error("demo failed: {0}")]
pub struct DemoError(pub String);

impl DemoError {
    fn from<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> DemoError + '_ {
        move |e| DemoError(format!("{what}: {e}"))
    }
}

/// Runs the demo and returns the text to print.
pub async fn run() -> Result<String, DemoError> {
    let dir = tempfile_dir()?;
    let mocks = origins::start(&dir).await?;
    let mut config = Config::default();
    config.proxy.listen = "127.0.0.1:0".into();
    config.control.listen = "127.0.0.1:0".into();
    config.ca.dir = dir.join("certs");
    config.proxy.upstream_ca_file = Some(mocks.ca_file.clone());
    config.tools = vec![ToolSpec {
        name: "web_search".into(),
        match_url: OneOrMany::One(format!("https://localhost:{}/search*", mocks.tool_port)),
    }];
    let daemon = Daemon::start(&config)
        .await
        .map_err(DemoError::from("starting the proxy"))?;
    let ca_pem =
        std::fs::read_to_string(&daemon.ca_cert_path).map_err(DemoError::from("reading the CA"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flakestorm demo: proxy on {}, control API on {}",
        daemon.proxy_addr, daemon.control_addr
    );
    let _ = writeln!(
        out,
        "mock tool API on localhost:{}, mock LLM on localhost:{}\n",
        mocks.tool_port, mocks.llm_port
    );
    let steps = agent::run(daemon.proxy_addr, &ca_pem, &mocks).await;
    daemon.journal.wait_for(steps.len() as u64).await;
    let _ = writeln!(out, "1. the agent's calls, untouched:");
    for step in &steps {
        let _ = writeln!(out, "   {step}");
    }
    // The same agent under chaos: its real tool call fails, its real LLM answers are cut.
    let chaos = "tool_faults:\n  - {id: search-down, tool: web_search, mode: error, error_code: 503}\n\
                 llm_faults:\n  - {id: llm-cut, mode: truncated_response, max_tokens: 3}\n";
    let spec = crate::config::parse_chaos(yaml(chaos), &config.tools)
        .map_err(|e| DemoError(format!("{e:?}")))?
        .0;
    daemon.chaos.set(&spec).map_err(DemoError)?;
    let _ = writeln!(
        out,
        "\n2. the same calls with chaos rules active:\n{}",
        indent(chaos)
    );
    let faulted = agent::run(daemon.proxy_addr, &ca_pem, &mocks).await;
    daemon
        .journal
        .wait_for((steps.len() + faulted.len()) as u64)
        .await;
    for step in &faulted {
        let _ = writeln!(out, "   {step}");
    }
    let _ = writeln!(out, "\nwhat the proxy saw (journal):");
    let exchanges = daemon.journal.all();
    out.push_str(&table(&exchanges));
    if let Some((name, value)) = exchanges
        .iter()
        .flat_map(|e| &e.request.headers)
        .find(|(k, _)| k == "authorization")
    {
        let _ = writeln!(
            out,
            "  (the agent sent `{name}: Bearer sk-demo-secret`; the journal keeps `{value}`)"
        );
    }
    let metrics = daemon.metrics.encode();
    let _ = writeln!(
        out,
        "\nmetrics (GET http://{}/metrics):",
        daemon.control_addr
    );
    for line in metrics.lines().filter(|l| {
        l.starts_with("flakestorm_requests_total")
            || l.starts_with("flakestorm_faults_injected_total")
            || l.starts_with("flakestorm_tls_handshakes_total")
    }) {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "\nNext: `flakestorm serve --chaos-profile degraded_llm`, then run your own agent with\n\
         HTTPS_PROXY=http://127.0.0.1:8080 and SSL_CERT_FILE=certs/ca.pem (see README and\n\
         docs/faults.md). Contract runs with scores arrive with the run engine."
    );
    daemon.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

fn tempfile_dir() -> Result<std::path::PathBuf, DemoError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("flakestorm-demo-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(DemoError::from("creating a temp folder"))?;
    Ok(dir)
}

fn yaml(text: &str) -> serde_json::Value {
    use figment::providers::{Format, Yaml};
    figment::Figment::from(Yaml::string(text))
        .extract()
        .unwrap_or_default()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("     {l}\n")).collect()
}

fn table(exchanges: &[std::sync::Arc<Exchange>]) -> String {
    let head = ("id", "target", "verb", "url", "status", "ms", "bytes");
    let mut out = format!(
        "  {:<3} {:<16} {:<5} {:<50} {:>6} {:>7} {:>6}  fault\n",
        head.0, head.1, head.2, head.3, head.4, head.5, head.6
    );
    for e in exchanges {
        let target = match &e.target {
            crate::exchange::Target::Llm { provider } => format!("llm:{}", provider.as_str()),
            crate::exchange::Target::Tool { name } => format!("tool:{name}"),
            crate::exchange::Target::Other => "other".into(),
        };
        let status = match &e.outcome {
            Outcome::Response {
                response,
                body: BodyEnd::Complete,
            } => response.status.to_string(),
            Outcome::Response { response, .. } => format!("{}*", response.status),
            Outcome::Error { error, .. } => error.kind.clone(),
        };
        let fault = e
            .fault
            .as_ref()
            .map_or("-".to_string(), |f| format!("{} ({})", f.rule, f.mode));
        let (id, verb, url, ms, bytes) = (
            e.id,
            &e.request.method,
            &e.request.url,
            e.timings.total_ms,
            e.response_bytes,
        );
        let _ = writeln!(
            out,
            "  {id:<3} {target:<16} {verb:<5} {url:<50} {status:>6} {ms:>7.2} {bytes:>6}  {fault}"
        );
    }
    out
}
