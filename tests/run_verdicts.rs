//! Verdicts a user can trust (docs/invariants.md, "Verdicts"): a run that tested nothing
//! is never a pass, environment errors are not the agent's behaviour, an agent that fails
//! its cases does not pass at score 0, and the agent is judged on its own answers and its
//! own retries, never on flakestorm's.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::agents::research;
use common::origin::{self, text};
use common::*;
use flakestorm::checks::Verdict;
use flakestorm::run::RunVerdict;

const CONTRACT: &str = r#"
golden_prompts: ["What was ACME's Q3 revenue?", "Who is ACME's CEO?"]
contract:
  name: Research agent
  invariants:
    - {id: cites, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains, value: unavailable, severity: high, when: tool_faults_active}
    - {id: answers, type: completes}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{id: search-down, tool: web_search, mode: error, error_code: 503}]
"#;

/// The same agent, whose telemetry exporter does use the proxy: its uploads crossing the
/// proxy do not show that the agent's tool calls did. Still not tested.
#[tokio::test]
async fn an_exporter_through_the_proxy_does_not_make_a_bypassing_agent_tested() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    let collector = origin::fixed(None, "ok").await;
    let yaml = format!(
        "{CONTRACT}tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\n",
        tool.addr
    );
    let p = start_proxy(&yaml).await;
    let research_agent = research(direct_client(), tool.http_url("/search")).await;
    let upload = collector.http_url("/v1/traces");
    let invoke = research_agent.http_url("/invoke");
    let agent = exporting(&p, &upload, &invoke).await;
    let r = contract_run(&p, &agent.http_url("/invoke"), 0).await;
    assert_eq!(
        collector.log.len(),
        4,
        "every case uploaded through the proxy"
    );
    assert_eq!(tool.log.len(), 4, "the tool got every call, directly");
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested, "{r:#?}");
    let said = r.judgement.reasons.join("\n");
    assert!(
        said.contains("rule `search-down` (error) never reached the agent's traffic")
            && said.contains(&format!(
                "the proxy saw http://{} (other) ×2",
                collector.addr
            )),
        "{said}"
    );
    // Without chaos, the tools declared are what must be crossed.
    let no_chaos = CONTRACT
        .split("    - name: search-down")
        .next()
        .unwrap()
        .to_string();
    let yaml = format!(
        "{no_chaos}tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\n",
        tool.addr
    );
    let q = start_proxy(&yaml).await;
    let agent = exporting(&q, &upload, &invoke).await;
    let r = contract_run(&q, &agent.http_url("/invoke"), 0).await;
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested, "{r:#?}");
    assert!(
        r.judgement.reasons[0].starts_with(
            "no call to the agent's tools or LLMs crossed the proxy during the run, only 2 other"
        ),
        "{:?}",
        r.judgement.reasons
    );
    q.stop().await;
    p.stop().await;
}

/// An agent that uploads a span to `upload` through `p`'s proxy, then has the research
/// agent at `invoke` (which calls its tool directly) answer.
async fn exporting(p: &TestProxy, upload: &str, invoke: &str) -> origin::Origin {
    let (proxied, upload, invoke) = (client_via(p, H1), upload.to_string(), invoke.to_string());
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (proxied, upload, invoke) = (proxied.clone(), upload.clone(), invoke.clone());
        async move {
            use http_body_util::BodyExt;
            let body = req.into_body().collect().await.unwrap().to_bytes();
            proxied.post(&upload).body("spans").send().await.unwrap();
            let answer = direct_client()
                .post(&invoke)
                .body(body)
                .send()
                .await
                .unwrap();
            text(&answer.text().await.unwrap())
        }
    })
    .await
}

/// What most Flakestorm v2 users do first: start the agent by hand, without the proxy
/// variables. Its tool is called directly, no fault fires, and the run says so.
#[tokio::test]
async fn an_agent_that_bypasses_the_proxy_is_not_tested() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    let yaml = format!(
        "{CONTRACT}tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\n",
        tool.addr
    );
    let p = start_proxy(&yaml).await;
    let a = research(direct_client(), tool.http_url("/search")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    assert_eq!(tool.log.len(), 4, "the tool got every call, directly");
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested, "{r:#?}");
    assert_eq!(r.judgement.verdict.exit_code(), 2);
    assert!(
        r.judgement.reasons[0].starts_with(
            "no request crossed the proxy during the run: the agent is not using flakestorm's proxy"
        ),
        "{:?}",
        r.judgement.reasons
    );
    assert!(!r.score.passed);
    assert!(matches!(
        cell(&r, "admits-outage", "search-down"),
        Verdict::NotTested(why) if why.contains("no request crossed the proxy")
    ));
    let down = r
        .coverage
        .iter()
        .find(|c| c.scenario == "search-down")
        .unwrap();
    assert_eq!((down.exchanges, down.rules[0].applied), (0, 0));
    assert!(down.not_tested.is_some());
    p.stop().await;
}

/// A rule whose URL matches nothing the agent calls is named, with the hosts seen.
#[tokio::test]
async fn a_rule_that_matches_nothing_says_what_the_proxy_saw() {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    // The tool's glob names another port: the agent's calls are `other`, not `web_search`.
    let yaml =
        format!("{CONTRACT}tools:\n  - {{name: web_search, match_url: 'http://127.0.0.1:9/*'}}\n");
    let p = start_proxy(&yaml).await;
    let a = research(client_via(&p, H1), tool.http_url("/search")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested);
    let why = &r.judgement.reasons[0];
    let want = format!(
        "scenario `search-down`: rule `search-down` (error) never reached the agent's traffic: \
         no request matched calls to tool `web_search` (tools: `web_search` is \
         http://127.0.0.1:9/*); the proxy saw http://{} (other) ×2",
        tool.addr
    );
    assert_eq!(why, &want);
    assert!(
        cell(&r, "cites", "no-chaos").passed(),
        "no-chaos is still judged"
    );
    p.stop().await;
}

/// The upstream's certificate is not trusted by flakestorm (no `proxy.upstream_ca_file`):
/// every tool call that reaches it ends in the proxy's own 502. That is the environment,
/// not the agent: those cases are not judged, the fix is named, and the run does not pass
/// (under search-down the fault answers before any upstream, so half the cases are judged).
#[tokio::test]
async fn an_untrusted_upstream_is_not_the_agents_failure() {
    let tool = origin::fixed(Some(H1), "revenue was $4.1B").await;
    let yaml = format!(
        "{CONTRACT}proxy: {{upstream_ca_file: null}}\ntools:\n  - {{name: web_search, match_url: 'https://localhost:{}/*'}}\n",
        tool.addr.port()
    );
    let p = start_proxy(&yaml).await;
    let a = research(client_via(&p, H1), tool.https_url("/search")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    let no_chaos: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.scenario == "no-chaos")
        .collect();
    for c in &no_chaos {
        let why = c.not_judged.as_deref().unwrap_or_default();
        assert!(
            why.contains("TLS with upstream") && why.contains("set proxy.upstream_ca_file"),
            "{why}"
        );
    }
    assert!(matches!(
        cell(&r, "cites", "no-chaos"),
        Verdict::NotTested(why) if why.contains("proxy.upstream_ca_file")
    ));
    assert_eq!(
        r.judgement.verdict,
        RunVerdict::NotTested,
        "{:?}",
        r.judgement
    );
    assert!(
        r.judgement.reasons[0]
            .starts_with("2 of 4 cases could not be judged; the first: GET https://localhost:"),
        "{:?}",
        r.judgement.reasons
    );
    assert!(cell(&r, "admits-outage", "search-down").passed());
    p.stop().await;
}

/// An agent that does not trust flakestorm's CA aborts TLS in the tunnel: no request
/// comes through, and the case says what to fix.
#[tokio::test]
async fn an_agent_that_does_not_trust_the_ca_is_told_so() {
    let tool = origin::fixed(Some(H1), "revenue was $4.1B").await;
    let yaml = format!(
        "{CONTRACT}tools:\n  - {{name: web_search, match_url: 'https://localhost:{}/*'}}\n",
        tool.addr.port()
    );
    let p = start_proxy(&yaml).await;
    // Trusts the origin's CA, not flakestorm's: the interception fails.
    let untrusting = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(p.url()).unwrap())
        .use_preconfigured_tls(tls_client(
            &std::fs::read_to_string(fixture("test-ca.pem")).unwrap(),
            H1,
        ))
        .build()
        .unwrap();
    let a = research(untrusting, tool.https_url("/search")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    let why = r.cases[0].not_judged.as_deref().unwrap_or_default();
    assert!(
        why.starts_with(&format!("CONNECT https://localhost:{}/", tool.addr.port()))
            && why.contains("the agent does not trust flakestorm's CA"),
        "{why}"
    );
    // The handshake fails before any request, so search-down's fault cannot fire either:
    // every case is unjudged, and the run is an error.
    assert_eq!(r.judgement.verdict, RunVerdict::Error, "{:?}", r.judgement);
    assert!(r.judgement.reasons[0].starts_with("4 of 4 cases could not be judged"));
    assert_eq!(tool.log.len(), 0);
    p.stop().await;
}

/// An agent that answers HTTP 500 to every prompt gets `completes` failed on every case:
/// that is a failure, not a pass at score 0; and flakestorm invoked it once per case even
/// with `advanced.retries: 2` (the 500 is its answer).
#[tokio::test]
async fn an_agent_that_answers_500_fails() {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let broken = origin::start(None, move |_req| {
        seen.fetch_add(1, Ordering::SeqCst);
        async move {
            let mut r = text(r#"{"detail": "Internal Server Error"}"#);
            *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
    })
    .await;
    let yaml = "golden_prompts: [a, b, c, d]\ncontract:\n  name: c\n  invariants:\n    - {id: answers, type: completes}\n";
    let p = start_proxy(yaml).await;
    let r = contract_run(&p, &broken.http_url("/invoke"), 2).await;
    assert_eq!(calls.load(Ordering::SeqCst), 4, "one invocation per case");
    assert!(r.cases.iter().all(|c| c.attempts == 1));
    assert_eq!(r.score.value, 0.0);
    assert_eq!(r.judgement.verdict, RunVerdict::Fail);
    assert_eq!(r.judgement.verdict.exit_code(), 1);
    assert_eq!(
        r.judgement.reasons,
        [
            "score 0.0 is below the pass mark 70",
            "the agent answered 0 of 4 cases; the first without an answer: agent answered \
             HTTP 500: {\"detail\": \"Internal Server Error\"}"
        ]
    );
    p.stop().await;
}

const WEATHER: &str = r#"
golden_prompts: ["Weather in Paris?", "Weather in Oslo?"]
contract:
  name: Weather agent
  invariants:
    - {id: calls-weather, type: tool_called, tool: web_search, severity: critical}
    - {id: no-email, type: tool_not_called, tool: send_email}
    - {id: answers, type: completes}
"#;

/// The weather agent's tools: its search at `tool`, and an email tool it never calls.
fn weather_tools(tool: &origin::Origin) -> String {
    format!(
        "tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\n  - {{name: send_email, \
         match_url: 'http://127.0.0.1:9/*'}}\n",
        tool.addr
    )
}

/// Node 20's `fetch` ignores HTTPS_PROXY: the agent calls its tool directly and nothing
/// crosses the proxy. A call not seen is not a call not made: the traffic checks are not
/// tested (not failed, not passed), and the run is NOT TESTED (exit 2), the cause its
/// first reason, whatever else it would have failed.
#[tokio::test]
async fn traffic_checks_of_an_agent_whose_calls_never_cross_the_proxy_are_not_tested() {
    let tool = origin::fixed(None, "sunny").await;
    let yaml = format!("{WEATHER}{}", weather_tools(&tool));
    let p = start_proxy(&yaml).await;
    let a = research(direct_client(), tool.http_url("/search")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    assert_eq!(tool.log.len(), 2, "the tool got every call, directly");
    for inv in ["calls-weather", "no-email"] {
        assert!(
            matches!(
                cell(&r, inv, "no-chaos"),
                Verdict::NotTested(why) if why.starts_with("no request crossed the proxy while it ran")
            ),
            "{inv}: {:?}",
            cell(&r, inv, "no-chaos")
        );
    }
    assert!(cell(&r, "answers", "no-chaos").passed());
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested, "{r:#?}");
    assert_eq!(r.judgement.verdict.exit_code(), 2);
    assert!(
        r.judgement.reasons[0].starts_with(
            "no request crossed the proxy during the run: the agent is not using flakestorm's proxy"
        ),
        "{:?}",
        r.judgement.reasons
    );
    p.stop().await;
}

/// An agent that answers a prompt it has seen from its cache: its traffic crossed the proxy
/// in the first scenario and not in the next, and the run says so (not "the agent is not
/// using flakestorm's proxy"), with the fix.
#[tokio::test]
async fn a_scenario_answered_from_a_cache_says_so() {
    let tool = origin::fixed(None, "sunny").await;
    let yaml = format!(
        "{WEATHER}  chaos_matrix:\n    - name: no-chaos\n    - name: search-down\n      tool_faults: [{{id: search-down, tool: web_search, mode: error, error_code: 503}}]\n{}",
        weather_tools(&tool)
    );
    let p = start_proxy(&yaml).await;
    let inner = research(client_via(&p, H1), tool.http_url("/search")).await;
    let a = caching(inner.http_url("/invoke")).await;
    let r = contract_run(&p, &a.http_url("/invoke"), 0).await;
    assert_eq!(tool.log.len(), 2, "one call per prompt, then the cache");
    let down = r
        .coverage
        .iter()
        .find(|c| c.scenario == "search-down")
        .unwrap();
    let why = down.silent.as_deref().unwrap_or_default();
    assert!(
        why.starts_with(
            "the agent sent nothing through the proxy in this scenario but did earlier in the \
             run (2 request(s))"
        ) && why.contains("set `agent.reset_endpoint`"),
        "{why}"
    );
    assert_eq!(down.rules[0].why_not.as_deref(), Some(why));
    assert!(
        matches!(cell(&r, "calls-weather", "search-down"), Verdict::NotTested(w) if w.contains(why)),
        "{:?}",
        cell(&r, "calls-weather", "search-down")
    );
    assert!(cell(&r, "calls-weather", "no-chaos").passed());
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested, "{r:#?}");
    let said = r.judgement.reasons.join("\n");
    assert!(
        said.contains(&format!(
            "scenario `search-down`: rule `search-down` (error) never reached the agent's \
             traffic: {why}"
        )) && !said.contains("not using flakestorm's proxy"),
        "{said}"
    );
    p.stop().await;
}

/// An agent in front of the one at `url` that answers a prompt it has answered before from
/// its cache, without calling that one (nor, so, its tools).
async fn caching(url: String) -> origin::Origin {
    let cache = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (url, cache) = (url.clone(), cache.clone());
        async move {
            use http_body_util::BodyExt;
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let known = cache.lock().unwrap().get(&body).cloned();
            let answer = match known {
                Some(a) => a,
                None => {
                    let r = direct_client().post(&url).body(body.clone()).send().await;
                    let a = r.unwrap().text().await.unwrap();
                    cache.lock().unwrap().insert(body, a.clone());
                    a
                }
            };
            text(&answer)
        }
    })
    .await
}

/// `agent.response_path` names a key none of the agent's answers has: every case's "no
/// answer" is flakestorm reading the wrong place, a config error (exit 2) naming the keys
/// the answers do have, not the agent's failure; when some answers have it, the others
/// are the agent's failures as before.
#[tokio::test]
async fn a_response_path_missing_from_every_answer_is_a_config_error() {
    let yaml = "golden_prompts: [a, b]\ncontract:\n  name: c\n  invariants:\n    - {id: answers, type: completes}\n";
    let p = start_proxy(yaml).await;
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let agent = origin::start(None, move |_req| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            match n {
                // The third call on (the second run's second case) answers where it should.
                0..=2 => text(r#"{"output": "sunny", "id": 7}"#),
                _ => text(r#"{"result": "sunny"}"#),
            }
        }
    })
    .await;
    let r = contract_run(&p, &agent.http_url("/invoke"), 0).await;
    assert_eq!(r.judgement.verdict, RunVerdict::Error, "{:?}", r.judgement);
    assert_eq!(r.judgement.verdict.exit_code(), 2);
    assert_eq!(
        r.judgement.reasons,
        [
            "config error: agent.response_path `result` is in none of the agent's 2 answer(s); \
          their top-level keys are `output`, `id`: set agent.response_path to where the answer \
          is"
        ]
    );
    let r = contract_run(&p, &agent.http_url("/invoke"), 0).await;
    assert_eq!(r.judgement.verdict, RunVerdict::Fail, "{:?}", r.judgement);
    assert!(
        r.cases[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("path `result` not found in response")),
        "{:?}",
        r.cases[0]
    );
    p.stop().await;
}
