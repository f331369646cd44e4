//! Issue #9: no chaos rule can crash the daemon. A rule in range whose rewrite would go
//! over `proxy.max_rewrite_bytes` fails only its own exchange, with a clear error in the
//! journal, and the daemon serves the next request as usual.

mod common;

use common::origin;
use common::*;
use flakestorm::exchange::{BodyEnd, Outcome};
use serde_json::{Value, json};

fn chat() -> String {
    json!({"model": "m", "messages": [{"role": "user", "content": "What is the capital of France?"}]})
        .to_string()
}

#[tokio::test]
async fn an_attack_over_the_cap_fails_its_request_and_the_next_one_is_served() {
    let o = origin::echo().await;
    // 10 000 tokens of filler (~67 KB) is in range, but over a 4 KiB cap.
    let p = start_proxy(
        "proxy:\n  max_rewrite_bytes: 4096\nchaos:\n  context_attacks:\n    - {type: overflow, inject_tokens: 10000, match_url: '*big*'}\n",
    )
    .await;
    let client = client_via(&p, H1);
    let big = client
        .post(o.http_url("/v1/chat/completions?big=1"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 500);
    assert_eq!(big.headers()["x-flakestorm-error"], "rewrite_too_large");
    let text = big.text().await.unwrap();
    assert!(
        text.contains("over proxy.max_rewrite_bytes (4096)"),
        "{text}"
    );
    assert_eq!(o.log.len(), 0, "nothing was sent upstream");

    let next = client
        .post(o.http_url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    assert_eq!(next.status(), 200);
    let seen: Value = serde_json::from_slice(&next.bytes().await.unwrap()).unwrap();
    assert_eq!(
        seen["messages"][0]["content"],
        "What is the capital of France?"
    );

    p.daemon.journal.wait_for(2).await;
    let all = p.daemon.journal.all();
    match &all[0].outcome {
        Outcome::Error { error, status } => {
            assert_eq!(
                (error.kind.name(), *status),
                ("rewrite_too_large", Some(500))
            );
        }
        other => panic!("{other:?}"),
    }
    let attack = &all[0].attacks[0];
    assert!(!attack.applied);
    assert!(
        attack
            .note
            .as_deref()
            .unwrap()
            .contains("max_rewrite_bytes")
    );
    assert!(matches!(all[1].outcome, Outcome::Response { .. }));
}

#[tokio::test]
async fn a_response_rewrite_over_the_cap_breaks_its_body_and_the_next_one_is_served() {
    let o = origin::json(
        r#"{"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}]}"#,
    )
    .await;
    // factor 100 is in range: a 7 KB preamble, over a 4 KiB cap.
    let p = start_proxy(
        "proxy:\n  max_rewrite_bytes: 4096\nchaos:\n  llm_faults:\n    - {mode: response_drift, drift_type: verbosity_shift, direction: expand, factor: 100, match_url: '*big*'}\n",
    )
    .await;
    let client = client_via(&p, H1);
    let big = client
        .post(o.http_url("/v1/chat/completions?big=1"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    // The head was already sent: the body is broken off, as when an upstream fails mid-body.
    assert_eq!(big.status(), 200);
    assert!(big.bytes().await.is_err(), "the body must not complete");

    let next = client
        .post(o.http_url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&next.bytes().await.unwrap()).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "Paris.");

    p.daemon.journal.wait_for(2).await;
    let all = p.daemon.journal.all();
    let first = all.iter().find(|e| e.request.url.contains("big")).unwrap();
    match &first.outcome {
        Outcome::Response {
            body: BodyEnd::ProxyAborted { message },
            ..
        } => assert!(
            message.contains("over proxy.max_rewrite_bytes (4096)"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    let fault = first.fault.as_ref().unwrap();
    assert!(!fault.applied && fault.note.as_deref().unwrap().contains("max_rewrite_bytes"));
}

/// The cap is on what a rewrite produces: an attack that was skipped (no tool results to
/// inject into) leaves a request over the cap as the agent sent it, byte for byte.
#[tokio::test]
async fn a_request_no_attack_changed_is_forwarded_whatever_its_size() {
    let o = origin::echo().await;
    let p = start_proxy(
        "proxy:\n  max_rewrite_bytes: 1024\nchaos:\n  context_attacks:\n    - {type: indirect_injection, payload: PWNED}\n",
    )
    .await;
    let long = "x".repeat(4000);
    let body = json!({"model": "m", "messages": [{"role": "user", "content": long}]}).to_string();
    let resp = client_via(&p, H1)
        .post(o.http_url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), body, "sent unchanged");
    p.daemon.journal.wait_for(1).await;
    let attacks = p.daemon.journal.all()[0].attacks.clone();
    assert!(attacks.len() == 1 && !attacks[0].applied, "{attacks:?}");
    p.stop().await;
}
