//! HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) as serde types: every field the
//! spec requires is always written; flakestorm's own fields start with `_` as the spec
//! allows (`_target`, `_case`, `_fault`, `_attacks`, `_id`, `_error`, `_events`, `_truncated`). Reading
//! accepts other tools' extra fields and leaves out none of the required ones.

use serde::{Deserialize, Serialize};

/// A HAR file: `{"log": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Har {
    pub log: Log,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    pub version: String,
    pub creator: Creator,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<serde_json::Value>,
    pub entries: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Creator {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(rename = "startedDateTime")]
    pub started_date_time: String,
    /// Total milliseconds (the sum of the non-negative `timings`).
    pub time: f64,
    pub request: Request,
    pub response: Response,
    pub cache: Cache,
    pub timings: Timings,
    /// The journal's exchange id.
    #[serde(rename = "_id", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The tool's name, the LLM provider, `embeddings:<provider>` or `other`.
    #[serde(rename = "_target", default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The case the exchange belongs to (runs' tapes).
    #[serde(rename = "_case", default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The fault flakestorm injected, as `rule/mode`.
    #[serde(rename = "_fault", default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// The context attacks flakestorm applied to it, each as `rule/mode`.
    #[serde(rename = "_attacks", default, skip_serializing_if = "Vec::is_empty")]
    pub attacks: Vec<String>,
    /// The MCP message the request carried (method, tool name, id).
    #[serde(rename = "_mcp", default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<crate::exchange::McpCall>,
    /// HAR's free-text note: flakestorm says here when an entry's bodies were not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Why there was no complete response (the exchange's error or broken body).
    #[serde(rename = "_error", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub method: String,
    pub url: String,
    #[serde(rename = "httpVersion")]
    pub http_version: String,
    pub cookies: Vec<Cookie>,
    pub headers: Vec<NameValue>,
    #[serde(rename = "queryString")]
    pub query_string: Vec<NameValue>,
    #[serde(rename = "postData", default, skip_serializing_if = "Option::is_none")]
    pub post_data: Option<PostData>,
    #[serde(rename = "headersSize")]
    pub headers_size: i64,
    #[serde(rename = "bodySize")]
    pub body_size: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub status: u16,
    #[serde(rename = "statusText")]
    pub status_text: String,
    #[serde(rename = "httpVersion")]
    pub http_version: String,
    pub cookies: Vec<Cookie>,
    pub headers: Vec<NameValue>,
    pub content: Content,
    #[serde(rename = "redirectURL")]
    pub redirect_url: String,
    #[serde(rename = "headersSize")]
    pub headers_size: i64,
    #[serde(rename = "bodySize")]
    pub body_size: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cookie {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostData {
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    #[serde(default)]
    pub params: Vec<serde_json::Value>,
    #[serde(default)]
    pub text: String,
    /// `base64` when the body is not UTF-8 (HAR 1.2 has it on `content` only).
    #[serde(rename = "_encoding", default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    pub size: i64,
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// A streamed body (SSE, NDJSON) as its events, each with its offset from the request.
    #[serde(rename = "_events", default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<TimedEvent>,
    /// The body went over the capture cap and was cut.
    #[serde(
        rename = "_truncated",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub truncated: bool,
}

/// One event of a streamed body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedEvent {
    /// Milliseconds after the request was received.
    #[serde(rename = "offsetMs")]
    pub offset_ms: f64,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cache {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    #[serde(default = "unknown", skip_serializing_if = "is_unknown")]
    pub blocked: f64,
    #[serde(default = "unknown", skip_serializing_if = "is_unknown")]
    pub dns: f64,
    #[serde(default = "unknown", skip_serializing_if = "is_unknown")]
    pub connect: f64,
    pub send: f64,
    pub wait: f64,
    pub receive: f64,
    #[serde(default = "unknown", skip_serializing_if = "is_unknown")]
    pub ssl: f64,
}

/// HAR's "does not apply" timing.
fn unknown() -> f64 {
    -1.0
}

fn is_unknown(v: &f64) -> bool {
    *v < 0.0
}
