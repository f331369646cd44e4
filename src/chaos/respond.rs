//! Responses a fault answers with instead of the upstream: byte for byte what the real
//! provider (or a real gateway in front of a tool) sends, so the agent's SDK raises what it
//! raises in production (provider-wire-formats.md §1.4, §2.3, §3.3, §4, §5).

use bytes::Bytes;
use serde_json::json;

use crate::exchange::Provider;

/// A complete response built by a fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

impl Synthetic {
    fn json(status: u16, body: serde_json::Value) -> Self {
        let body = Bytes::from(body.to_string());
        Synthetic {
            status,
            headers: vec![("content-type", "application/json".into())],
            body,
        }
    }

    fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A request id in the provider's style, derived from the fault's draw (reproducible).
fn request_id(prefix: &str, draw: u64) -> String {
    format!("{prefix}{draw:016x}")
}

/// A tool error: JSON when the caller speaks JSON, else the status text.
pub fn tool_error(status: u16, message: Option<&str>, wants_json: bool) -> Synthetic {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let message = message.unwrap_or(reason);
    if wants_json {
        Synthetic::json(
            status,
            json!({"error": {"code": status, "message": message}}),
        )
    } else {
        Synthetic {
            status,
            headers: vec![("content-type", "text/plain; charset=utf-8".into())],
            body: Bytes::from(format!("{message}\n")),
        }
    }
}

/// What a gateway answers when the upstream did not answer in time.
pub fn gateway_timeout(provider: Option<Provider>, draw: u64) -> Synthetic {
    match provider {
        None => Synthetic {
            status: 504,
            headers: vec![("content-type", "text/plain".into())],
            body: Bytes::from_static(b"upstream request timeout"),
        },
        Some(Provider::Openai) => Synthetic::json(
            504,
            json!({"error": {"message": "Gateway timeout.", "type": "server_error", "param": null, "code": null}}),
        )
        .with("x-request-id", request_id("req_", draw)),
        Some(Provider::Anthropic) => anthropic(504, "timeout_error", "Request timed out", draw),
        Some(Provider::Gemini) => gemini(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        Some(Provider::Ollama) => Synthetic::json(504, json!({"error": "timed out waiting for the model"})),
    }
}

/// 429 as the provider sends it. `quota`: OpenAI's non-retryable `insufficient_quota`.
pub fn rate_limit(provider: Provider, retry_after_s: f64, quota: bool, draw: u64) -> Synthetic {
    let secs = format_secs(retry_after_s);
    let ms = (retry_after_s * 1000.0).round().max(0.0) as u64;
    match provider {
        Provider::Openai if quota => Synthetic::json(
            429,
            json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
        )
        .with("x-should-retry", "false")
        .with("x-request-id", request_id("req_", draw)),
        Provider::Openai => Synthetic::json(
            429,
            json!({"error": {"message": format!("Rate limit reached for requests. Please try again in {secs}s."),
                "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        )
        .with("retry-after", secs.clone())
        .with("retry-after-ms", ms.to_string())
        .with("x-ratelimit-limit-requests", "500")
        .with("x-ratelimit-remaining-requests", "0")
        .with("x-ratelimit-reset-requests", format!("{secs}s"))
        .with("x-request-id", request_id("req_", draw)),
        Provider::Anthropic => anthropic(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", draw)
            .with("retry-after", secs)
            .with("anthropic-ratelimit-requests-limit", "50")
            .with("anthropic-ratelimit-requests-remaining", "0"),
        Provider::Gemini => {
            let mut s = gemini(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).");
            let retry = json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{secs}s")}]);
            s.body = Bytes::from(
                json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                    "status": "RESOURCE_EXHAUSTED", "details": retry}})
                .to_string(),
            );
            s
        }
        Provider::Ollama => Synthetic::json(429, json!({"error": "too many requests"})).with("retry-after", secs),
    }
}

/// A provider outage: OpenAI/Gemini/Ollama 503 (or `status`), Anthropic 529 overloaded.
pub fn server_error(provider: Provider, status: Option<u16>, draw: u64) -> Synthetic {
    match provider {
        Provider::Openai => Synthetic::json(
            status.unwrap_or(503),
            json!({"error": {"message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error", "param": null, "code": null}}),
        )
        .with("x-request-id", request_id("req_", draw)),
        Provider::Anthropic => match status.unwrap_or(529) {
            529 => anthropic(529, "overloaded_error", "Overloaded", draw),
            504 => anthropic(504, "timeout_error", "Request timed out", draw),
            s => anthropic(s, "api_error", "Internal server error", draw),
        },
        Provider::Gemini => match status.unwrap_or(503) {
            500 => gemini(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"),
            s => gemini(s, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        },
        Provider::Ollama => Synthetic::json(status.unwrap_or(500), json!({"error": "model runner has unexpectedly stopped"})),
    }
}

/// The provider's "prompt too long" error. Ollama has none: it truncates the prompt
/// silently, which is a request rewrite, so `None`.
pub fn context_length_exceeded(provider: Provider, draw: u64) -> Option<Synthetic> {
    Some(match provider {
        Provider::Openai => Synthetic::json(
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        )
        .with("x-request-id", request_id("req_", draw)),
        Provider::Anthropic => anthropic(400, "invalid_request_error", "prompt is too long: 210517 tokens > 200000 maximum", draw),
        Provider::Gemini => gemini(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
        ),
        Provider::Ollama => return None,
    })
}

fn anthropic(status: u16, kind: &str, message: &str, draw: u64) -> Synthetic {
    let id = request_id("req_", draw);
    Synthetic::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": id}),
    )
    .with("request-id", id)
}

fn gemini(status: u16, kind: &str, message: &str) -> Synthetic {
    Synthetic::json(
        status,
        json!({"error": {"code": status, "message": message, "status": kind}}),
    )
}

/// Seconds as the `retry-after` header writes them: integral when whole.
fn format_secs(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &Synthetic) -> serde_json::Value {
        serde_json::from_slice(&s.body).unwrap()
    }

    fn header<'a>(s: &'a Synthetic, name: &str) -> Option<&'a str> {
        s.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn rate_limits_carry_what_each_sdk_reads() {
        let o = rate_limit(Provider::Openai, 2.0, false, 1);
        assert_eq!(
            (
                o.status,
                header(&o, "retry-after"),
                header(&o, "retry-after-ms")
            ),
            (429, Some("2"), Some("2000"))
        );
        assert_eq!(body(&o)["error"]["code"], "rate_limit_exceeded");
        let q = rate_limit(Provider::Openai, 1.0, true, 1);
        assert_eq!(
            (
                body(&q)["error"]["type"].as_str(),
                header(&q, "x-should-retry")
            ),
            (Some("insufficient_quota"), Some("false"))
        );
        let a = rate_limit(Provider::Anthropic, 0.5, false, 1);
        assert_eq!(
            (
                body(&a)["type"].as_str(),
                body(&a)["error"]["type"].as_str()
            ),
            (Some("error"), Some("rate_limit_error"))
        );
        assert_eq!(header(&a, "retry-after"), Some("0.5"));
        assert!(header(&a, "request-id").unwrap().starts_with("req_"));
        let g = rate_limit(Provider::Gemini, 30.0, false, 1);
        assert_eq!(body(&g)["error"]["details"][0]["retryDelay"], "30s");
        assert_eq!(
            body(&rate_limit(Provider::Ollama, 1.0, false, 1))["error"],
            "too many requests"
        );
    }

    #[test]
    fn outages_and_context_errors_by_provider() {
        let a = server_error(Provider::Anthropic, None, 9);
        assert_eq!(
            (a.status, body(&a)["error"]["type"].as_str()),
            (529, Some("overloaded_error"))
        );
        assert_eq!(server_error(Provider::Openai, Some(500), 9).status, 500);
        assert_eq!(
            body(&server_error(Provider::Gemini, None, 9))["error"]["status"],
            "UNAVAILABLE"
        );
        let c = context_length_exceeded(Provider::Openai, 3).unwrap();
        assert_eq!(
            (c.status, body(&c)["error"]["code"].as_str()),
            (400, Some("context_length_exceeded"))
        );
        assert!(
            context_length_exceeded(Provider::Ollama, 3).is_none(),
            "Ollama truncates silently"
        );
    }

    #[test]
    fn tool_errors_follow_the_callers_format() {
        let j = tool_error(503, None, true);
        assert_eq!(
            body(&j),
            json!({"error": {"code": 503, "message": "Service Unavailable"}})
        );
        let t = tool_error(502, Some("bad gateway upstream"), false);
        assert_eq!(t.body, "bad gateway upstream\n");
    }
}
