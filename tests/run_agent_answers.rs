//! The agent is judged on its own answers: an HTTP 5xx is its answer, never re-invoked;
//! no request is sent on a connection the agent may have closed; and traffic checks see
//! the agent's (its SDK's) own retries only.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::origin::{self, text};
use common::*;
use flakestorm::run::RunVerdict;
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Reads one HTTP/1.1 request (head and `content-length` body) from `s`; `None` at EOF.
async fn read_request(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                buf.drain(..end + 4 + len);
                return Some(body);
            }
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// An agent that answers 500 to prompts saying "fail" and keeps the connection open
/// (no `connection: close`), then closes it when the next request arrives on it, as a
/// server does when its keep-alive expires at that moment. Counts its connections.
async fn closing_agent() -> (SocketAddr, Arc<AtomicU32>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let conns = Arc::new(AtomicU32::new(0));
    let counted = conns.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut buf, mut failed) = (vec![], false);
                while let Some(body) = read_request(&mut s, &mut buf).await {
                    if failed {
                        return; // closed with the request unanswered
                    }
                    failed = body.contains("fail");
                    let (status, json) = match failed {
                        true => ("500 Internal Server Error", r#"{"detail": "boom"}"#.into()),
                        false => ("200 OK", format!(r#"{{"result": "ok: {body}"}}"#)),
                    };
                    let resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}",
                        json.len()
                    );
                    if s.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, conns)
}

/// 50 healthy prompts interleaved with 50 that the agent answers 500 to: no healthy prompt
/// fails, at `advanced.retries: 0` and at the default (2), every case is one attempt on a
/// connection of its own.
#[tokio::test]
async fn healthy_prompts_never_fail_after_the_agent_answered_500() {
    let prompts: Vec<String> = (0..50)
        .flat_map(|i| [format!("healthy {i}"), format!("fail {i}")])
        .collect();
    let yaml = format!(
        // The agent calls nothing, so its 100 cases need not wait for calls after answering.
        "golden_prompts: {}\nadvanced: {{settle_ms: 0}}\ncontract:\n  name: c\n  invariants:\n    - {{id: answers, type: completes}}\n",
        serde_json::to_string(&prompts).unwrap()
    );
    for retries in [0, 2] {
        let (addr, conns) = closing_agent().await;
        let p = start_proxy(&yaml).await;
        let r = contract_run(&p, &format!("http://{addr}/invoke"), retries).await;
        let spurious: Vec<_> = r
            .cases
            .iter()
            .filter(|c| c.prompt.starts_with("healthy") && c.answer.is_none())
            .map(|c| (&c.prompt, &c.error))
            .collect();
        assert!(spurious.is_empty(), "retries {retries}: {spurious:?}");
        for c in &r.cases {
            assert_eq!((c.attempts, c.earlier_attempts.len()), (1, 0), "{c:?}");
            if c.prompt.starts_with("fail") {
                let e = c.error.as_deref().unwrap_or_default();
                assert!(e.starts_with("agent answered HTTP 500"), "{e}");
            }
        }
        assert_eq!(
            conns.load(Ordering::SeqCst),
            100,
            "a fresh connection per case"
        );
        assert_eq!(
            r.judgement.verdict,
            RunVerdict::Fail,
            "half the cases failed"
        );
        p.stop().await;
    }
}

/// An agent whose LLM client retries a 429 after `retry-after`, twice, then gives up and
/// answers 500. The traffic checks judge those three calls, its own: flakestorm does not
/// invoke it again (which would add calls and put a short gap before a retry).
#[tokio::test]
async fn traffic_checks_judge_the_agents_own_retries_only() {
    let llm = origin::fixed(None, r#"{"choices": [{"message": {"content": "hi"}}]}"#).await;
    let yaml = r#"
golden_prompts: ["What was ACME's Q3 revenue?"]
contract:
  name: c
  invariants:
    - {id: waits-on-429, type: honors_retry_after}
    - {id: no-retry-storm, type: max_llm_calls, max: 3}
    - {id: answers, type: completes}
  chaos_matrix:
    - name: llm-429
      llm_faults: [{id: llm-429, mode: rate_limit, retry_after_s: 0.2}]
"#;
    let p = start_proxy(yaml).await;
    let (client, url) = (client_via(&p, H1), llm.http_url("/v1/chat/completions"));
    let agent = origin::start(None, move |req: http::Request<hyper::body::Incoming>| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let _ = req.into_body().collect().await;
            for _ in 0..3 {
                let r = client.post(&url).body("{}").send().await.unwrap();
                if r.status() != 429 {
                    return text(r#"{"result": "answered"}"#);
                }
                let wait: f64 = r.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                tokio::time::sleep(std::time::Duration::from_secs_f64(wait)).await;
            }
            let mut r = text(r#"{"detail": "rate limited"}"#);
            *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
    })
    .await;
    let r = contract_run(&p, &agent.http_url("/invoke"), 2).await;
    let case = &r.cases[0];
    assert_eq!(case.attempts, 1, "the 500 was its answer");
    assert_eq!(
        case.traffic.as_ref().unwrap().len(),
        3,
        "its own three calls"
    );
    assert!(cell(&r, "waits-on-429", "llm-429").passed(), "{r:#?}");
    assert_eq!(
        cell(&r, "no-retry-storm", "llm-429"),
        &flakestorm::checks::Verdict::Pass("3 LLM calls ≤ 3".into())
    );
    assert!(!cell(&r, "answers", "llm-429").passed());
    assert_eq!(llm.log.len(), 0, "every call met the fault");
    p.stop().await;
}
