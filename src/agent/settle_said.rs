//! How the agent says that nothing more of a case will come, so that its settle ends before
//! `settle_ms` of quiet (docs/config.md, "How a case settles"): the `flakestorm-settle: done`
//! header on its answer, or `agent.settle_url`, which it answers once its work for the case
//! is over. Only reads what the agent says; the run decides what a case waits for.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::Full;

use super::Agent;
use super::answer::cause;

/// The response header an agent sets on its answer to end the case's settle at once.
pub const SETTLE_HEADER: &str = "flakestorm-settle";

/// The one value `SETTLE_HEADER` takes.
pub const SETTLE_DONE: &str = "done";

/// The value of `SETTLE_HEADER` in `headers`, as sent (a value that is not text is said as
/// such, so that the run can name it).
pub(super) fn header(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(SETTLE_HEADER)?;
    Some(
        v.to_str()
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| format!("{:?}", v.as_bytes())),
    )
}

impl Agent {
    /// GETs `agent.settle_url` with `extra` headers (the case's `traceparent` under header
    /// attribution) and returns when it answers 2xx: nothing more of the case will come.
    /// `None` without a `settle_url`; `Some(Err)` saying why when it fails or does not
    /// answer 2xx within `bound`.
    pub async fn settled(&self, extra: &HeaderMap, bound: Duration) -> Option<Result<(), String>> {
        let url = self.target().settle_url.clone()?;
        let mut req = Request::get(url.clone());
        if let Some(h) = req.headers_mut() {
            h.extend(extra.clone());
        }
        let req = match req.body(Full::<Bytes>::default()) {
            Ok(r) => r,
            Err(e) => return Some(Err(format!("agent.settle_url `{url}`: {e}"))),
        };
        let answer = tokio::time::timeout(bound, self.client().request(req)).await;
        Some(match answer {
            Ok(Ok(r)) if r.status().is_success() => Ok(()),
            Ok(Ok(r)) => Err(format!(
                "agent.settle_url `{url}` answered HTTP {} (a 2xx says nothing more will come)",
                r.status().as_u16()
            )),
            Ok(Err(e)) => Err(format!(
                "agent.settle_url `{url}` is unreachable: {}",
                cause(&e)
            )),
            Err(_) => Err(format!(
                "agent.settle_url `{url}` did not answer within {} ms (advanced.settle_max_ms)",
                bound.as_millis()
            )),
        })
    }
}
