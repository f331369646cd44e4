//! Waiting until the agent is ready: a probe polled until it succeeds, within a deadline,
//! ended early by the exit of the agent flakestorm started.

use std::future::Future;
use std::time::Duration;

use super::{AgentProcess, SpawnError};

/// Polls `probe` every 100 ms until it succeeds, for at most `wait`; `what` names what is
/// awaited in errors. With the agent's `process`, its exit ends the wait at once, and an
/// exit seen when the probe succeeded means something else answered.
pub async fn wait_ready<F, Fut>(
    mut process: Option<&mut AgentProcess>,
    what: &str,
    wait: Duration,
    mut probe: F,
) -> Result<(), SpawnError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if let Some(e) = process.as_mut().and_then(|p| p.exited(what, false)) {
            return Err(e);
        }
        if probe().await {
            return match process.as_mut().and_then(|p| p.exited(what, true)) {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(SpawnError::NotReady {
                what: what.to_string(),
                secs: wait.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A probe: a boxed check that something is ready.
pub type Probe = std::pin::Pin<Box<dyn Future<Output = bool> + Send>>;

/// A probe of whether `uri` answers a GET with 2xx within a second (http or https, on the
/// driver's direct client: never through the proxy).
pub fn url_probe(uri: http::Uri) -> Result<impl FnMut() -> Probe + use<>, crate::tls::TlsError> {
    url_probe_via(uri, &super::Dialer::default())
}

/// `url_probe` whose connections `dialer` makes (in the agent's namespace under `capture:
/// netns`).
pub fn url_probe_via(
    uri: http::Uri,
    dialer: &super::Dialer,
) -> Result<impl FnMut() -> Probe + use<>, crate::tls::TlsError> {
    let client = super::invoke::agent_client(dialer)?;
    Ok(move || {
        let (client, uri) = (client.clone(), uri.clone());
        Box::pin(async move {
            let probe = tokio::time::timeout(Duration::from_secs(1), client.get(uri)).await;
            matches!(probe, Ok(Ok(resp)) if resp.status().is_success())
        }) as Probe
    })
}
