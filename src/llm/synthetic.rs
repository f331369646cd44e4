//! A complete response built instead of the upstream's (a provider's error, a gateway's
//! timeout), and the small builders the provider files share. Pure.

use bytes::Bytes;

/// A complete response built by a fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

impl Synthetic {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        let body = Bytes::from(body.to_string());
        Synthetic {
            status,
            headers: vec![("content-type", "application/json".into())],
            body,
        }
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A request id in the provider's style, derived from the fault's draw (reproducible).
pub fn request_id(prefix: &str, draw: u64) -> String {
    format!("{prefix}{draw:016x}")
}

/// Seconds as the `retry-after` header writes them: integral when whole.
pub fn format_secs(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}
