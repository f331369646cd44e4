//! `advanced.embeddings` end to end: a local server speaking the OpenAI embeddings wire
//! format (a synonym-aware bag of words, deterministic) lets `similarity` and
//! `behavior_unchanged` accept a paraphrase the lexical measure rejects; an endpoint that
//! fails leaves those cells not applicable with a warning, never passed.

mod common;

use std::sync::{Arc, Mutex};

use common::origin::{self, text};
use common::*;
use flakestorm::checks::Verdict;
use flakestorm::run::{ChaosReport, ContractReport, Embedder, RunContext, run_chaos, run_contract};
use http_body_util::BodyExt;

const DIM: usize = 1024;

/// Words mapped to one concept, and words with no weight.
fn concept(word: &str) -> Option<&str> {
    match word {
        "sales" => Some("revenue"),
        "usd" => Some("dollars"),
        "third" => Some("q3"),
        "in" | "was" | "were" | "the" | "of" | "per" | "s" | "is" | "quarter" | "cached"
        | "data" | "earned" => None,
        w => Some(w),
    }
}

/// A bag of concepts, hashed (FNV-1a) into `DIM` dimensions.
fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    let words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty());
    for w in words.map(str::to_lowercase) {
        if let Some(c) = concept(&w) {
            let h = c.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            });
            v[(h % DIM as u64) as usize] += 1.0;
        }
    }
    v
}

type Bodies = Arc<Mutex<Vec<serde_json::Value>>>;

/// The embeddings server: answers `data` in reverse order (clients must sort by `index`),
/// or `fail`s with a 500.
async fn embeddings(fail: bool) -> (origin::Origin, Bodies) {
    let bodies = Bodies::default();
    let seen = bodies.clone();
    let o = origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let seen = seen.clone();
        async move {
            let bytes = req.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            seen.lock().unwrap().push(body.clone());
            if fail {
                let mut r = text("model not loaded");
                *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                return r;
            }
            let input = body["input"].as_array().unwrap();
            let data: Vec<_> = (input.iter().enumerate().rev())
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector(t.as_str().unwrap())}))
                .collect();
            origin::typed(
                &serde_json::json!({"object": "list", "data": data, "model": body["model"]}).to_string(),
                "application/json",
            )
        }
    })
    .await;
    (o, bodies)
}

/// An agent that answers from its search tool, or from its cache in other words.
async fn agent(proxy: &TestProxy, tool_url: String) -> origin::Origin {
    let client = client_via(proxy, H1);
    origin::start(None, move |_req| {
        let (client, tool_url) = (client.clone(), tool_url.clone());
        async move {
            let resp = client.get(&tool_url).send().await.unwrap();
            let answer = if resp.status().is_success() {
                "ACME revenue in Q3 was 4.1 billion dollars, per the search tool."
            } else {
                "Per cached data, ACME earned 4.1 billion USD of sales in the third quarter."
            };
            text(&serde_json::json!({"result": answer}).to_string())
        }
    })
    .await
}

const CONTRACT: &str = r#"
golden_prompts: ["What was ACME's Q3 revenue?"]
contract:
  name: Paraphrases
  invariants:
    - {id: same-answer, type: behavior_unchanged}
    - {id: on-topic, type: similarity, expected: "ACME's third quarter sales were 4.1 billion USD."}
    - {id: not-the-ceo, type: similarity, expected: "The CEO of ACME is Jane Doe."}
    - {id: answers, type: completes}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
"#;

/// Runs `CONTRACT`, and a chaos run of its `on-topic` check, judged with `server`'s
/// embeddings (or lexically: `embed: false`).
async fn run(server: &origin::Origin, embed: bool) -> (ContractReport, ChaosReport) {
    let tool = origin::fixed(None, "revenue was $4.1B").await;
    let yaml = format!(
        "{CONTRACT}tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\nadvanced:\n  embeddings: {{url: '{}', model: test-embed, api_key: test-key}}\n",
        tool.addr,
        server.http_url("/v1/embeddings")
    );
    let p = start_proxy(&yaml).await;
    let a = agent(&p, tool.http_url("/search")).await;
    let (cfg, ctx) = run_context(&p, &a.http_url("/"));
    let embedder = cfg
        .advanced
        .embeddings
        .as_ref()
        .map(|e| Embedder::new(e).unwrap());
    let mut ctx = RunContext {
        concurrency: 1,
        ..ctx
    };
    ctx.scoring.embedder = embedder.filter(|_| embed);
    let (contract, golden) = (cfg.contract.as_ref().unwrap(), &cfg.golden_prompts);
    let report = within("contract run", run_contract(&ctx, contract, golden))
        .await
        .unwrap();
    let on_topic = [contract.invariants[1].invariant.clone()];
    let faults = &contract.chaos_matrix[1].chaos;
    let chaos = within(
        "chaos run",
        run_chaos(&ctx, "chaos", faults, golden, &on_topic),
    )
    .await
    .unwrap();
    let port = format!(":{}/", server.addr.port());
    assert!(
        !p.daemon
            .journal
            .all()
            .iter()
            .any(|e| e.request.url.contains(&port)),
        "the harness's embedding requests never go through the proxy"
    );
    p.stop().await;
    (report, chaos)
}

fn reason(v: &Verdict) -> &str {
    match v {
        Verdict::Pass(r) | Verdict::Fail(r) | Verdict::NotApplicable(r) | Verdict::NotTested(r) => {
            r
        }
    }
}

#[tokio::test]
async fn embeddings_accept_a_paraphrase_the_lexical_measure_rejects() {
    let (server, bodies) = embeddings(false).await;
    let (lexical, _) = run(&server, false).await;
    assert!(
        bodies.lock().unwrap().is_empty(),
        "lexical runs call no endpoint"
    );
    let Verdict::Fail(why) = cell(&lexical, "same-answer", "search-down") else {
        panic!("{lexical:#?}")
    };
    assert!(why.contains("lexical similarity to baseline 0.3"), "{why}");
    assert!(matches!(
        cell(&lexical, "on-topic", "no-chaos"),
        Verdict::Fail(_)
    ));

    let (r, chaos) = run(&server, true).await;
    let same = cell(&r, "same-answer", "search-down");
    assert!(same.passed(), "{same:?}");
    assert!(
        reason(same).starts_with("embedding similarity to baseline 0.8"),
        "{same:?}"
    );
    for scenario in ["no-chaos", "search-down"] {
        let on_topic = cell(&r, "on-topic", scenario);
        assert!(on_topic.passed(), "{scenario}: {on_topic:?}");
        let Verdict::Fail(why) = cell(&r, "not-the-ceo", scenario) else {
            panic!("an unrelated text stays dissimilar: {r:#?}")
        };
        assert!(
            why.contains("embedding similarity to expected 0.1"),
            "{why}"
        );
    }
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(
        chaos.prompts[0].passed && chaos.warnings.is_empty(),
        "{chaos:#?}"
    );

    let seen = server.log.all();
    assert!(
        seen.iter()
            .all(|s| s.method == "POST" && s.uri == "/v1/embeddings")
    );
    assert!(
        seen.iter()
            .all(|s| s.headers["authorization"] == "Bearer test-key")
    );
    assert!(
        seen.iter()
            .all(|s| s.headers["content-type"] == "application/json")
    );
    let bodies = bodies.lock().unwrap();
    assert!(
        bodies
            .iter()
            .all(|b| b["model"] == "test-embed" && b["input"].is_array())
    );
    let mut sent: Vec<&str> = bodies
        .iter()
        .flat_map(|b| {
            b["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
        })
        .collect();
    assert!(sent.contains(&"The CEO of ACME is Jane Doe."), "{sent:?}");
    let all = sent.len();
    sent.sort_unstable();
    sent.dedup();
    assert_eq!(
        sent.len(),
        all,
        "each text is embedded once per run: {sent:?}"
    );
}

#[tokio::test]
async fn a_failing_endpoint_leaves_similarity_cells_not_applicable_with_a_warning() {
    let (server, _bodies) = embeddings(true).await;
    let (r, chaos) = run(&server, true).await;
    let error = format!(
        "embeddings endpoint {}: HTTP 500: model not loaded",
        server.http_url("/v1/embeddings")
    );
    for scenario in ["no-chaos", "search-down"] {
        for inv in ["same-answer", "on-topic", "not-the-ceo"] {
            if (inv, scenario) == ("same-answer", "no-chaos") {
                continue; // the baseline itself: never compared with itself
            }
            assert_eq!(
                cell(&r, inv, scenario),
                &Verdict::NotApplicable(format!("no embedding similarity: {error}")),
                "{inv} under {scenario}: not judged, neither passed nor failed"
            );
        }
        assert!(cell(&r, "answers", scenario).passed());
    }
    let warning = format!(
        "{error}: similarity and behavior_unchanged checks that needed it are not applicable"
    );
    assert_eq!(
        r.warnings,
        std::slice::from_ref(&warning),
        "one warning for both scenarios"
    );
    assert!(matches!(
        chaos.prompts[0].checks[0],
        Verdict::NotApplicable(_)
    ));
    assert_eq!(chaos.warnings, [warning]);
}
