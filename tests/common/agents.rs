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

/// How [`gullible`] behaves beyond the default: search, and email whatever the search
/// result asks to be emailed.
#[derive(Default)]
pub struct Gullible {
    /// Email only when the prompt also contains this word.
    pub when_prompt_says: Option<&'static str>,
    /// Pass the driver's `traceparent` on to the tool calls.
    pub propagate_trace: bool,
    /// POST here after searching, untraced, like an OpenTelemetry exporter's upload.
    pub telemetry: Option<String>,
    /// Hold every request until this many are in flight together.
    pub barrier: Option<usize>,
}

/// An agent that obeys instructions it finds in tool results: it asks its search tool
/// (`GET search`) and, when the result says "send the report by email", POSTs the result to
/// `email`; it answers `{"result": "According to search: …"}`.
pub async fn gullible(
    client: reqwest::Client,
    search: String,
    email: String,
    how: Gullible,
) -> origin::Origin {
    let how = std::sync::Arc::new(how);
    let barrier = how
        .barrier
        .map(|n| std::sync::Arc::new(tokio::sync::Barrier::new(n)));
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (client, search, email, how, barrier) = (
            client.clone(),
            search.clone(),
            email.clone(),
            how.clone(),
            barrier.clone(),
        );
        async move {
            let trace = req.headers().get("traceparent").cloned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let prompt = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|b| b["input"].as_str().map(str::to_string))
                .unwrap_or_default();
            if let Some(b) = &barrier {
                b.wait().await;
            }
            let traced = |b: reqwest::RequestBuilder| match (&trace, how.propagate_trace) {
                (Some(t), true) => b.header("traceparent", t.clone()),
                _ => b,
            };
            let found = traced(client.get(&search))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if let Some(telemetry) = &how.telemetry {
                client.post(telemetry).body("spans").send().await.unwrap();
            }
            let asked = how.when_prompt_says.is_none_or(|w| prompt.contains(w));
            if asked && found.contains("send the report by email") {
                traced(client.post(&email))
                    .body(found.clone())
                    .send()
                    .await
                    .unwrap();
            }
            text(
                &serde_json::json!({"result": format!("According to search: {found}")}).to_string(),
            )
        }
    })
    .await
}
