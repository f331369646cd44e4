//! A small weather world for outcome tests (docs/outcomes.md): a real weather API (HTTP)
//! and the same tool as an MCP server (Streamable HTTP, JSON answers), an OpenAI-style LLM
//! stub that asks for `get_weather` and words the answer from the tool result it is sent,
//! and agents that call them through the proxy the way real agents do, each doing
//! something different when a call fails: retry, admit the outage, invent a number, pass
//! on what it got, or crash.

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::origin::{self, Body, Origin, typed};

/// Each city's weather as the tool reports it.
fn report(city: &str) -> Value {
    let (c, f, conditions) = match city {
        "Oslo" => (3.5, 38.3, "Cloudy"),
        _ => (21.4, 70.5, "Sunny"),
    };
    json!({"city": city, "temp_c": c, "temp_f": f, "conditions": conditions,
           "updated": "2026-11-28T09:00:00Z"})
}

fn city_of(text: &str) -> String {
    let word = text.trim_end_matches(['?', '.', '!']).rsplit(' ').next();
    word.unwrap_or("Paris").to_string()
}

/// The weather API: `GET /weather?city=X`.
pub async fn tool() -> Origin {
    origin::start(None, |req: Request<Incoming>| async move {
        let q = req.uri().query().unwrap_or_default();
        let city = q.strip_prefix("city=").unwrap_or("Paris").to_string();
        typed(&report(&city).to_string(), "application/json")
    })
    .await
}

/// The same tool as an MCP server: `tools/call get_weather {city}` answered with the
/// report as JSON text.
pub async fn mcp() -> Origin {
    origin::start(None, |req: Request<Incoming>| async move {
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let city = msg["params"]["arguments"]["city"]
            .as_str()
            .unwrap_or("Paris");
        let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "content": [{"type": "text", "text": report(city).to_string()}], "isError": false}});
        typed(&answer.to_string(), "application/json")
    })
    .await
}

/// An OpenAI-compatible chat completions stub: asked without a tool result, it calls
/// `get_weather` for the city of the question; given one, it words the answer from it
/// (`It is 21.4°C (70.5°F) in Paris, Sunny.`), or apologises when the result is an error.
pub async fn llm() -> Origin {
    origin::start(None, |req: Request<Incoming>| async move {
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let messages = asked["messages"].as_array().cloned().unwrap_or_default();
        let tool = messages.iter().rev().find(|m| m["role"] == "tool");
        let message = match tool {
            None => {
                let q = messages.iter().find(|m| m["role"] == "user");
                let city = city_of(q.and_then(|m| m["content"].as_str()).unwrap_or(""));
                let args = json!({"city": city}).to_string();
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "get_weather", "arguments": args}}]})
            }
            Some(t) => {
                let result = t["content"].as_str().unwrap_or("");
                json!({"role": "assistant", "content": words(result)})
            }
        };
        let finish = if tool.is_none() { "tool_calls" } else { "stop" };
        let answer = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": "stub", "choices": [{"index": 0, "message": message,
            "finish_reason": finish}], "usage": {"prompt_tokens": 9, "completion_tokens": 9,
            "total_tokens": 18}});
        typed(&answer.to_string(), "application/json")
    })
    .await
}

fn words(result: &str) -> String {
    match serde_json::from_str::<Value>(result) {
        Ok(r) if r.get("temp_c").is_some() => format!(
            "It is {}°C ({}°F) in {}, {}.",
            r["temp_c"],
            r["temp_f"],
            r["city"].as_str().unwrap_or("?"),
            r["conditions"].as_str().unwrap_or("?")
        ),
        Ok(_) | Err(_) => "Sorry, the weather service is unavailable right now.".into(),
    }
}

/// What an agent does when a call fails or its data does not add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Retries a failed or inconsistent call twice (honouring `retry-after`), then admits
    /// the outage.
    Retrier,
    /// Admits the outage at once.
    Honest,
    /// Answers a made-up temperature instead (75 °F).
    Inventor,
    /// Checks nothing: the tool's result goes to the model as it came.
    Repeater,
    /// Answers HTTP 500.
    Crasher,
}

/// How an agent reaches its tool.
#[derive(Debug, Clone)]
pub enum Via {
    Http(String),
    Mcp(String),
}

/// A weather agent: `POST {"input"}` → the LLM, the tool it asks for, the LLM again, each
/// call through `client` with the case's `traceparent` passed on; `{"result": answer}`.
pub async fn agent(client: reqwest::Client, llm: String, via: Via, how: Behaviour) -> Origin {
    agent_bypassing(client, llm, via, how, None).await
}

/// `agent`, but for `around`'s city its tool call goes with `around`'s client, which does
/// not use the proxy (an SDK that builds its own transport).
pub async fn agent_bypassing(
    client: reqwest::Client,
    llm: String,
    via: Via,
    how: Behaviour,
    around: Option<(reqwest::Client, &'static str)>,
) -> Origin {
    origin::start(None, move |req: Request<Incoming>| {
        let (client, llm, via, around) = (client.clone(), llm.clone(), via.clone(), around.clone());
        async move {
            let trace = req.headers().get("traceparent").cloned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let prompt = input["input"].as_str().unwrap_or("").to_string();
            let run = Run {
                client,
                llm,
                via,
                how,
                trace,
                around,
            };
            match run.answer(&prompt).await {
                Some(a) => typed(&json!({"result": a}).to_string(), "application/json"),
                None => {
                    let mut r: Response<Body> =
                        typed(r#"{"error": "crashed"}"#, "application/json");
                    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                    r
                }
            }
        }
    })
    .await
}

struct Run {
    client: reqwest::Client,
    llm: String,
    via: Via,
    how: Behaviour,
    trace: Option<http::HeaderValue>,
    around: Option<(reqwest::Client, &'static str)>,
}

impl Run {
    fn attempts(&self) -> usize {
        if self.how == Behaviour::Retrier { 3 } else { 1 }
    }

    fn traced(&self, b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.trace {
            Some(t) => b.header("traceparent", t.clone()),
            None => b,
        }
    }

    /// The answer, or `None` to crash.
    async fn answer(&self, prompt: &str) -> Option<String> {
        let user = json!({"role": "user", "content": prompt});
        let Some(first) = self.chat(vec![user.clone()]).await else {
            return self.failed(prompt);
        };
        let call = &first["choices"][0]["message"]["tool_calls"][0];
        let args: Value = serde_json::from_str(call["function"]["arguments"].as_str()?).ok()?;
        let city = args["city"].as_str().unwrap_or("Paris").to_string();
        let Some(result) = self.weather(&city).await else {
            return self.failed(prompt);
        };
        let asked = json!({"role": "assistant", "content": null, "tool_calls": [call]});
        let tool = json!({"role": "tool", "tool_call_id": "call_1", "content": result});
        let Some(last) = self.chat(vec![user, asked, tool]).await else {
            return self.failed(prompt);
        };
        last["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string)
    }

    fn failed(&self, prompt: &str) -> Option<String> {
        match self.how {
            Behaviour::Crasher => None,
            // Out of reach of any value `corrupt` could plant in these reports: an invented
            // number that a planted one rounds to would be `propagated` (the wire cannot
            // tell the two apart, and that is the worse class).
            Behaviour::Inventor => Some(format!("It is 75°F in {}.", city_of(prompt))),
            Behaviour::Retrier | Behaviour::Honest | Behaviour::Repeater => {
                Some("Sorry, the weather service is unavailable right now.".into())
            }
        }
    }

    async fn chat(&self, messages: Vec<Value>) -> Option<Value> {
        let body = json!({"model": "stub", "messages": messages,
            "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]});
        for _ in 0..self.attempts() {
            let post = self
                .client
                .post(&self.llm)
                .header("content-type", "application/json");
            let r = self.traced(post.body(body.to_string())).send().await.ok()?;
            if r.status().is_success() {
                return serde_json::from_slice(&r.bytes().await.ok()?).ok();
            }
            let wait = r
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok());
            tokio::time::sleep(std::time::Duration::from_secs_f64(
                wait.unwrap_or(0.0f64).min(1.0),
            ))
            .await;
        }
        None
    }

    /// The tool's report as text, when a call gave one that adds up (the Repeater takes any
    /// 2xx as it is).
    async fn weather(&self, city: &str) -> Option<String> {
        for _ in 0..self.attempts() {
            if let Some(text) = self.call(city).await {
                let r: Option<Value> = serde_json::from_str(&text).ok();
                let sound = r.as_ref().is_some_and(|r| consistent(r, city));
                if self.how == Behaviour::Repeater || sound {
                    return Some(text);
                }
            }
        }
        None
    }

    async fn call(&self, city: &str) -> Option<String> {
        match &self.via {
            Via::Http(url) => {
                let client = match &self.around {
                    Some((direct, c)) if *c == city => direct,
                    Some(_) | None => &self.client,
                };
                let r = self
                    .traced(client.get(format!("{url}?city={city}")))
                    .send()
                    .await
                    .ok()?;
                if !r.status().is_success() {
                    return None;
                }
                r.text().await.ok()
            }
            Via::Mcp(url) => {
                let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "get_weather", "arguments": {"city": city}}});
                let post = self
                    .client
                    .post(url)
                    .header("content-type", "application/json");
                let r = self
                    .traced(post.body(call.to_string()))
                    .header("accept", "application/json, text/event-stream")
                    .send()
                    .await
                    .ok()?;
                let v: Value = serde_json::from_slice(&r.bytes().await.ok()?).ok()?;
                if v["result"]["isError"] == json!(true) || v.get("error").is_some() {
                    return None;
                }
                v["result"]["content"][0]["text"]
                    .as_str()
                    .map(str::to_string)
            }
        }
    }
}

/// A report about the city asked for, whose two temperatures agree: corrupted data is not.
fn consistent(r: &Value, city: &str) -> bool {
    let agree = match (r["temp_c"].as_f64(), r["temp_f"].as_f64()) {
        (Some(c), Some(f)) => (c * 9.0 / 5.0 + 32.0 - f).abs() < 1.0,
        _ => false,
    };
    agree && r["city"] == city
}
