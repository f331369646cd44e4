//! `flakestorm health [--ready] [URL]`: asks a daemon's control listener for `/healthz`
//! (or `/readyz`) and exits 0 when it answers 200, 1 otherwise, saying why. Made for
//! container health checks (`HEALTHCHECK`, compose `healthcheck`, Kubernetes `exec`
//! probes) in images with no curl. It speaks plain HTTP/1.1 to the URL's own host
//! (`daemon_client::probe`), so no `HTTP_PROXY` of the container can route it through the
//! proxy (the agent's sidecar sets those); it sends no token (the probes are open) and
//! reads at most 64 KiB of the answer. `--wait SECONDS` asks again every second until the answer is
//! 200 or the time is up (a Kubernetes Job's init container waiting for the sidecar it
//! will drive; compose on engines that do not wait for `service_healthy`).

use std::process::ExitCode;
use std::time::Duration;

/// The control listener's default address.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8081";
const MAX_ANSWER: usize = 64 * 1024;

#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// Ask `/readyz` (CA loaded, listeners bound, config applied, not draining) instead of
    /// `/healthz` (the process answers).
    #[arg(long)]
    pub ready: bool,
    /// The control listener, e.g. http://127.0.0.1:8081 (a path, if any, is replaced).
    #[arg(value_name = "URL", env = "FLAKESTORM_HEALTH_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Give up on one attempt after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub timeout: u64,
    /// Keep asking, once a second, until it answers 200 or SECONDS have passed.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<u64>,
}

pub async fn run(args: HealthArgs) -> ExitCode {
    let path = if args.ready { "/readyz" } else { "/healthz" };
    let Some((host, authority)) = split(&args.url) else {
        eprintln!(
            "flakestorm: health: `{}` is not an http:// URL of a control listener (e.g. {DEFAULT_URL})",
            args.url.chars().take(80).collect::<String>()
        );
        return ExitCode::from(2);
    };
    let url = format!("http://{authority}{path}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.wait.unwrap_or(0));
    loop {
        match ask(host, &url, args.timeout).await {
            Ok(body) => {
                println!("{url}: {}", status_of(&body).unwrap_or("ok".into()));
                return ExitCode::SUCCESS;
            }
            Err(why) if tokio::time::Instant::now() >= deadline => {
                let waited = args
                    .wait
                    .map_or(String::new(), |w| format!(" (waited {w}s)"));
                eprintln!("flakestorm: {url}: {why}{waited}");
                return ExitCode::from(1);
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// One attempt: the body of a 200, or why not.
async fn ask(host: &str, url: &str, timeout: u64) -> Result<String, String> {
    let asked = tokio::time::timeout(
        Duration::from_secs(timeout),
        super::daemon_client::probe(url, host, MAX_ANSWER),
    );
    match asked.await {
        Ok(Ok((200, body))) => Ok(body),
        Ok(Ok((code, body))) => Err(format!("{code} {}", reasons(&body))),
        Ok(Err(e)) => Err(format!("{e} (is `flakestorm serve` running there?)")),
        Err(_) => Err(format!("no answer within {timeout}s")),
    }
}

/// `(host for the Host header, host:port to connect to)` of an `http://` URL.
fn split(url: &str) -> Option<(&str, String)> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let has_port = match authority.rfind(']') {
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    };
    let full = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Some((authority, full))
}

/// The `status` of a JSON answer (`ok`, `ready`).
fn status_of(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    v["status"].as_str().map(str::to_string)
}

/// What a 503 says: its `reasons`, or the start of the body.
fn reasons(body: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(body.trim()) {
        Ok(v) if v["reasons"].is_array() => {
            let list: Vec<&str> = v["reasons"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str())
                .collect();
            format!("not ready: {}", list.join("; "))
        }
        _ => body.chars().take(200).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_and_address() {
        assert_eq!(
            split("http://127.0.0.1:8081"),
            Some(("127.0.0.1:8081", "127.0.0.1:8081".into()))
        );
        assert_eq!(
            split("http://flakestorm/readyz"),
            Some(("flakestorm", "flakestorm:80".into()))
        );
        assert_eq!(
            split("http://[::1]:9/x"),
            Some(("[::1]:9", "[::1]:9".into()))
        );
        for bad in ["https://h:1", "127.0.0.1:8081", "http://", "http://u:p@h:1"] {
            assert_eq!(split(bad), None, "{bad}");
        }
    }
}
