//! In-process agents under test: small HTTP endpoints that call their tools the way real
//! agents do, through whichever client a test gives them (proxied, direct, untrusting).

use http_body_util::BodyExt;

use super::origin::{self, text};

/// A research agent: `POST {"input"}` asks its search tool at `tool_url` with `client` and
/// answers `{"result": "According to the search tool: …"}`, or apologises that search is
/// unavailable (with the status or the error).
pub async fn research(client: reqwest::Client, tool_url: String) -> origin::Origin {
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (client, tool_url) = (client.clone(), tool_url.clone());
        async move {
            let _ = req.into_body().collect().await;
            let answer = match client.get(&tool_url).send().await {
                Ok(r) if r.status().is_success() => format!(
                    "According to the search tool: {}",
                    r.text().await.unwrap_or_default()
                ),
                Ok(r) => format!(
                    "Sorry, search is unavailable right now (status {}).",
                    r.status().as_u16()
                ),
                Err(e) => format!("Sorry, search is unavailable right now ({e})."),
            };
            text(&serde_json::json!({"result": answer}).to_string())
        }
    })
    .await
}
