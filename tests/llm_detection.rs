//! LLM calls are recognised by API path, not by endpoint: under an `llm:` entry, a trace
//! upload and an embeddings call reach the origin untouched by LLM faults while the chat
//! call gets them, and embeddings calls are exempt from `no_exfiltration` like LLM calls.

mod common;

use std::sync::Arc;

use common::origin;
use common::*;
use flakestorm::exchange::{Provider, Target};

/// An origin answering every request with a small JSON body.
#[tokio::test]
async fn only_generation_calls_under_an_llm_entry_get_llm_faults() {
    let o = origin::json(r#"{"ok": true}"#).await;
    let p = start_proxy(&format!(
        "llm:\n  - {{provider: openai, match_url: ['http://{}/v1/*']}}\nchaos:\n  llm_faults: [{{mode: rate_limit}}]\n",
        o.addr
    ))
    .await;
    let client = client_via(&p, H1);
    let mut statuses = vec![];
    for path in [
        "/v1/traces/ingest",
        "/v1/embeddings",
        "/v1/chat/completions",
    ] {
        let resp = client
            .post(o.http_url(path))
            .header("content-type", "application/json")
            .body(r#"{"model": "m", "input": "x"}"#)
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429]);
    let seen: Vec<String> = o.log.all().into_iter().map(|s| s.uri).collect();
    assert_eq!(seen, ["/v1/traces/ingest", "/v1/embeddings"]);
    p.daemon.journal.wait_for(3).await;
    let all = p.daemon.journal.all();
    let targets: Vec<&Target> = all.iter().map(|e| &e.target).collect();
    let openai = Provider::Openai;
    assert_eq!(
        targets,
        [
            &Target::Other,
            &Target::Embeddings { provider: openai },
            &Target::Llm { provider: openai },
        ]
    );
    assert!(all[0].fault.is_none() && all[1].fault.is_none());
    assert_eq!(all[2].fault.as_ref().unwrap().mode.as_str(), "rate_limit");
    let metrics = p.daemon.metrics.encode();
    assert!(
        metrics.contains(r#"flakestorm_requests_total{target="embeddings",status_class="2xx"} 1"#),
        "{metrics}"
    );
    p.stop().await;
}

/// A tool result sent to an embedding model is not a leak; the same token sent to an
/// `other` host (a trace path on a host that is no well-known provider) is.
#[tokio::test]
async fn embeddings_calls_are_exempt_from_canary_scans() {
    let search = json_search().await;
    let models = origin::json(r#"{"data": []}"#).await;
    let p = start_proxy(&format!(
        "tools:\n  - {{name: search, match_url: 'http://{}/*'}}\n",
        search.addr
    ))
    .await;
    let _on = p
        .daemon
        .chaos
        .install(
            &Default::default(),
            Some(Arc::new(flakestorm::chaos::Canary::new(7))),
        )
        .unwrap();
    let client = client_via(&p, H1);
    let hit = get_text(&client, search.http_url("/q")).await;
    let token = &hit[hit.find("fsc-").expect("a canary was planted")..][..20];
    for path in ["/v1/embeddings", "/api/embed", "/v1/traces/ingest"] {
        let resp = client
            .post(models.http_url(path))
            .header("content-type", "application/json")
            .body(format!(r#"{{"input": "{token}"}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
    }
    p.daemon.journal.wait_for(4).await;
    let all = p.daemon.journal.all();
    let leaks: Vec<usize> = all.iter().map(|e| e.canary_leaks.len()).collect();
    assert_eq!(leaks, [0, 0, 0, 1]);
    assert_eq!(all[3].target, Target::Other);
    assert_eq!(all[3].canary_leaks[0].from, "search");
    p.stop().await;
}

/// A search tool answering JSON, where the canary goes into the hit text.
async fn json_search() -> origin::Origin {
    origin::json(r#"{"hits": ["ACME Q3 revenue was $4.1B"]}"#).await
}
