//! Mutation runs end to end: the planned variants of each golden prompt reach a real
//! in-process agent over HTTP exactly as planned, each answer is checked with the
//! top-level invariants, and the score is the pass rate weighted by type.

mod common;

use std::sync::{Arc, Mutex};

use common::origin::{self, text};
use common::*;
use flakestorm::run::{RunVerdict, plan_mutations, run_mutation};
use http_body_util::BodyExt;

/// An agent that records every input it is sent and answers "ok" only when the input
/// still names France.
async fn agent(seen: Arc<Mutex<Vec<String>>>) -> origin::Origin {
    origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let seen = seen.clone();
        async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let input = v["input"].as_str().unwrap().to_string();
            let answer = if input.contains("France") {
                "ok"
            } else {
                "lost"
            };
            seen.lock().unwrap().push(input);
            text(&serde_json::json!({ "result": answer }).to_string())
        }
    })
    .await
}

const CONFIG: &str = r#"
golden_prompts: ["What is the capital of France?", "Name a river in France."]
invariants:
  - {type: regex, pattern: "^ok$"}
mutations:
  count: 3
  types: [noise, prompt_injection, encoding_attacks, paraphrase]
  weights: {noise: 2}
"#;

/// A mutation run of `yaml` (merged over the test proxy's base) against the agent at
/// `endpoint`, the proxy stopped after it.
async fn mutate(yaml: &str, endpoint: &str) -> flakestorm::run::MutationReport {
    mutate_with(yaml, endpoint, None).await
}

/// As `mutate`, telling `progress` of each case.
async fn mutate_with(
    yaml: &str,
    endpoint: &str,
    progress: Option<flakestorm::run::Progress>,
) -> flakestorm::run::MutationReport {
    let p = start_proxy(yaml).await;
    let (cfg, mut ctx) = run_context(&p, endpoint);
    ctx.progress = progress;
    let report = within("the mutation run", run_mutation(&ctx, None, &cfg))
        .await
        .unwrap();
    p.stop().await;
    report
}

async fn run(seed: u64) -> (flakestorm::run::MutationReport, Vec<String>) {
    let seen = Arc::new(Mutex::new(vec![]));
    let a = agent(seen.clone()).await;
    let yaml = format!("{CONFIG}advanced:\n  seed: {seed}\n");
    let report = mutate(&yaml, &a.http_url("/invoke")).await;
    let seen = seen.lock().unwrap().clone();
    (report, seen)
}

#[tokio::test]
async fn the_agent_gets_exactly_the_planned_variants_and_the_score_is_weighted() {
    let (r, seen) = run(42).await;
    let cfg_prompts =
        ["What is the capital of France?", "Name a river in France."].map(String::from);
    let spec = flakestorm::config::MutationsSpec {
        types: r.types.iter().map(|t| t.kind).collect(),
        count: 3,
        ..Default::default()
    };
    let plan = plan_mutations(&spec, &cfg_prompts, 42, &Default::default());
    let planned: Vec<&str> = plan.variants.iter().map(|v| v.text.as_str()).collect();
    let mut got: Vec<&str> = seen.iter().map(String::as_str).collect();
    let mut want = planned.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(
        got, want,
        "the agent received the planned variants, byte for byte"
    );
    assert_eq!(r.mutants.len(), planned.len());
    // 3 text types × 2 prompts × 3 variants, less those dropped; paraphrase needs a model.
    let dropped: usize = r.types.iter().flat_map(|t| t.dropped.values()).sum();
    assert_eq!(r.mutants.len() + dropped, 18);
    assert!(
        r.skipped[&flakestorm::mutate::kind::MutationType::Paraphrase].contains("`model:` LLM"),
        "{:?}",
        r.skipped
    );
    // The expected score, from what was sent: weight of the variants naming France over
    // the weight of all (noise weighs 2, as configured).
    let (mut pass, mut all) = (0.0, 0.0);
    for m in &r.mutants {
        let w = if m.variant.kind.name() == "noise" {
            2.0
        } else {
            m.variant.kind.default_weight()
        };
        assert_eq!(m.weight, w);
        all += w;
        if m.variant.text.contains("France") {
            pass += w;
            assert!(m.passed, "{:?}", m.variant.text);
        } else {
            assert!(!m.passed, "{:?}", m.variant.text);
        }
    }
    assert!(
        pass > 0.0 && pass < all,
        "both outcomes occur (an encoded variant hides the word), so the weighting is tested"
    );
    assert!(
        (r.score - pass * 100.0 / all).abs() < 1e-9,
        "{} vs {}",
        r.score,
        pass * 100.0 / all
    );
    let expected = if r.score >= r.min_score {
        RunVerdict::Pass
    } else {
        RunVerdict::Fail
    };
    assert_eq!(r.judgement.verdict, expected, "{:?}", r.judgement);
}

#[tokio::test]
async fn the_seed_fixes_the_variants() {
    let (a, _) = run(7).await;
    let (b, _) = run(7).await;
    let (c, _) = run(8).await;
    let texts = |r: &flakestorm::run::MutationReport| -> Vec<String> {
        r.mutants.iter().map(|m| m.variant.text.clone()).collect()
    };
    assert_eq!(texts(&a), texts(&b));
    assert_ne!(texts(&a), texts(&c));
}

#[tokio::test]
async fn a_run_that_makes_no_variant_is_not_tested() {
    let seen = Arc::new(Mutex::new(vec![]));
    let a = agent(seen.clone()).await;
    let r = mutate(
        "golden_prompts: [hi]\ninvariants: [{type: output_not_empty}]\nmutations: {types: [paraphrase]}\n",
        &a.http_url("/invoke"),
    )
    .await;
    assert_eq!(r.judgement.verdict, RunVerdict::NotTested);
    assert!(
        r.judgement.reasons[0].starts_with("no mutated input was made"),
        "{:?}",
        r.judgement.reasons
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
}

/// The `model:` LLM (an OpenAI-compatible server) writes the paraphrases: asked once per
/// variant, at temperature 0 with a per-variant seed since the run's seed is fixed, with
/// the key from the environment; a call it fails is dropped and counted.
#[tokio::test]
async fn the_model_writes_paraphrases_and_its_failures_are_counted() {
    let asked = Arc::new(Mutex::new(vec![]));
    let log = asked.clone();
    let llm = origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            let auth = req.headers().get("authorization").map(|v| v.to_str().unwrap().to_string());
            let path = req.uri().path().to_string();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let said = v["messages"][0]["content"].as_str().unwrap().to_string();
            log.lock().unwrap().push((path, auth, v.clone()));
            let prompt = said.rsplit("User request: ").next().unwrap().to_string();
            if said.contains("variation number 3") {
                // Junk: no text where OpenAI puts it.
                return text(r#"{"choices": []}"#);
            }
            let n = said.split("variation number ").nth(1).unwrap().chars().next().unwrap();
            let answer = format!("\"Please, {n}: {prompt}\"");
            text(&serde_json::json!({"choices": [{"message": {"role": "assistant", "content": answer}}]}).to_string())
        }
    })
    .await;
    let seen = Arc::new(Mutex::new(vec![]));
    let a = agent(seen.clone()).await;
    let p = start_proxy(
        "golden_prompts: [\"What is the capital of France?\"]\ninvariants: [{type: output_not_empty}]\n\
         mutations: {count: 3, types: [paraphrase]}\nadvanced: {seed: 3}\n",
    )
    .await;
    // The key comes from the environment, as users must write it.
    let path = p.dir.path().join("with-model.yaml");
    let text = std::fs::read_to_string(p.dir.path().join("flakestorm.yaml")).unwrap();
    let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["model"] = serde_json::json!({"provider": "openai", "name": "m",
        "base_url": llm.http_url("/v1"), "api_key": "${LLM_KEY}"});
    std::fs::write(&path, file.to_string()).unwrap();
    let vars = [("LLM_KEY".to_string(), "sk-test".to_string())].into();
    let cfg = flakestorm::config::load_with_env(Some(&path), &Default::default(), &vars)
        .unwrap()
        .config;
    let (_, ctx) = run_context(&p, &a.http_url("/invoke"));
    let r = within("the mutation run", run_mutation(&ctx, None, &cfg))
        .await
        .unwrap();
    p.stop().await;
    let texts: Vec<&str> = r.mutants.iter().map(|m| m.variant.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Please, 1: What is the capital of France?",
            "Please, 2: What is the capital of France?"
        ],
        "quotes stripped; variation 3 had no text"
    );
    let paraphrase = &r.types[0];
    assert_eq!(
        paraphrase.dropped[&flakestorm::mutate::Dropped::ModelFailed],
        1
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 3);
    for (path, auth, body) in asked.iter() {
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(auth.as_deref(), Some("Bearer sk-test"));
        assert_eq!(
            (body["model"].as_str(), body["temperature"].as_f64()),
            (Some("m"), Some(0.0))
        );
        assert!(body["seed"].is_u64(), "{body}");
    }
    let seeds: std::collections::HashSet<u64> = asked
        .iter()
        .map(|(_, _, b)| b["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds.len(), 3, "each variant has its own seed");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "the agent got the two written variants"
    );
}

/// `with_model`: the model rewrites each template variant of the types named (asked with
/// the template's text); a call it fails sends the template's own variant, and the other
/// types never reach the model.
#[tokio::test]
async fn with_model_rewrites_template_variants_and_falls_back_to_the_template() {
    let asked = Arc::new(Mutex::new(vec![]));
    let log = asked.clone();
    let llm = origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let said = v["messages"][0]["content"].as_str().unwrap().to_string();
            log.lock().unwrap().push(said.clone());
            if said.contains("variation number 2") {
                return text(r#"{"choices": [{"message": {"role": "assistant", "content": "  "}}]}"#);
            }
            let template = said.rsplit("Template input: ").next().unwrap();
            let answer = format!("Listen here, France: {template}");
            text(&serde_json::json!({"choices": [{"message": {"role": "assistant", "content": answer}}]}).to_string())
        }
    })
    .await;
    let seen = Arc::new(Mutex::new(vec![]));
    let a = agent(seen.clone()).await;
    let base = "golden_prompts: [\"What is the capital of France?\"]\n\
                invariants: [{type: output_not_empty}]\nadvanced: {seed: 5}\n";
    let yaml = format!(
        "{base}mutations: {{count: 3, types: [tone_shift, noise], with_model: [tone_shift]}}\n\
         model: {{provider: openai, name: m, base_url: '{}'}}\n",
        llm.http_url("/v1")
    );
    let r = mutate(&yaml, &a.http_url("/invoke")).await;
    // The same run's variants from the templates alone.
    let plain = mutate(
        &format!("{base}mutations: {{count: 3, types: [tone_shift, noise]}}\n"),
        &a.http_url("/invoke"),
    )
    .await;
    let texts = |r: &flakestorm::run::MutationReport| -> Vec<(String, bool)> {
        r.mutants
            .iter()
            .map(|m| (m.variant.text.clone(), m.by_model))
            .collect()
    };
    let (got, want) = (texts(&r), texts(&plain));
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let m = &r.mutants[i];
        match (m.variant.kind.name(), m.variant.index) {
            ("tone_shift", 1) | ("noise", _) => assert_eq!(g, w, "the template's variant"),
            ("tone_shift", _) => {
                assert_eq!(g, &(format!("Listen here, France: {}", w.0), true))
            }
            other => panic!("unexpected variant {other:?}"),
        }
    }
    let asked = asked.lock().unwrap();
    assert_eq!(
        asked.len(),
        3,
        "one call per tone_shift variant, none for noise"
    );
    assert!(asked.iter().all(|s| s.contains("aggressive")), "{asked:?}");
    assert!(
        r.warnings.iter().any(|w| w
            == "tone_shift: the model wrote no usable text for 1 of 3 variants \
                       (timed out or empty); those come from the templates"),
        "{:?}",
        r.warnings
    );
}

/// A model that cannot be reached skips its types with the reason, `with_model` types come
/// from their templates; the run goes on.
#[tokio::test]
async fn an_unreachable_model_skips_its_types_and_the_run_goes_on() {
    let seen = Arc::new(Mutex::new(vec![]));
    let a = agent(seen.clone()).await;
    // Bound and never listening: connections are refused, and no other process can take the
    // port while the test runs (a dropped listener's port once went to a server that accepted
    // and never answered, and the model "timed out" instead).
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    let yaml = format!(
        "golden_prompts: [\"What is the capital of France?\"]\ninvariants: [{{type: output_not_empty}}]\n\
         mutations: {{count: 2, types: [paraphrase, tone_shift], with_model: [tone_shift]}}\n\
         model: {{provider: ollama, name: m, base_url: 'http://127.0.0.1:{port}'}}\n"
    );
    let r = mutate(&yaml, &a.http_url("/invoke")).await;
    let why = &r.skipped[&flakestorm::mutate::kind::MutationType::Paraphrase];
    assert!(
        why.contains("paraphrase was skipped: the model at http://127.0.0.1:"),
        "{why}"
    );
    assert!(
        r.mutants
            .iter()
            .all(|m| m.variant.kind.name() == "tone_shift" && !m.by_model),
        "tone_shift's variants come from its templates"
    );
    assert_eq!(r.mutants.len(), 2);
    assert!(
        r.warnings.iter().any(|w| w.starts_with(
            "tone_shift: the model could not write its variants (the model at http://127.0.0.1:"
        )),
        "{:?}",
        r.warnings
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("paraphrase was skipped")),
        "{:?}",
        r.warnings
    );
    drop(closed);
}

/// Wire-level variants reach the agent's endpoint as raw requests; an agent that answers one
/// of them with a 5xx fails that case with the reason, and the run goes on with the rest
/// (each case then checks the agent still answers its normal request).
#[tokio::test]
async fn wire_attacks_are_judged_on_survival_and_the_run_goes_on() {
    let methods = Arc::new(Mutex::new(vec![]));
    let log = methods.clone();
    let a = origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            let method = req.method().to_string();
            log.lock().unwrap().push(method.clone());
            let mut r = text(r#"{"result": "ok"}"#);
            if method == "DELETE" {
                *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            }
            r
        }
    })
    .await;
    let planned = Arc::new(Mutex::new(0));
    let ended = Arc::new(Mutex::new(vec![]));
    let (p, e) = (planned.clone(), ended.clone());
    let progress = flakestorm::run::Progress {
        planned: Arc::new(move |n| *p.lock().unwrap() += n),
        started: Arc::new(|_: &str, _: &str| {}),
        phase: Arc::new(|_| {}),
        case: Arc::new(
            move |c: &flakestorm::run::CaseResult, judged: &flakestorm::run::Judged| {
                let so_far = judged.so_far;
                e.lock().unwrap().push((c.scenario.clone(), so_far))
            },
        ),
    };
    let r = mutate_with(
        "golden_prompts: [\"What is the capital of France?\"]\ninvariants: [{type: output_not_empty}]\n\
         mutations: {count: 7, types: [request_method_attack]}\n",
        &a.http_url("/invoke"),
        Some(progress),
    )
    .await;
    assert_eq!(r.mutants.len(), 7, "{:#?}", r.mutants);
    // Each wire case is planned, ticks the progress with how it stands, and is a case of
    // the report with the answer to the normal request sent after it.
    use flakestorm::run::SoFar;
    assert_eq!(*planned.lock().unwrap(), 7);
    let ended = ended.lock().unwrap().clone();
    let count = |want: SoFar| {
        ended
            .iter()
            .filter(|(s, f)| s == "wire-level" && *f == want)
            .count()
    };
    assert_eq!(
        (count(SoFar::Passed), count(SoFar::Failed), ended.len()),
        (6, 1, 7)
    );
    assert_eq!(r.cases.len(), 7);
    let answered = r
        .cases
        .iter()
        .filter(|c| c.answer.as_deref() == Some("ok"))
        .count();
    assert_eq!(answered, 6, "{:#?}", r.cases);
    let fell = r.cases.iter().find(|c| c.answer.is_none()).unwrap();
    assert!(fell.prompt.contains("DELETE /invoke"), "{fell:?}");
    assert!(
        fell.error.as_deref().unwrap_or("").contains("500"),
        "{fell:?}"
    );
    let failed: Vec<&str> = r
        .mutants
        .iter()
        .filter(|m| !m.passed)
        .map(|m| m.variant.text.as_str())
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("DELETE /invoke"), "{failed:?}");
    let why = format!("{:?}", r.mutants.iter().find(|m| !m.passed).unwrap().checks);
    assert!(why.contains("500"), "{why}");
    let seen = methods.lock().unwrap().clone();
    for m in ["GET", "PUT", "PATCH", "OPTIONS", "HEAD", "DELETE"] {
        assert!(seen.iter().any(|s| s == m), "{m} never arrived: {seen:?}");
    }
    // Every attack is followed by the agent's normal request.
    assert!(
        seen.iter().filter(|s| *s == "POST").count() >= 6,
        "{seen:?}"
    );
    assert!((r.score - 100.0 * 6.0 / 7.0).abs() < 1e-9, "{}", r.score);
}

/// A wire attack flakestorm cannot deliver (the agent's TLS certificate is not trusted by
/// the driver) says nothing about the agent: not tested, never its failure.
#[tokio::test]
async fn an_attack_that_cannot_be_delivered_is_not_tested() {
    let seen = Arc::new(Mutex::new(vec![]));
    let a = origin::start(Some(H1), move |_req| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(());
            text(r#"{"result": "ok"}"#)
        }
    })
    .await;
    let r = mutate(
        "golden_prompts: [hi]\ninvariants: [{type: output_not_empty}]\nmutations: {count: 2, types: [http_header_injection]}\n",
        &a.https_url("/invoke"),
    )
    .await;
    assert_eq!(r.mutants.len(), 2);
    for m in &r.mutants {
        assert!(!m.judged && !m.passed, "{m:?}");
        assert!(
            matches!(&m.checks[0], flakestorm::checks::Verdict::NotTested(why) if why.contains("could not be delivered: TLS handshake")),
            "{:?}",
            m.checks
        );
    }
    assert_eq!(
        r.judgement.verdict,
        RunVerdict::NotTested,
        "{:?}",
        r.judgement
    );
}
