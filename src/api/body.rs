//! Request bodies of the control API: read with a size cap, then parsed (JSON, or YAML with
//! a YAML content type) after the same size and depth checks as config files. `parse` is
//! synchronous and meant for the blocking pool (`spawn_blocking`), never an async worker.

use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;

use super::ApiError;
use crate::config::Found;
use crate::config::untrusted::{self, MAX_BYTES};

/// What a body may be: how long it may take to arrive, how large an imported report may
/// be (`control.body_timeout_ms`, `control.max_import_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub body_timeout: Duration,
    pub max_import_bytes: usize,
    /// How long `POST /v1/runs/import` waits for its run to be recorded before it
    /// answers 202 with the run instead.
    pub import_answer: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        let c = crate::config::ControlSpec::default();
        Limits::of(&c)
    }
}

impl Limits {
    pub fn of(c: &crate::config::ControlSpec) -> Limits {
        Limits {
            body_timeout: Duration::from_millis(c.body_timeout_ms),
            max_import_bytes: usize::try_from(c.max_import_bytes).unwrap_or(usize::MAX),
            import_answer: Duration::from_secs(5),
        }
    }
}

/// The whole body, or 413 once it passes `MAX_BYTES` (read no further), or 408 when it
/// has not all arrived within the body deadline.
pub async fn read_limited(body: Body, limits: &Limits) -> Result<Vec<u8>, ApiError> {
    let max = MAX_BYTES;
    read_capped(body, max, limits.body_timeout, || {
        format!("the body is larger than {MAX_BYTES} bytes (1 MiB)")
    })
    .await
}

/// A report's body (`POST /v1/runs/import`), or 413 past `control.max_import_bytes`, or
/// 408 past the body deadline.
pub async fn read_report(body: Body, limits: &Limits) -> Result<Vec<u8>, ApiError> {
    let max = limits.max_import_bytes;
    read_capped(body, max, limits.body_timeout, || {
        format!("a report sent here is at most {max} bytes (control.max_import_bytes)")
    })
    .await
}

async fn read_capped(
    body: Body,
    max: usize,
    deadline: Duration,
    too_large: impl FnOnce() -> String,
) -> Result<Vec<u8>, ApiError> {
    match tokio::time::timeout(deadline, collect(body, max)).await {
        Ok(Ok(Some(bytes))) => Ok(bytes),
        Ok(Ok(None)) => Err(ApiError::TooLarge(too_large())),
        Ok(Err(e)) => Err(ApiError::BadBody(format!("could not read the body: {e}"))),
        Err(_) => Err(ApiError::BodyTimeout(format!(
            "the body did not arrive within {} ms (control.body_timeout_ms)",
            deadline.as_millis()
        ))),
    }
}

/// The body's bytes in one buffer, each frame copied in as it comes and then dropped (a
/// collected body, then joined, held it twice); `None` past `max`. The buffer is sized
/// up front from the declared length when that is within `max`.
async fn collect(mut body: Body, max: usize) -> Result<Option<Vec<u8>>, axum::Error> {
    let declared = http_body::Body::size_hint(&body).exact();
    let size = declared.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if size > max {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(size);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            if out.len() + data.len() > max {
                return Ok(None);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Some(out))
}

/// Parses a body. Blocks (CPU) in proportion to its size: call it off the async workers.
pub fn parse(body: &[u8], yaml: bool) -> Result<Value, ApiError> {
    #[cfg(test)]
    gate::wait(body);
    let fail = |found: Found| ApiError::BadBody(found.one_line());
    if yaml {
        let text = std::str::from_utf8(body)
            .map_err(|e| ApiError::BadBody(format!("YAML body is not UTF-8: {e}")))?;
        untrusted::check_yaml(text).map_err(fail)?;
        use crate::config::Yaml;
        use figment::providers::Format;
        // As the config loader does, so `.nan` and `.inf` are refused here too.
        crate::config::finite::extract(&figment::Figment::from(Yaml::string(text)))
            .map_err(|e| ApiError::BadBody(e.to_string()))
    } else {
        untrusted::check_json(body).map_err(|e| fail(Found::from_iter([e])))?;
        if let Ok(text) = std::str::from_utf8(body) {
            let duplicates = untrusted::json_duplicate_keys(text);
            if !duplicates.is_empty() {
                return Err(fail(duplicates));
            }
        }
        serde_json::from_slice(body).map_err(|e| ApiError::BadBody(format!("not JSON: {e}")))
    }
}

/// Test hook: holds `parse` until the test lets it go, so a test can show that other
/// requests are served while a parse is in progress.
#[cfg(test)]
pub mod gate {
    use std::sync::Mutex;
    use std::sync::mpsc::{Receiver, Sender, channel};

    static GATE: Mutex<Option<(Sender<()>, Receiver<()>)>> = Mutex::new(None);

    /// Arms the gate: the next `parse` of a body starting with `# gate` signals `entered`,
    /// then waits for `release` (other bodies, from tests running alongside, pass).
    pub fn arm() -> (Receiver<()>, Sender<()>) {
        let (entered_tx, entered_rx) = channel();
        let (release_tx, release_rx) = channel();
        *GATE.lock().unwrap() = Some((entered_tx, release_rx));
        (entered_rx, release_tx)
    }

    pub(super) fn wait(body: &[u8]) {
        if !body.starts_with(b"# gate") {
            return;
        }
        let armed = GATE.lock().unwrap().take();
        if let Some((entered, release)) = armed {
            let _ = entered.send(());
            let _ = release.recv();
        }
    }
}
