//! The wire-level mutations against an in-process agent that logs the raw bytes it
//! receives: each attack arrives exactly as built, and the survival verdict follows the
//! agent's reply (an answer or a refusal passes; a 5xx, a hang, a non-HTTP reply fails; a
//! close passes only for protocol-level attacks; a burst must agree).

mod common;

use std::time::Duration;

use common::raw_agent::{self, Canned, RawAgent, status};
use flakestorm::agent::{RawOptions, send_raw, send_raw_with};
use flakestorm::config::{AgentSpec, AgentTarget};
use flakestorm::mutate::Draw;
use flakestorm::mutate::kind::MutationType as M;
use flakestorm::mutate::wire::{self, Pattern, WireAttack};

const PROMPT: &str = "What is the capital of France?";
const OK: &str = r#"{"result":"ok"}"#;

fn target(url: String, timeout_ms: u64) -> AgentTarget {
    let spec: AgentSpec = serde_json::from_value(serde_json::json!({
        "endpoint": url, "timeout": timeout_ms,
    }))
    .unwrap();
    spec.compile().unwrap()
}

fn build(kind: M, index: u32, target: &AgentTarget) -> WireAttack {
    let mut d = Draw::new(42, kind, PROMPT, index);
    wire::generate(kind, PROMPT, index, &mut d, target).unwrap()
}

/// Sends variant `index` of `kind` to `agent`, checks every request arrived byte for byte,
/// and returns the attack and the verdict.
async fn attack_on(
    agent: &RawAgent,
    kind: M,
    index: u32,
    timeout_ms: u64,
) -> (WireAttack, Result<(), String>) {
    let t = target(agent.url("/invoke"), timeout_ms);
    let a = build(kind, index, &t);
    agent.expect(a.requests[0].len());
    let replies = common::within("the attack", wire::send(&a, &t)).await;
    let got = agent.received();
    assert_eq!(got.len(), a.requests.len(), "{kind} #{index}: connections");
    for (i, sent) in a.requests.iter().enumerate() {
        // A burst's requests are identical; connections may be accepted in any order.
        assert!(
            got[i] == *sent,
            "{kind} #{index} ({}): request {i} did not arrive as built",
            a.label
        );
    }
    let verdict = wire::judge(&a, &replies).map_err(|e| e.to_string());
    (a, verdict)
}

/// Every family of `kind` arrives exactly as built and, answered 200, survives.
async fn every_family_arrives_and_survives(kind: M, families: u32) {
    for index in 0..families {
        let agent = raw_agent::start(None, |_| status(200, OK)).await;
        let (a, verdict) = attack_on(&agent, kind, index, 5_000).await;
        assert_eq!(verdict, Ok(()), "{kind} #{index} ({})", a.label);
    }
}

#[tokio::test]
async fn http_header_injection_arrives_as_built() {
    every_family_arrives_and_survives(M::HttpHeaderInjection, 5).await;
}

#[tokio::test]
async fn payload_size_attack_arrives_as_built() {
    every_family_arrives_and_survives(M::PayloadSizeAttack, 2).await;
}

#[tokio::test]
async fn content_type_confusion_arrives_as_built() {
    every_family_arrives_and_survives(M::ContentTypeConfusion, 5).await;
}

#[tokio::test]
async fn query_parameter_poisoning_arrives_as_built() {
    every_family_arrives_and_survives(M::QueryParameterPoisoning, 6).await;
}

#[tokio::test]
async fn request_method_attack_arrives_as_built() {
    // HEAD included: its 200 carries a Content-Length but no body, and is read as such.
    every_family_arrives_and_survives(M::RequestMethodAttack, 7).await;
}

#[tokio::test]
async fn protocol_level_attack_arrives_as_built() {
    every_family_arrives_and_survives(M::ProtocolLevelAttack, 7).await;
}

#[tokio::test]
async fn resource_exhaustion_arrives_as_built() {
    every_family_arrives_and_survives(M::ResourceExhaustion, 3).await;
}

#[tokio::test]
async fn concurrent_request_pattern_arrives_as_built_and_agrees() {
    let agent = raw_agent::start(None, |_| status(200, r#"{"result":"Paris","n":1}"#)).await;
    let (a, verdict) = attack_on(&agent, M::ConcurrentRequestPattern, 0, 5_000).await;
    assert!(matches!(a.pattern, Pattern::Burst { .. }) && a.requests.len() >= 10);
    assert_eq!(verdict, Ok(()));
}

#[tokio::test]
async fn a_burst_whose_answers_disagree_fails() {
    let agent = raw_agent::start(None, |n| {
        status(
            200,
            &format!(
                r#"{{"result":"{}"}}"#,
                if n == 0 { "Paris" } else { "Lyon" }
            ),
        )
    })
    .await;
    let (_, verdict) = attack_on(&agent, M::ConcurrentRequestPattern, 0, 5_000).await;
    let e = verdict.unwrap_err();
    assert!(e.starts_with("burst answers disagree at `result`"), "{e}");
    let agent = raw_agent::start(None, |n| {
        if n == 2 {
            status(503, "{}")
        } else {
            status(200, OK)
        }
    })
    .await;
    let (_, verdict) = attack_on(&agent, M::ConcurrentRequestPattern, 0, 5_000).await;
    assert!(verdict.unwrap_err().contains("503"));
}

/// Paused time: the pauses between writes are virtual, the bytes and their order real.
#[tokio::test(start_paused = true)]
async fn timeout_manipulation_writes_slowly_and_arrives_as_built() {
    let agent = raw_agent::start(None, |_| status(200, OK)).await;
    let t = target(agent.url("/invoke"), 4_000);
    let a = build(M::TimeoutManipulation, 0, &t);
    let Pattern::Slow { chunk, every } = a.pattern else {
        panic!("{:?}", a.pattern)
    };
    agent.expect(a.requests[0].len());
    let replies = wire::send(&a, &t).await;
    assert_eq!(agent.received(), a.requests);
    let writes = a.requests[0].len().div_ceil(chunk) as u32;
    assert!(
        writes > 1 && replies[0].elapsed >= every * (writes - 1),
        "{replies:?}"
    );
    assert_eq!(wire::judge(&a, &replies), Ok(()));
}

#[tokio::test]
async fn a_refusal_passes_and_a_5xx_fails() {
    let agent = raw_agent::start(None, |_| status(400, r#"{"error":"bad header"}"#)).await;
    assert_eq!(
        attack_on(&agent, M::HttpHeaderInjection, 0, 5_000).await.1,
        Ok(())
    );
    let agent = raw_agent::start(None, |_| status(500, "{}")).await;
    let e = attack_on(&agent, M::HttpHeaderInjection, 0, 5_000)
        .await
        .1
        .unwrap_err();
    assert!(e.contains("the agent failed") && e.contains("500"), "{e}");
    let agent =
        raw_agent::start(None, |_| Canned::Reply(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec())).await;
    let e = attack_on(&agent, M::ContentTypeConfusion, 0, 5_000)
        .await
        .1
        .unwrap_err();
    assert!(e.starts_with("the reply is not HTTP"), "{e}");
}

#[tokio::test]
async fn a_close_passes_only_for_protocol_level_attacks() {
    let agent = raw_agent::start(None, |_| Canned::Close).await;
    assert_eq!(
        attack_on(&agent, M::ProtocolLevelAttack, 2, 5_000).await.1,
        Ok(())
    );
    let agent = raw_agent::start(None, |_| Canned::Close).await;
    let e = attack_on(&agent, M::RequestMethodAttack, 0, 5_000)
        .await
        .1
        .unwrap_err();
    assert_eq!(e, "connection closed before a response");
}

/// The message cut short ends the input, so the agent sees it end (it reads to the end
/// here) and can answer rather than wait on the missing chunk.
#[tokio::test]
async fn a_missing_final_chunk_is_followed_by_the_end_of_input() {
    let agent = raw_agent::start(None, |_| status(400, "{}")).await;
    let t = target(agent.url("/invoke"), 5_000);
    let a = build(M::ProtocolLevelAttack, 5, &t);
    assert_eq!(a.pattern, Pattern::HalfClose);
    let replies = common::within("half-closed attack", wire::send(&a, &t)).await;
    assert_eq!(agent.received(), a.requests);
    assert_eq!(replies[0].status, Some(400));
    assert_eq!(wire::judge(&a, &replies), Ok(()));
}

/// An agent that refuses a 10 MiB body after its head and reads no more is heard: the
/// response is read while the request is still being written.
#[tokio::test]
async fn an_early_refusal_is_heard_while_the_body_is_still_being_written() {
    let refuse = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n".to_vec();
    let agent = raw_agent::start(None, move |_| Canned::ReplyAndStall(refuse.clone())).await;
    let t = target(agent.url("/invoke"), 5_000);
    let a = build(M::PayloadSizeAttack, 1, &t);
    agent.expect(4096);
    let replies = common::within("early refusal", wire::send(&a, &t)).await;
    assert_eq!(
        (replies[0].status, replies[0].error.as_deref()),
        (Some(413), None)
    );
    assert!(agent.received()[0].len() < a.requests[0].len());
    assert_eq!(wire::judge(&a, &replies), Ok(()));
}

/// The agent's own deadline under test, in paused time.
#[tokio::test(start_paused = true)]
async fn a_hang_fails_with_timed_out() {
    let agent = raw_agent::start(None, |_| Canned::Hang).await;
    let (a, verdict) = attack_on(&agent, M::ContentTypeConfusion, 1, 300).await;
    assert_eq!(
        verdict,
        Err("timed out after 300 ms".to_string()),
        "{}",
        a.label
    );
}

#[tokio::test]
async fn send_raw_speaks_tls_with_extra_roots() {
    let agent = raw_agent::start(Some(common::origin::server_tls(common::H1)), |_| {
        status(200, OK)
    })
    .await;
    let t = target(agent.https_url("/invoke"), 5_000);
    let a = build(M::HttpHeaderInjection, 0, &t);
    agent.expect(a.requests[0].len());
    let roots: Vec<_> = {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        CertificateDer::pem_file_iter(common::fixture("test-ca.pem"))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let opts = RawOptions {
        extra_roots: roots.clone(),
        ..RawOptions::default()
    };
    let reply = common::within("tls", send_raw_with(&t, &a.requests[0], &opts)).await;
    assert_eq!(
        (reply.status, &reply.body[..], reply.error.as_deref()),
        (Some(200), OK.as_bytes(), None)
    );
    assert_eq!(agent.received(), a.requests);
    assert_eq!(
        wire::judge(&a, &wire::send_with_roots(&a, &t, &roots).await),
        Ok(())
    );
    // The public and OS roots alone do not trust the test CA.
    let reply = common::within("tls", send_raw(&t, &a.requests[0], None)).await;
    let e = reply.error.unwrap();
    assert!(
        reply.status.is_none() && e.starts_with("TLS handshake with localhost"),
        "{e}"
    );
}

#[tokio::test]
async fn send_raw_reports_an_unreachable_agent() {
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let t = target(format!("http://127.0.0.1:{port}/invoke"), 5_000);
    let reply = send_raw(&t, b"GET / HTTP/1.1\r\n\r\n", Some((0, Duration::ZERO))).await;
    let e = reply.error.unwrap();
    assert!(
        reply.status.is_none() && e.starts_with(&format!("connecting to 127.0.0.1:{port}")),
        "{e}"
    );
}
