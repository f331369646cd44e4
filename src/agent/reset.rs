//! `agent.reset_endpoint`: POSTed before each case so that it starts clean. A reset that
//! fails says what the endpoint answered (the start of its body, with credentials
//! redacted as the journal redacts bodies, and flakestorm's own withheld secrets and the
//! agent's configured header values replaced), so a run whose cases never reached the
//! agent says why in the endpoint's own words.

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
            url: url.to_string(),
            cause,
        };
        let req = Request::post(url.clone())
            .body(Full::default())
            .map_err(|e| unreachable(e.to_string()))?;
        let call = async {
            let resp = self.client().request(req).await;
            let resp = resp.map_err(|e| unreachable(cause(&e)))?;
            let status = resp.status();
            // A body that breaks off is shown as far as it came: the status says enough.
            let body = match resp.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => Default::default(),
            };
            Ok::<_, InvokeError>((status, body))
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
            url: url.to_string(),
            status: status.as_u16(),
            body: shown(&body, &self.secrets()),
        })
    }

    /// What no message about the agent may quote: its configured header values (an
    /// `Authorization` to the agent) and the values of flakestorm's withheld variables
    /// (the control token).
    fn secrets(&self) -> Vec<String> {
        let headers = self.target().headers.values();
        let mut secrets: Vec<String> = headers
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        let withheld = super::withheld::withheld().into_iter();
        secrets.extend(withheld.filter_map(|n| std::env::var(n).ok()));
        secrets.retain(|s| s.len() >= 4);
        secrets
    }
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
