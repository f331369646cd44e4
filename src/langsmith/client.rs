//! The LangSmith REST API as its SDK calls it: `x-api-key` from `LANGSMITH_API_KEY`, the
//! endpoint from `LANGSMITH_ENDPOINT` (default https://api.smith.langchain.com), `GET
//! /runs/{id}`, `GET /sessions?name=` (a project by name) and `POST /runs/query` followed
//! page by page through `cursors.next`. Every answer is checked: a refused key, an unknown
//! run, a timeout or a body that is not JSON is one clear line, never a panic.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use super::LangsmithError;
use crate::agent::{DirectClient, direct_client};

/// The SDK's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://api.smith.langchain.com";
/// The longest one request may take, answer body included.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read (one run, or one page of runs): a bigger one is refused as it
/// streams in, not held whole.
const MAX_ANSWER: usize = 64 << 20;
/// Pages followed for one query before the import gives up (a server repeating cursors
/// must not loop forever).
const MAX_PAGES: usize = 1000;

/// A LangSmith API client.
pub struct Client {
    base: String,
    key: String,
    http: DirectClient,
}

impl Client {
    /// From the environment: `LANGSMITH_API_KEY` (required) and `LANGSMITH_ENDPOINT`, or
    /// the SDK's older names `LANGCHAIN_API_KEY` and `LANGCHAIN_ENDPOINT`.
    pub fn from_env() -> Result<Client, LangsmithError> {
        let var = |name: &str| {
            [format!("LANGSMITH_{name}"), format!("LANGCHAIN_{name}")]
                .iter()
                .filter_map(|v| std::env::var(v).ok())
                .map(|v| v.trim().to_string())
                .find(|v| !v.is_empty())
                .unwrap_or_default()
        };
        Client::new(&var("ENDPOINT"), &var("API_KEY"))
    }

    /// `endpoint` empty = the default.
    pub fn new(endpoint: &str, key: &str) -> Result<Client, LangsmithError> {
        if key.is_empty() {
            return Err(
                "LangSmith import needs an API key: set LANGSMITH_API_KEY (it is read from the \
                 environment only, never from the config)"
                    .into(),
            );
        }
        let endpoint = match endpoint.trim() {
            "" => DEFAULT_ENDPOINT,
            e => e,
        };
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|e| format!("LANGSMITH_ENDPOINT `{endpoint}` is not a URL ({e})"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "LANGSMITH_ENDPOINT `{endpoint}`: expected http(s)://HOST[:PORT][/PATH]"
            )
            .into());
        }
        let http = direct_client(true).map_err(|e| format!("LangSmith client: {e}"))?;
        Ok(Client {
            base: endpoint.trim_end_matches('/').to_string(),
            key: key.to_string(),
            http,
        })
    }

    /// `GET /runs/{id}`.
    pub async fn run(&self, id: &str) -> Result<Value, String> {
        let id = run_id(id)?;
        self.call(Method::GET, &format!("/runs/{id}"), None).await
    }

    /// A project's id from its name (`GET /sessions?name=NAME&limit=1`, as the SDK's
    /// `read_project` does).
    pub async fn project_id(&self, name: &str) -> Result<String, String> {
        let query = format!(
            "/sessions?name={}&limit=1&include_stats=false",
            encode(name)
        );
        let v = self.call(Method::GET, &query, None).await?;
        let first = match v.as_array() {
            Some(list) => list.first(),
            None => v.is_object().then_some(&v),
        };
        let Some(project) = first else {
            return Err(format!("LangSmith has no project named `{name}`"));
        };
        match project.get("id").and_then(Value::as_str) {
            Some(id) => Ok(id.to_string()),
            None => Err(format!(
                "LangSmith project `{name}`: id missing in GET /sessions's answer"
            )),
        }
    }

    /// `POST /runs/query` with `body`, every page (the SDK's cursor pagination).
    pub async fn query(&self, body: Value) -> Result<Vec<Value>, String> {
        let mut body = body;
        let mut runs = vec![];
        let mut seen: Vec<String> = vec![];
        for _ in 0..MAX_PAGES {
            let page = self.call(Method::POST, "/runs/query", Some(&body)).await?;
            let Some(list) = page.get("runs") else {
                return Err("POST /runs/query: runs missing in LangSmith's answer".into());
            };
            let Some(list) = list.as_array() else {
                return Err("POST /runs/query: runs is not a list in LangSmith's answer".into());
            };
            if list.is_empty() {
                return Ok(runs);
            }
            runs.extend(list.iter().cloned());
            let next = page
                .get("cursors")
                .and_then(|c| c.get("next"))
                .and_then(Value::as_str);
            let Some(next) = next.filter(|n| !n.is_empty()) else {
                return Ok(runs);
            };
            if seen.iter().any(|s| s == next) {
                return Err(format!(
                    "POST /runs/query: LangSmith returned the cursor `{next}` twice"
                ));
            }
            seen.push(next.to_string());
            body["cursor"] = json!(next);
        }
        Err(format!(
            "POST /runs/query: more than {MAX_PAGES} pages; narrow the filter"
        ))
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        let mut req = Request::builder()
            .method(method)
            .uri(&url)
            .header("x-api-key", &self.key)
            .header(http::header::ACCEPT, "application/json");
        let body = match body {
            Some(v) => {
                req = req.header(http::header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(v.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        let req = req.body(body).map_err(|e| format!("{what}: {e}"))?;
        let exchange = async {
            let resp = self.http.request(req).await.map_err(|e| {
                format!(
                    "cannot reach LangSmith at {}: {}",
                    self.base,
                    crate::agent::root_cause(&e)
                )
            })?;
            let status = resp.status();
            let bytes = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| match e.is::<http_body_util::LengthLimitError>() {
                    true => format!(
                        "{what}: LangSmith's answer is larger than {} MiB, the most flakestorm \
                         reads in one answer: import one run (--from-langsmith RUN_ID) or a \
                         project with fewer runs",
                        MAX_ANSWER >> 20
                    ),
                    false => format!("{what}: reading LangSmith's answer: {e}"),
                })?
                .to_bytes();
            Ok::<_, String>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| {
                format!(
                    "{what}: LangSmith at {} did not answer within {} s",
                    self.base,
                    TIMEOUT.as_secs()
                )
            })??;
        if !status.is_success() {
            return Err(refusal(&what, status, &bytes));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| format!("{what}: LangSmith's answer is not JSON ({e})"))
    }
}

/// A non-2xx answer in one line.
fn refusal(what: &str, status: StatusCode, body: &[u8]) -> String {
    let detail = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("detail")
                .map(|d| d.as_str().map_or(d.to_string(), str::to_string))
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    // The server's words, not all of them: a detail may be of any length.
    let detail = crate::config::redact::clip(detail.trim(), 200);
    let detail = detail.as_str();
    let hint = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            ": LangSmith refused the API key (check LANGSMITH_API_KEY)"
        }
        StatusCode::NOT_FOUND => ": not found",
        _ => "",
    };
    match detail {
        "" => format!("{what}: LangSmith answered HTTP {}{hint}", status.as_u16()),
        d => format!(
            "{what}: LangSmith answered HTTP {}{hint} ({d})",
            status.as_u16()
        ),
    }
}

/// A run id as the path takes it: LangSmith ids are UUIDs, and anything else in a path
/// would be a different request.
pub fn run_id(id: &str) -> Result<&str, String> {
    let id = id.trim();
    let ok = !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if ok {
        Ok(id)
    } else {
        Err(format!("`{id}` is not a LangSmith run id (a UUID)"))
    }
}

/// Percent-encodes a query value (all but RFC 3986's unreserved characters).
fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, crate::exchange::URL_UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_is_named_and_a_bad_endpoint_too() {
        let Err(e) = Client::new("", "") else {
            panic!("a client without a key")
        };
        assert!(e.to_string().contains("LANGSMITH_API_KEY"), "{e}");
        let Err(e) = Client::new("ftp://x", "k") else {
            panic!("an ftp endpoint")
        };
        assert!(
            e.to_string().contains("LANGSMITH_ENDPOINT `ftp://x`"),
            "{e}"
        );
    }

    #[test]
    fn run_ids_and_names_stay_in_their_place_in_the_url() {
        assert_eq!(run_id(" 1a-2b "), Ok("1a-2b"));
        assert!(run_id("../sessions").is_err());
        assert_eq!(encode("my agent/é"), "my%20agent%2F%C3%A9");
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_is_refused_as_it_streams_in() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let big = Bytes::from(vec![b' '; MAX_ANSWER + 1]);
        let app = axum::Router::new().route(
            "/runs/{id}",
            axum::routing::get(move || {
                let big = big.clone();
                async move { big }
            }),
        );
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = Client::new(&format!("http://{addr}"), "k").unwrap();
        let err = client.run("1a").await.unwrap_err();
        assert_eq!(
            err,
            "GET /runs/1a: LangSmith's answer is larger than 64 MiB, the most flakestorm reads \
             in one answer: import one run (--from-langsmith RUN_ID) or a project with fewer runs"
        );
        server.abort();
    }

    #[test]
    fn a_refusal_says_what_was_refused() {
        let e = refusal(
            "GET /runs/x",
            StatusCode::UNAUTHORIZED,
            br#"{"detail":"Invalid token"}"#,
        );
        assert_eq!(
            e,
            "GET /runs/x: LangSmith answered HTTP 401: LangSmith refused the API key (check \
             LANGSMITH_API_KEY) (Invalid token)"
        );
    }
}
