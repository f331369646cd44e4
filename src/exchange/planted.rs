//! What an exchange carried that a run traces afterwards: the wrong values a fault or an
//! attack put into it (`Planted`), and canaries found leaving in a request (`CanaryLeak`).

use serde::{Deserialize, Serialize};

/// A wrong value a data fault (`corrupt`, `stale`) or a context attack put into a response
/// the agent received (or a request its model read): where, what was there, what went in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planted {
    /// Where: a JSON path in the body (`$.current.temp_c`, `$.results[2].price`; inside
    /// JSON carried as an MCP result's text, that text's path then `#` and the inner path),
    /// `(text)` for a text body, `(injected)` for an attack's payload.
    pub path: String,
    /// The value that was there, as text (a string unquoted, a number as written); absent
    /// for an injected payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// What the agent received instead, as text.
    pub planted: String,
}

/// A planted canary found in a request to a destination other than the one that served it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryLeak {
    pub canary: String,
    /// The tool name (or `scheme://host:port`) whose response carried it.
    pub from: String,
    /// Where in the request: `url`, `header <name>` or `body`.
    pub found_in: String,
}
