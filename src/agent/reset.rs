//! `agent.reset_endpoint`: POSTed before each case so that it starts clean. A reset that
//! fails says what the endpoint answered (the start of its body, with credentials
//! redacted as the journal redacts bodies, and flakestorm's own withheld secrets and the
//! agent's configured header and `agent.env` values replaced; the URL without query or
//! user info), so a run whose cases never reached the agent says why in the endpoint's
//! own words. A reset that succeeds is not read further than its status.

use http::Request;
use http_body_util::{BodyExt, Full};

use super::answer::{cause, head};
use super::{Agent, InvokeError};

impl Agent {
    /// Whether a `reset_endpoint` is POSTed before every case.
    pub fn resets(&self) -> bool {
        self.target().reset_endpoint.is_some()
    }

    /// POSTs `reset_endpoint`, if configured, so the next case starts clean.
    pub async fn reset(&self) -> Result<(), InvokeError> {
        let target = self.target();
        let Some(url) = &target.reset_endpoint else {
            return Ok(());
        };
        let unreachable = |cause: String| InvokeError::Unreachable {
            url: shown_url(url),
            cause,
        };
        let req = Request::post(url.clone())
            .body(Full::default())
            .map_err(|e| unreachable(e.to_string()))?;
        let call = async {
            let resp = self.client().request(req).await;
            let resp = resp.map_err(|e| unreachable(cause(&e)))?;
            let status = resp.status();
            if status.is_success() {
                // Its body says nothing we use: not read, however long or slow it is.
                return Ok((status, Vec::new()));
            }
            Ok::<_, InvokeError>((status, body_start(resp.into_body()).await))
        };
        let (status, body) = match tokio::time::timeout(target.timeout, call).await {
            Ok(answer) => answer?,
            Err(_) => {
                return Err(InvokeError::Timeout {
                    ms: target.timeout.as_millis() as u64,
                });
            }
        };
        if status.is_success() {
            return Ok(());
        }
        Err(InvokeError::Reset {
            url: shown_url(url),
            status: status.as_u16(),
            body: shown(&body, &self.secrets()),
        })
    }

    /// What no message about the agent may quote: its configured header values (an
    /// `Authorization` to the agent), the values its `agent.env` sets (its API keys) and
    /// the values of flakestorm's withheld variables (the control token).
    fn secrets(&self) -> Vec<String> {
        let target = self.target();
        let mut secrets: Vec<String> = target
            .headers
            .values()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        secrets.extend(target.env.values().cloned());
        let withheld = super::withheld::withheld().into_iter();
        secrets.extend(withheld.filter_map(|n| std::env::var(n).ok()));
        secrets.retain(|s| s.len() >= 4);
        secrets
    }
}

/// A failed reset's body quoted, at most.
const QUOTED: usize = 4 << 10;

/// The first `QUOTED` bytes of a body (as far as it came, when it breaks off).
async fn body_start(mut body: hyper::body::Incoming) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < QUOTED {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    got.extend_from_slice(data);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    got.truncate(QUOTED);
    got
}

/// `scheme://host[:port]/path` of a URL the agent is called at: no user info, no query
/// (either may carry a credential, and reports are shared).
pub fn shown_url(uri: &http::Uri) -> String {
    let host = uri.host().unwrap_or("");
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{host}{port}{}",
        uri.scheme_str().unwrap_or("http"),
        uri.path()
    )
}

/// The start of a body as an error quotes it: redacted (`journal::Redactor::body`), then
/// cut (`answer::head`); `(empty body)` for none.
fn shown(body: &[u8], secrets: &[String]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let redacted = crate::journal::Redactor::default().body(body, secrets);
    head(&redacted).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn a_reset_body_is_shown_redacted_and_cut() {
        let body = br#"{"error": "database is locked", "api_key": "sk-live-1234567890abcdef"}"#;
        let said = shown(body, &["hunter22".into()]);
        assert!(said.contains("database is locked"), "{said}");
        assert!(!said.contains("sk-live-1234567890abcdef"), "{said}");
        let said = shown(b"token hunter22 expired", &["hunter22".into()]);
        assert!(!said.contains("hunter22"), "{said}");
        let long = "x".repeat(5000);
        assert!(shown(long.as_bytes(), &[]).len() < 300);
        assert_eq!(shown(b"", &[]), "(empty body)");
    }
}
